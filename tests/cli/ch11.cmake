# Chapter 11 (11_modern_attention): bad command lines exit with 2, each with a one-line message
# naming the flag, before any work.
attn_cli_test(ch11.n_kv_heads_not_dividing EXIT 2
              MATCH "--n-kv-heads 3 does not divide the 4 query heads: use 1, 2 or 4"
              COMMAND 11_modern_attention --n-kv-heads 3)
attn_cli_test(ch11.n_kv_heads_zero EXIT 2 MATCH "--n-kv-heads must be at least 1, got 0"
              COMMAND 11_modern_attention --n-kv-heads 0)
attn_cli_test(ch11.n_kv_heads_above_heads EXIT 2 MATCH "--n-kv-heads must be at most 4, got 8"
              COMMAND 11_modern_attention --n-kv-heads 8)
attn_cli_test(ch11.window_zero EXIT 2 MATCH "--window must be at least 1, got 0"
              COMMAND 11_modern_attention --window 0)
attn_cli_test(ch11.window_above_block_size EXIT 2
              MATCH "--window must be at most the table's block size T = 32 \\(--table: 64\\), got 33"
              COMMAND 11_modern_attention --window 33)
attn_cli_test(ch11.window_above_full_table EXIT 2 MATCH "--window must be at most 64, got 65"
              COMMAND 11_modern_attention --table --window 65)
attn_cli_test(ch11.theta_zero EXIT 2 MATCH "--rope-theta must be > 0, got 0"
              COMMAND 11_modern_attention --rope-theta 0)
attn_cli_test(ch11.theta_negative EXIT 2 MATCH "--rope-theta must be > 0, got -10"
              COMMAND 11_modern_attention --rope-theta -10)
attn_cli_test(ch11.theta_not_a_number EXIT 2 MATCH "--rope-theta"
              COMMAND 11_modern_attention --rope-theta nan)
attn_cli_test(ch11.head_size_odd EXIT 2
              MATCH "--head-size must be even \\(RoPE turns pairs of features\\), got 5"
              COMMAND 11_modern_attention --head-size 5)
attn_cli_test(ch11.unknown_row EXIT 2
              MATCH "--table-rows expects row names separated by commas \\(base, rope, rmsnorm, swiglu, gqa, no-bias, llama, window\\), got 'base,gpt5'"
              COMMAND 11_modern_attention --table-rows base,gpt5)
attn_cli_test(ch11.empty_row EXIT 2 MATCH "--table-rows expects row names"
              COMMAND 11_modern_attention --table-rows base,)
attn_cli_test(ch11.bad_seed EXIT 2 MATCH "--table-seeds expects up to 16 seeds .*, got '1,x'"
              COMMAND 11_modern_attention --table-seeds 1,x)
attn_cli_test(ch11.negative_seed EXIT 2 MATCH "--table-seeds expects up to 16 seeds .*, got '-1'"
              COMMAND 11_modern_attention --table-seeds -1)
attn_cli_test(ch11.table_steps_zero EXIT 2 MATCH "--table-steps must be at least 1, got 0"
              COMMAND 11_modern_attention --table-steps 0)
# --mine on the shipped stubs: the first unfinished exercise is named, exit code 1.
attn_cli_test(ch11.mine_unfinished EXIT 1 MATCH "ex11.1"
              COMMAND 11_modern_attention --mine --table-steps 1)
# One seed: the table says "Seed 1." and that it cannot judge a change without a spread; fewer
# seeds than the rule's 5 get each row's gap and no verdict.
attn_cli_test(ch11.one_seed EXIT 0 STDOUT
              MATCH "its best estimate counts\\. Seed 7\\..*One seed has no spread to judge a change by: give --table-seeds 1,2,3,4,5\\."
              COMMAND 11_modern_attention --table-rows base,rope --table-seeds 7 --table-steps 2)
attn_cli_test(ch11.three_seeds EXIT 0 STDOUT
              MATCH "rope +[-+][0-9.]+ \\(lower in [0-3] of 3 seeds: too few to judge by\\).*3 seeds are fewer than the rule's 5: no verdicts; give --table-seeds 1,2,3,4,5\\."
              COMMAND 11_modern_attention --table-rows base,rope --table-seeds 1,2,3 --table-steps 2)
# Section 7 alone (--extrapolate) on a budget: its flags are bounded, and a short run prints the
# table, the learned table's refusal past T and a verdict for every other row.
attn_cli_test(ch11.extrapolate_steps_zero EXIT 2 MATCH "--extrapolate-steps must be at least 1, got 0"
              COMMAND 11_modern_attention --extrapolate --extrapolate-steps 0)
attn_cli_test(ch11.extrapolate_seeds_too_many EXIT 2
              MATCH "--extrapolate-seeds must be at most 16, got 17"
              COMMAND 11_modern_attention --extrapolate --extrapolate-seeds 17)
attn_cli_test(ch11.extrapolate_small EXIT 0 STDOUT
              MATCH "== 7. Train short, test long ==.*longer than the position table \\(block_size 32\\).*RoPE +(holds|breaks|mixed).*ALiBi +(holds|breaks|mixed).*no positions +(holds|breaks|mixed)"
              COMMAND 11_modern_attention --extrapolate --extrapolate-steps 20 --extrapolate-seeds 2)
# Time bounds (issue 29): the training a command asks for is estimated before it starts and held
# to about two and a half minutes (one run of the full table); past it, refused at once.
attn_cli_test(ch11.table_steps_past_the_time_budget EXIT 2
              MATCH "^11_modern_attention: error: the table would train 40 runs \\(8 rows x 5 seeds\\) of 100000 steps for about [0-9]+ s here, more than the limit of 150 s: lower --table-steps, or train fewer rows and seeds at a time \\(--table-rows, --table-seeds\\)"
              COMMAND 11_modern_attention --table-steps 100000)
attn_cli_test(ch11.full_table_in_one_command EXIT 2
              MATCH "^11_modern_attention: error: the table \\(--table\\) would train 40 runs .*--table-rows, --table-seeds"
              COMMAND 11_modern_attention --table)
attn_cli_test(ch11.extrapolate_past_the_time_budget EXIT 2
              MATCH "^11_modern_attention: error: --extrapolate with --extrapolate-steps 20000 and --extrapolate-seeds 5 would train 5 models x 5 seeds for about [0-9]+ s here, more than the limit of 150 s: lower --extrapolate-steps or --extrapolate-seeds"
              COMMAND 11_modern_attention --extrapolate --extrapolate-steps 20000)
# A message that already says "(see --help)" does not get it twice (issue 29).
attn_cli_test(ch11.see_help_once EXIT 2
              MATCH "^11_modern_attention: error: --head-size must be even \\(RoPE turns pairs of features\\), got 3 \\(see --help\\)$"
              COMMAND 11_modern_attention --head-size 3)
