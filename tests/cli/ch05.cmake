# Chapter 05 (05_multi_head): bad command lines exit with 2 and one line on stderr.
attn_cli_test(ch05.heads_not_dividing EXIT 2 MATCH "--heads 5 does not divide --channels 64"
              COMMAND 05_multi_head --heads 5)
attn_cli_test(ch05.heads_not_dividing_channels EXIT 2 MATCH "--heads 4 does not divide --channels 30"
              COMMAND 05_multi_head --channels 30)
attn_cli_test(ch05.heads_zero EXIT 2 MATCH "--heads must be at least 1, got 0"
              COMMAND 05_multi_head --heads 0)
attn_cli_test(ch05.heads_negative EXIT 2 MATCH "--heads must be at least 1, got -4"
              COMMAND 05_multi_head --heads -4)
attn_cli_test(ch05.heads_too_many EXIT 2 MATCH "--heads must be at most 16, got 32"
              COMMAND 05_multi_head --heads 32)
attn_cli_test(ch05.channels_zero EXIT 2 MATCH "--channels must be at least 1, got 0"
              COMMAND 05_multi_head --channels 0)
attn_cli_test(ch05.channels_too_large EXIT 2 MATCH "--channels must be at most 512, got 1024"
              COMMAND 05_multi_head --channels 1024)
attn_cli_test(ch05.batch_negative EXIT 2 MATCH "--batch must be at least 1, got -1"
              COMMAND 05_multi_head --batch -1)
attn_cli_test(ch05.batch_too_large EXIT 2 MATCH "--batch must be at most 16, got 17"
              COMMAND 05_multi_head --batch 17)
attn_cli_test(ch05.time_steps_zero EXIT 2 MATCH "--time-steps must be at least 1, got 0"
              COMMAND 05_multi_head --time-steps 0)
attn_cli_test(ch05.time_steps_too_large EXIT 2 MATCH "--time-steps must be at most 32, got 33"
              COMMAND 05_multi_head --time-steps 33)
attn_cli_test(ch05.time_steps_not_a_number EXIT 2 MATCH "--time-steps"
              COMMAND 05_multi_head --time-steps ten)
