# Chapter 03 (03_masked_softmax): bad command lines exit with 2 and one line on stderr.
attn_cli_test(ch03.time_steps_zero EXIT 2 MATCH "--time-steps must be at least 1, got 0"
              COMMAND 03_masked_softmax --time-steps 0)
attn_cli_test(ch03.time_steps_negative EXIT 2 MATCH "--time-steps must be at least 1, got -2"
              COMMAND 03_masked_softmax --time-steps -2)
attn_cli_test(ch03.time_steps_too_large EXIT 2 MATCH "--time-steps must be at most 16, got 17"
              COMMAND 03_masked_softmax --time-steps 17)
attn_cli_test(ch03.scale_zero EXIT 2 MATCH "--scale must be > 0, got 0"
              COMMAND 03_masked_softmax --scale 0)
attn_cli_test(ch03.scale_negative EXIT 2 MATCH "--scale must be > 0, got -1"
              COMMAND 03_masked_softmax --scale -1)
attn_cli_test(ch03.scale_nan EXIT 2 MATCH "--scale must be a finite number, got nan"
              COMMAND 03_masked_softmax --scale nan)
attn_cli_test(ch03.unknown_flag EXIT 2 MATCH "unknown option '--frobnicate'"
              COMMAND 03_masked_softmax --frobnicate)
attn_cli_test(ch03.scale_too_large EXIT 2 MATCH "--scale must be at most 1000, got 5000"
              COMMAND 03_masked_softmax --scale 5000)
