# Chapter 05 (05_multi_head): bad command lines exit with 2 and one line on stderr.
attn_cli_test(ch05.n_heads_not_dividing EXIT 2 MATCH "--n-heads 5 does not divide --n-embd 64"
              COMMAND 05_multi_head --n-heads 5)
attn_cli_test(ch05.n_heads_not_dividing_n_embd EXIT 2 MATCH "--n-heads 4 does not divide --n-embd 30"
              COMMAND 05_multi_head --n-embd 30)
attn_cli_test(ch05.n_heads_zero EXIT 2 MATCH "--n-heads must be at least 1, got 0"
              COMMAND 05_multi_head --n-heads 0)
attn_cli_test(ch05.n_heads_negative EXIT 2 MATCH "--n-heads must be at least 1, got -4"
              COMMAND 05_multi_head --n-heads -4)
attn_cli_test(ch05.n_heads_too_many EXIT 2 MATCH "--n-heads must be at most 16, got 32"
              COMMAND 05_multi_head --n-heads 32)
attn_cli_test(ch05.n_embd_zero EXIT 2 MATCH "--n-embd must be at least 1, got 0"
              COMMAND 05_multi_head --n-embd 0)
attn_cli_test(ch05.n_embd_too_large EXIT 2 MATCH "--n-embd must be at most 512, got 1024"
              COMMAND 05_multi_head --n-embd 1024)
attn_cli_test(ch05.batch_size_negative EXIT 2 MATCH "--batch-size must be at least 1, got -1"
              COMMAND 05_multi_head --batch-size -1)
attn_cli_test(ch05.batch_size_too_large EXIT 2 MATCH "--batch-size must be at most 16, got 17"
              COMMAND 05_multi_head --batch-size 17)
attn_cli_test(ch05.block_size_zero EXIT 2 MATCH "--block-size must be at least 1, got 0"
              COMMAND 05_multi_head --block-size 0)
attn_cli_test(ch05.block_size_too_large EXIT 2 MATCH "--block-size must be at most 32, got 33"
              COMMAND 05_multi_head --block-size 33)
attn_cli_test(ch05.block_size_not_a_number EXIT 2 MATCH "--block-size"
              COMMAND 05_multi_head --block-size ten)
# The old spelling --heads stays as a hidden alias of --n-heads (messages name the new flag).
attn_cli_test(ch05.old_flag_name_still_works EXIT 2 MATCH "--n-heads must be at most 16, got 32"
              COMMAND 05_multi_head --heads 32)
