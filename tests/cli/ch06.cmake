# Chapter 06 (06_transformer_block): bad command lines exit with 2 and one line on stderr.
attn_cli_test(ch06.batch_size_zero EXIT 2 MATCH "--batch-size must be at least 1, got 0"
              COMMAND 06_transformer_block --batch-size 0)
attn_cli_test(ch06.block_size_zero EXIT 2 MATCH "--block-size must be at least 1, got 0"
              COMMAND 06_transformer_block --block-size 0)
attn_cli_test(ch06.n_embd_negative EXIT 2 MATCH "--n-embd must be at least 1, got -64"
              COMMAND 06_transformer_block --n-embd -64)
attn_cli_test(ch06.n_heads_zero EXIT 2 MATCH "--n-heads must be at least 1, got 0"
              COMMAND 06_transformer_block --n-heads 0)
attn_cli_test(ch06.ffn_mult_zero EXIT 2 MATCH "--ffn-mult must be at least 1, got 0"
              COMMAND 06_transformer_block --ffn-mult 0)
attn_cli_test(ch06.passes_zero EXIT 2 MATCH "--passes must be at least 1, got 0"
              COMMAND 06_transformer_block --passes 0)
attn_cli_test(ch06.n_heads_not_dividing EXIT 2
              MATCH "--n-heads must divide --n-embd, got 5 heads for 64 channels"
              COMMAND 06_transformer_block --n-heads 5)
attn_cli_test(ch06.heads_more_than_channels EXIT 2
              MATCH "--n-heads must divide --n-embd, got 16 heads for 8 channels"
              COMMAND 06_transformer_block --n-embd 8 --n-heads 16)
attn_cli_test(ch06.activation_unknown EXIT 2 MATCH "^06_transformer_block: error: --activation: .*swish"
              COMMAND 06_transformer_block --activation swish)
attn_cli_test(ch06.activation_empty EXIT 2 MATCH "^06_transformer_block: error: --activation"
              COMMAND 06_transformer_block --activation "")
attn_cli_test(ch06.norm_unknown EXIT 2 MATCH "^06_transformer_block: error: --norm: .*middle"
              COMMAND 06_transformer_block --norm middle)
attn_cli_test(ch06.block_size_too_large EXIT 2 MATCH "--block-size must be at most 64, got 65"
              COMMAND 06_transformer_block --block-size 65)
attn_cli_test(ch06.n_embd_too_large EXIT 2 MATCH "--n-embd must be at most 128, got 256"
              COMMAND 06_transformer_block --n-embd 256)
attn_cli_test(ch06.batch_size_too_large EXIT 2 MATCH "--batch-size must be at most 4, got 5"
              COMMAND 06_transformer_block --batch-size 5)
attn_cli_test(ch06.ffn_mult_too_large EXIT 2 MATCH "--ffn-mult must be at most 8, got 9"
              COMMAND 06_transformer_block --ffn-mult 9)
attn_cli_test(ch06.passes_too_large EXIT 2 MATCH "--passes must be at most 50, got 51"
              COMMAND 06_transformer_block --passes 51)
# An old spelling (--channels) is a hidden alias of --n-embd: accepted, and the message names the
# flag --help shows.
attn_cli_test(ch06.old_flag_channels EXIT 2 MATCH "--n-embd expects an integer, got 'wide'"
              COMMAND 06_transformer_block --channels wide)
