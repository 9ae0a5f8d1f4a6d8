# Chapter 02 (02_averaging): bad command lines exit with 2 and one line on stderr.
attn_cli_test(ch02.block_size_zero EXIT 2 MATCH "--block-size must be at least 1, got 0"
              COMMAND 02_averaging --block-size 0)
attn_cli_test(ch02.block_size_negative EXIT 2 MATCH "--block-size must be at least 1, got -4"
              COMMAND 02_averaging --block-size -4)
attn_cli_test(ch02.n_embd_zero EXIT 2 MATCH "--n-embd must be at least 1, got 0"
              COMMAND 02_averaging --n-embd 0)
attn_cli_test(ch02.n_embd_not_a_number EXIT 2 MATCH "--n-embd.*x"
              COMMAND 02_averaging --n-embd x)
attn_cli_test(ch02.max_t_below_block_size EXIT 2
              MATCH "--max-t \\(4\\) must be at least --block-size \\(8\\)"
              COMMAND 02_averaging --max-t 4 --block-size 8)
# The old spelling --channels stays as a hidden alias of --n-embd (messages name the new flag).
attn_cli_test(ch02.old_flag_name_still_works EXIT 2 MATCH "--n-embd must be at least 1, got 0"
              COMMAND 02_averaging --channels 0)
attn_cli_test(ch02.max_t_too_large EXIT 2 MATCH "--max-t must be at most 2048, got 5000"
              COMMAND 02_averaging --max-t 5000)
attn_cli_test(ch02.unknown_flag EXIT 2 MATCH "--frobnicate"
              COMMAND 02_averaging --frobnicate)
