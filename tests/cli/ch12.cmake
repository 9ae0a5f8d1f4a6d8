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
attn_cli_test(ch12.kernel_unknown EXIT 2 MATCH "--kernel must be flash, blas or reference, got 'turbo'"
              COMMAND 12_fast_attention --long 64 --kernel turbo)
attn_cli_test(ch12.kernel_without_long EXIT 2 MATCH "--kernel needs --long T"
              COMMAND 12_fast_attention --kernel reference)
attn_cli_test(ch12.backward_without_long EXIT 2 MATCH "--backward needs --long T"
              COMMAND 12_fast_attention --backward)
# The BLAS kernel keeps the (B, H, T, T) weights too: the same cap as the reference.
attn_cli_test(ch12.blas_above_cap EXIT 2
              MATCH "--long 8192 with --kernel blas needs the \\(B, H, T, T\\) weights, .* above the cap of 1.00 GiB: use --kernel flash, or T at most 5792"
              COMMAND 12_fast_attention --long 8192 --kernel blas)
# Without --kernel, --long runs flash and the BLAS kernel side by side, each one's peak heap
# measured by the allocation counter: at T = 2048 the BLAS kernel's (8, 2048, 2048) weights
# alone are 128 MiB, flash holds the (T, 3C) projections and the output, 16 MiB.
attn_cli_test(ch12.long_side_by_side EXIT 0 STDOUT
              MATCH "flash +16\\.[0-9] MiB\nblas +14[0-9]\\.[0-9] MiB\n"
              COMMAND 12_fast_attention --long 2048)
# Above the cap the BLAS row says why it did not run, and flash runs alone.
attn_cli_test(ch12.long_blas_refused EXIT 0 STDOUT
              MATCH "\nblas +refused: its \\(B, H, T, T\\) weights would be 2.00 GiB"
              COMMAND 12_fast_attention --long 8192)
# --sweep: a list of lengths for the chart of time and memory against T.
attn_cli_test(ch12.sweep_no_value EXIT 2 MATCH "--sweep needs a value"
              COMMAND 12_fast_attention --sweep=)
# --sweep "": attn_cli_test cannot pass an empty argument (a CMake list drops it), so this case
# runs its own short script, where the empty argument is written out.
set(ch12_empty_script ${CMAKE_CURRENT_BINARY_DIR}/ch12_sweep_empty.cmake)
file(WRITE ${ch12_empty_script} [=[
# Written by tests/cli/ch12.cmake: cmake -DEXE=<12_fast_attention> -P ch12_sweep_empty.cmake
execute_process(COMMAND ${EXE} --sweep "" RESULT_VARIABLE code OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
string(REGEX REPLACE "\n$" "" line "${err}")
if(NOT code EQUAL 2 OR line MATCHES "\n" OR
   NOT line MATCHES "^12_fast_attention: error: --sweep needs comma-separated lengths")
  message(FATAL_ERROR "12_fast_attention --sweep \"\": expected exit code 2 and one line "
                      "'--sweep needs comma-separated lengths', got exit code ${code} and:\n${err}")
endif()
message("ok: 12_fast_attention --sweep \"\"\n  exit 2, stderr: ${line}")
]=])
add_test(NAME cli.ch12.sweep_empty
         COMMAND ${CMAKE_COMMAND} -E env --unset=ATTN_DATA
                 ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:12_fast_attention> -P ${ch12_empty_script})
set_tests_properties(cli.ch12.sweep_empty PROPERTIES LABELS "cli;ch12")
attn_cli_test(ch12.sweep_zero EXIT 2 MATCH "--sweep: every T must be from 1 to 32768, got 0"
              COMMAND 12_fast_attention --sweep 1024,0)
attn_cli_test(ch12.sweep_above_max EXIT 2 MATCH "--sweep: every T must be from 1 to 32768, got 32769"
              COMMAND 12_fast_attention --sweep 32769)
attn_cli_test(ch12.sweep_empty_item EXIT 2 MATCH "--sweep: '' is not a length \\(a whole number from 1 to 32768\\) in '1024,,2048'"
              COMMAND 12_fast_attention --sweep 1024,,2048)
# The list is quoted only when it holds more than the item at fault (issue 29: no duplicated text).
attn_cli_test(ch12.sweep_not_a_number EXIT 2
              MATCH "--sweep: '1k' is not a length \\(a whole number from 1 to 32768\\) \\(see --help\\)$"
              COMMAND 12_fast_attention --sweep 1k)
attn_cli_test(ch12.sweep_with_long EXIT 2 MATCH "--sweep and --long exclude each other"
              COMMAND 12_fast_attention --sweep 1024 --long 1024)
attn_cli_test(ch12.sweep_with_kernel EXIT 2 MATCH "--sweep runs both kernels: leave out --kernel"
              COMMAND 12_fast_attention --sweep 1024 --kernel reference)
# A small sweep runs each length in a child process: the reference runs at 64 and stops at
# 5793, the first length whose weights pass its cap, while the flash kernel goes on.
attn_cli_test(ch12.sweep_runs EXIT 0 STDOUT
              MATCH "    64 +[0-9.]+ [KM]iB +[0-9.]+ [KM]iB\n  5793 +refused +[0-9.]+ MiB\nrefused: .* \\(T above 5792\\)"
              COMMAND 12_fast_attention --sweep 64,5793)

# --sweep's children (--long runs) die with the sweep: SIGTERM to it leaves no run computing
# alone (tests/cli/ch12_sweep_signal.sh; issue 29).
add_test(NAME cli.ch12.sweep_sigterm
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/ch12_sweep_signal.sh $<TARGET_FILE:12_fast_attention>
                 ${CMAKE_CURRENT_BINARY_DIR}/ch12_sweep_signal)
set_tests_properties(cli.ch12.sweep_sigterm PROPERTIES LABELS "cli;ch12;robust")
# Time bounds (issue 29): a --long run or a whole --sweep is estimated before it starts (FLOPs
# and tile pairs, long_context.hpp) and held to about two and a half minutes; past it, refused
# at once, naming the flags that would help.
attn_cli_test(ch12.long_tile_1_past_the_time_budget EXIT 2
              MATCH "^12_fast_attention: error: --long 32768 with --kernel flash and --tile 1 would run for about [0-9]+ s here, more than the limit of 150 s: lower --long or raise --tile \\(256 by default\\)"
              COMMAND 12_fast_attention --long 32768 --tile 1)
attn_cli_test(ch12.long_backward_past_the_time_budget EXIT 2
              MATCH "^12_fast_attention: error: --long 32768 --backward with --kernel flash and --tile 8 would run for about [0-9]+ s here, more than the limit of 150 s: lower --long, drop --backward or raise --tile \\(256 by default\\)"
              COMMAND 12_fast_attention --long 32768 --backward --tile 8)
string(REPEAT "64," 499 sweep_500)  # 500 lengths, each short: the children add up
attn_cli_test(ch12.sweep_past_the_time_budget EXIT 2
              MATCH "^12_fast_attention: error: --sweep of 500 lengths with --tile 256 would run for about [0-9]+ s here .*: give fewer or shorter lengths"
              COMMAND 12_fast_attention --sweep ${sweep_500}64)
