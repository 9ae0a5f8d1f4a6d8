# Chapter 08 (08_backprop): bad command lines exit with 2 and one line on stderr.
attn_cli_test(ch08.max_depth_zero EXIT 2 MATCH "--max-depth must be at least 1, got 0"
              COMMAND 08_backprop --max-depth 0)
attn_cli_test(ch08.max_depth_too_large EXIT 2 MATCH "--max-depth must be at most 64, got 65"
              COMMAND 08_backprop --max-depth 65)
attn_cli_test(ch08.max_depth_not_a_number EXIT 2 MATCH "--max-depth expects an integer, got 'deep'"
              COMMAND 08_backprop --max-depth deep)
attn_cli_test(ch08.block_size_negative EXIT 2 MATCH "--block-size must be at least 1, got -16"
              COMMAND 08_backprop --block-size -16)
# An old spelling (--time-steps) is a hidden alias of --block-size: accepted, and the message
# names the flag --help shows.
attn_cli_test(ch08.old_flag_time_steps EXIT 2 MATCH "--block-size must be at most 64, got 65"
              COMMAND 08_backprop --time-steps 65)
attn_cli_test(ch08.n_embd_zero EXIT 2 MATCH "--n-embd must be at least 1, got 0"
              COMMAND 08_backprop --n-embd 0)
attn_cli_test(ch08.n_embd_too_large EXIT 2 MATCH "--n-embd must be at most 128, got 129"
              COMMAND 08_backprop --n-embd 129)
attn_cli_test(ch08.n_embd_huge EXIT 2 MATCH "--n-embd"
              COMMAND 08_backprop --n-embd 99999999999999999999999)
attn_cli_test(ch08.n_heads_zero EXIT 2 MATCH "--n-heads must be at least 1, got 0"
              COMMAND 08_backprop --n-heads 0)
attn_cli_test(ch08.n_heads_not_dividing EXIT 2
              MATCH "--n-heads must divide --n-embd, got 5 heads for 32 channels"
              COMMAND 08_backprop --n-heads 5)
attn_cli_test(ch08.weight_std_zero EXIT 2 MATCH "--weight-std must be > 0, got 0"
              COMMAND 08_backprop --weight-std 0)
attn_cli_test(ch08.weight_std_negative EXIT 2 MATCH "--weight-std must be > 0, got -0.5"
              COMMAND 08_backprop --weight-std -0.5)
attn_cli_test(ch08.weight_std_too_large EXIT 2 MATCH "--weight-std must be at most 1, got 2"
              COMMAND 08_backprop --weight-std 2)
attn_cli_test(ch08.weight_std_nan EXIT 2 MATCH "--weight-std"
              COMMAND 08_backprop --weight-std nan)
attn_cli_test(ch08.weight_std_not_a_number EXIT 2 MATCH "--weight-std"
              COMMAND 08_backprop --weight-std wide)
# The input contract's bounds (a size far beyond its maximum, a non-finite float) are the
# robust class: labelled so a hardening pass can run them all.
foreach(t max_depth_too_large n_embd_huge weight_std_nan weight_std_too_large)
  set_tests_properties(cli.ch08.${t} PROPERTIES LABELS "cli;ch08;robust")
endforeach()
attn_cli_test(ch08.section_too_large EXIT 2 MATCH "--section must be at most 5, got 6"
              COMMAND 08_backprop --section 6)
attn_cli_test(ch08.section_negative EXIT 2 MATCH "--section must be at least 0, got -1"
              COMMAND 08_backprop --section -1)
# --mine on the shipped stubs: the first unfinished exercise is named, exit code 1.
attn_cli_test(ch08.mine_unfinished EXIT 1
              MATCH "exercise ex08\\.1 \\(softmax backward\\) is not done yet"
              COMMAND 08_backprop --mine --section 2)
# Section 3 calls the checker's core first: with the shipped stubs, ex08.5 is named. (Each new
# exercise alone unfinished, the others answered: cli.ch08.mine_todo_*, tests/exercises/.)
attn_cli_test(ch08.mine_unfinished_section3 EXIT 1
              MATCH "exercise ex08\\.5 \\(central differences\\) is not done yet"
              COMMAND 08_backprop --mine --section 3)
# One section alone prints what the full run prints for it (each section has its own stream).
attn_cli_test(ch08.section_alone EXIT 0 STDOUT
              MATCH "== 4\\. Depth.*residual only: +explodes"
              COMMAND 08_backprop --section 4)
