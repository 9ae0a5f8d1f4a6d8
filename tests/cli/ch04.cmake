# Chapter 04 (04_single_head): bad command lines exit with 2 and one line on stderr.
attn_cli_test(ch04.block_size_zero EXIT 2 MATCH "--block-size must be at least 1, got 0"
              COMMAND 04_single_head --block-size 0)
attn_cli_test(ch04.block_size_negative EXIT 2 MATCH "--block-size must be at least 1, got -4"
              COMMAND 04_single_head --block-size -4)
attn_cli_test(ch04.block_size_too_large EXIT 2 MATCH "--block-size must be at most 64, got 65"
              COMMAND 04_single_head --block-size 65)
attn_cli_test(ch04.n_embd_zero EXIT 2 MATCH "--n-embd must be at least 1, got 0"
              COMMAND 04_single_head --n-embd 0)
attn_cli_test(ch04.n_embd_too_large EXIT 2 MATCH "--n-embd must be at most 4096, got 4097"
              COMMAND 04_single_head --n-embd 4097)
attn_cli_test(ch04.head_size_zero EXIT 2 MATCH "--head-size must be at least 1, got 0"
              COMMAND 04_single_head --head-size 0)
attn_cli_test(ch04.head_size_negative EXIT 2 MATCH "--head-size must be at least 1, got -16"
              COMMAND 04_single_head --head-size -16)
attn_cli_test(ch04.head_size_too_large EXIT 2 MATCH "--head-size must be at most 4096, got 5000"
              COMMAND 04_single_head --head-size 5000)
attn_cli_test(ch04.source_steps_zero EXIT 2 MATCH "--source-steps must be at least 1, got 0"
              COMMAND 04_single_head --source-steps 0)
attn_cli_test(ch04.source_steps_too_large EXIT 2 MATCH "--source-steps must be at most 64, got 100"
              COMMAND 04_single_head --source-steps 100)
attn_cli_test(ch04.head_size_not_a_number EXIT 2 MATCH "--head-size"
              COMMAND 04_single_head --head-size sixteen)
# The old spelling --channels stays as a hidden alias of --n-embd (messages name the new flag).
attn_cli_test(ch04.old_flag_name_still_works EXIT 2 MATCH "--n-embd must be at most 4096, got 4097"
              COMMAND 04_single_head --channels 4097)
# A corpus of 8 characters cannot give T = 8 tokens and S = 5 more.
set(ch04_short_corpus ${CMAKE_CURRENT_BINARY_DIR}/ch04_short.txt)
file(WRITE ${ch04_short_corpus} "Shall I\n")
# A bad file is exit code 1 in every chapter (CONTRIBUTING.md, "The input contract").
attn_cli_test(ch04.corpus_too_short EXIT 1
              MATCH "--block-size \\+ --source-steps needs 13 characters, but the corpus has only 8"
              COMMAND 04_single_head --data ${ch04_short_corpus})
