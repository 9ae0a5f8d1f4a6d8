# Chapter 03 (03_masked_softmax): bad command lines exit with 2 and one line on stderr.
attn_cli_test(ch03.block_size_zero EXIT 2 MATCH "--block-size must be at least 1, got 0"
              COMMAND 03_masked_softmax --block-size 0)
attn_cli_test(ch03.block_size_negative EXIT 2 MATCH "--block-size must be at least 1, got -2"
              COMMAND 03_masked_softmax --block-size -2)
attn_cli_test(ch03.block_size_too_large EXIT 2 MATCH "--block-size must be at most 16, got 17"
              COMMAND 03_masked_softmax --block-size 17)
# The old spelling --time-steps stays as a hidden alias of --block-size (messages name the new flag).
attn_cli_test(ch03.old_flag_name_still_works EXIT 2 MATCH "--block-size must be at most 16, got 17"
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
