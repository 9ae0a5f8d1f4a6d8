# Chapter 02 (02_averaging): bad command lines exit with 2 and one line on stderr.
attn_cli_test(ch02.time_steps_zero EXIT 2 MATCH "--time-steps must be at least 1, got 0"
              COMMAND 02_averaging --time-steps 0)
attn_cli_test(ch02.time_steps_negative EXIT 2 MATCH "--time-steps must be at least 1, got -4"
              COMMAND 02_averaging --time-steps -4)
attn_cli_test(ch02.channels_zero EXIT 2 MATCH "--channels must be at least 1, got 0"
              COMMAND 02_averaging --channels 0)
attn_cli_test(ch02.channels_not_a_number EXIT 2 MATCH "--channels.*x"
              COMMAND 02_averaging --channels x)
attn_cli_test(ch02.max_t_below_time_steps EXIT 2
              MATCH "--max-t \\(4\\) must be at least --time-steps \\(8\\)"
              COMMAND 02_averaging --max-t 4 --time-steps 8)
attn_cli_test(ch02.max_t_too_large EXIT 2 MATCH "--max-t must be at most 2048, got 5000"
              COMMAND 02_averaging --max-t 5000)
attn_cli_test(ch02.unknown_flag EXIT 2 MATCH "--frobnicate"
              COMMAND 02_averaging --frobnicate)
