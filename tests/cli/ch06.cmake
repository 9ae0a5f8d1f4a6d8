# Chapter 06 (06_transformer_block): bad command lines exit with 2 and one line on stderr.
attn_cli_test(ch06.batch_zero EXIT 2 MATCH "--batch must be at least 1, got 0"
              COMMAND 06_transformer_block --batch 0)
attn_cli_test(ch06.time_steps_zero EXIT 2 MATCH "--time-steps must be at least 1, got 0"
              COMMAND 06_transformer_block --time-steps 0)
attn_cli_test(ch06.channels_negative EXIT 2 MATCH "--channels must be at least 1, got -64"
              COMMAND 06_transformer_block --channels -64)
attn_cli_test(ch06.heads_zero EXIT 2 MATCH "--heads must be at least 1, got 0"
              COMMAND 06_transformer_block --heads 0)
attn_cli_test(ch06.ffn_mult_zero EXIT 2 MATCH "--ffn-mult must be at least 1, got 0"
              COMMAND 06_transformer_block --ffn-mult 0)
attn_cli_test(ch06.passes_zero EXIT 2 MATCH "--passes must be at least 1, got 0"
              COMMAND 06_transformer_block --passes 0)
attn_cli_test(ch06.heads_not_dividing EXIT 2
              MATCH "--heads must divide --channels, got 5 heads for 64 channels"
              COMMAND 06_transformer_block --heads 5)
attn_cli_test(ch06.heads_more_than_channels EXIT 2
              MATCH "--heads must divide --channels, got 16 heads for 8 channels"
              COMMAND 06_transformer_block --channels 8 --heads 16)
attn_cli_test(ch06.activation_unknown EXIT 2 MATCH "^06_transformer_block: error: --activation: .*swish"
              COMMAND 06_transformer_block --activation swish)
attn_cli_test(ch06.activation_empty EXIT 2 MATCH "^06_transformer_block: error: --activation"
              COMMAND 06_transformer_block --activation "")
attn_cli_test(ch06.norm_unknown EXIT 2 MATCH "^06_transformer_block: error: --norm: .*middle"
              COMMAND 06_transformer_block --norm middle)
attn_cli_test(ch06.time_steps_too_large EXIT 2 MATCH "--time-steps must be at most 64, got 65"
              COMMAND 06_transformer_block --time-steps 65)
attn_cli_test(ch06.channels_too_large EXIT 2 MATCH "--channels must be at most 128, got 256"
              COMMAND 06_transformer_block --channels 256)
attn_cli_test(ch06.batch_too_large EXIT 2 MATCH "--batch must be at most 4, got 5"
              COMMAND 06_transformer_block --batch 5)
attn_cli_test(ch06.ffn_mult_too_large EXIT 2 MATCH "--ffn-mult must be at most 8, got 9"
              COMMAND 06_transformer_block --ffn-mult 9)
attn_cli_test(ch06.passes_too_large EXIT 2 MATCH "--passes must be at most 50, got 51"
              COMMAND 06_transformer_block --passes 51)
attn_cli_test(ch06.channels_not_a_number EXIT 2 MATCH "--channels expects an integer, got 'wide'"
              COMMAND 06_transformer_block --channels wide)
