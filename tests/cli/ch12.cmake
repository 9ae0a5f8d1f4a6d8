# Chapter 12 (12_fast_attention): bad command lines exit with 2, each with one line on stderr.
attn_cli_test(ch12.long_zero EXIT 2 MATCH "--long must be at least 1, got 0"
              COMMAND 12_fast_attention --long 0)
attn_cli_test(ch12.long_negative EXIT 2 MATCH "--long must be at least 1, got -5"
              COMMAND 12_fast_attention --long -5)
attn_cli_test(ch12.long_above_max EXIT 2 MATCH "--long must be at most 32768, got 32769"
              COMMAND 12_fast_attention --long 32769)
attn_cli_test(ch12.long_not_a_number EXIT 2 MATCH "--long .*'16k'"
              COMMAND 12_fast_attention --long 16k)
attn_cli_test(ch12.tile_zero EXIT 2 MATCH "--tile must be at least 1, got 0"
              COMMAND 12_fast_attention --tile 0)
attn_cli_test(ch12.tile_zero_long EXIT 2 MATCH "--tile must be at least 1, got 0"
              COMMAND 12_fast_attention --long 64 --tile 0)
attn_cli_test(ch12.tile_above_max EXIT 2 MATCH "--tile must be at most 1024, got 1025"
              COMMAND 12_fast_attention --tile 1025)
attn_cli_test(ch12.block_size_above_max EXIT 2 MATCH "--block-size must be at most 4096, got 4097"
              COMMAND 12_fast_attention --block-size 4097)
attn_cli_test(ch12.head_size_zero EXIT 2 MATCH "--head-size must be at least 1, got 0"
              COMMAND 12_fast_attention --head-size 0)
# The reference keeps (B, H, T, T) weights: refused past 1 GiB, before anything is allocated.
attn_cli_test(ch12.reference_above_cap EXIT 2
              MATCH "--long 16384 with --kernel reference needs the \\(B, H, T, T\\) weights, .* above the cap of 1.00 GiB: use --kernel flash, or T at most 5792"
              COMMAND 12_fast_attention --long 16384 --kernel reference)
attn_cli_test(ch12.kernel_unknown EXIT 2 MATCH "--kernel must be flash or reference, got 'turbo'"
              COMMAND 12_fast_attention --long 64 --kernel turbo)
attn_cli_test(ch12.kernel_without_long EXIT 2 MATCH "--kernel needs --long T"
              COMMAND 12_fast_attention --kernel reference)
attn_cli_test(ch12.backward_without_long EXIT 2 MATCH "--backward needs --long T"
              COMMAND 12_fast_attention --backward)
