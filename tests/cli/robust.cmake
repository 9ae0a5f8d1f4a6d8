# tests/cli/robust.cmake: the input contract (CONTRIBUTING.md, "The input contract"; issue 7),
# checked on every chapter that takes the input: ctest -L robust. Each class of hostile input is
# one loop, so a new chapter (or a new size flag in the table below) is covered at once.
#   sizes     every size flag at its bound + 1, at 2^61 (B*T = 2^64 wrapped around to 0) and
#             beyond 64 bits: exit 2, "must be at most N"
#   files     --data /dev/zero, a link to it, ATTN_DATA=/dev/zero, a file above 64 MiB: exit 1
#   output    stdout on /dev/full (a run and --help), or past a file size limit (ulimit -f): exit 1,
#             "cannot write the output (stdout)"
#   the rest  chapter 01's vocabulary cap, control characters, tiny temperatures, a huge first
#             line, broken model weights (NaN, an overflowing shape, a link to /dev/zero)
set(robust_dir ${CMAKE_CURRENT_BINARY_DIR}/robust)
file(MAKE_DIRECTORY ${robust_dir})
file(CREATE_LINK /dev/zero ${robust_dir}/zero_link.txt SYMBOLIC)
set(hostile "perl ${CMAKE_CURRENT_SOURCE_DIR}/make_hostile.pl")

# The size flags of each chapter and their bounds (what --help says).
set(robust_sizes_01_bigram steps=100000 batch-size=1024 block-size=1024 eval-interval=100000
                           tokens=100000)
set(robust_sizes_02_averaging block-size=2048 n-embd=256 max-t=2048)
set(robust_sizes_03_masked_softmax block-size=16)
set(robust_sizes_04_single_head block-size=64 n-embd=4096 head-size=4096 source-steps=64)
set(robust_sizes_05_multi_head batch-size=16 block-size=32 n-embd=512 n-heads=16)
set(robust_sizes_06_transformer_block batch-size=4 block-size=64 n-embd=128 n-heads=128 ffn-mult=8
                                      passes=50)
set(robust_sizes_07_causal_lm n-layers=48 n-embd=512 n-heads=64 block-size=4096
                              tokens=2000)
set(robust_sizes_08_backprop section=5 max-depth=64 block-size=64 n-embd=128 n-heads=128)
set(robust_sizes_09_training n-embd=1024 n-heads=64 n-layers=32 block-size=1024 batch-size=1024
                             steps=1000000 eval-interval=1000000 eval-iters=10000
                             tokens=10000 warmup=1000000 ladder-steps=1000000)
set(robust_sizes_10_generation tokens=100000 n-layers=64 n-heads=64)
set(robust_sizes_11_modern_attention head-size=256 n-kv-heads=4 window=64 table-steps=100000)
set(robust_sizes_12_fast_attention block-size=4096 head-size=256 tile=1024 long=32768)
set(robust_sizes_14_gpt2 tokens=4096)
# Chapters that read $ATTN_DATA even without --data (the others read a corpus only when given one).
set(robust_env_chapters 01_bigram 04_single_head 07_causal_lm)

get_property(robust_chapters GLOBAL PROPERTY ATTN_CHAPTERS)
foreach(chapter IN LISTS robust_chapters)
  string(SUBSTRING ${chapter} 0 2 nn)
  set(t robust.ch${nn})

  # Sizes.
  foreach(entry IN LISTS robust_sizes_${chapter})
    string(REPLACE "=" ";" pair ${entry})
    list(GET pair 0 flag)
    list(GET pair 1 max)
    math(EXPR above "${max} + 1")
    attn_cli_test(${t}.${flag}.above_bound EXIT 2
                  MATCH "^${chapter}: error: --${flag} must be at most ${max}, got ${above}"
                  COMMAND ${chapter} --${flag} ${above})
    attn_cli_test(${t}.${flag}.wraps_size_t EXIT 2
                  MATCH "^${chapter}: error: --${flag} must be at most ${max}, got 2305843009213693952"
                  COMMAND ${chapter} --${flag} 2305843009213693952)
    attn_cli_test(${t}.${flag}.beyond_64_bits EXIT 2
                  MATCH "^${chapter}: error: --${flag} must be at most ${max}, got 99999999999999999999"
                  COMMAND ${chapter} --${flag}=99999999999999999999)
  endforeach()

  # Files: only regular files, at most 64 MiB.
  set(not_regular "not a regular file \\(a device, a pipe or a socket\\); give a text file")
  attn_cli_test(${t}.data_dev_zero EXIT 1
                MATCH "^${chapter}: error: cannot read corpus '/dev/zero': ${not_regular}$"
                COMMAND ${chapter} --data /dev/zero)
  attn_cli_test(${t}.data_link_to_dev_zero EXIT 1
                MATCH "^${chapter}: error: cannot read corpus '.*zero_link.txt': ${not_regular}$"
                COMMAND ${chapter} --data ${robust_dir}/zero_link.txt)
  set(huge ${robust_dir}/huge_${nn}.txt)
  attn_cli_test(${t}.data_above_64_mib EXIT 1
                PREPARE "printf 'a' > ${huge} && truncate -s 67108865 ${huge}"
                MATCH "^${chapter}: error: cannot read corpus '.*huge_${nn}.txt': the file holds 67108865 bytes, more than the limit of 64 MiB for a corpus$"
                COMMAND ${chapter} --data ${huge})
  if(chapter IN_LIST robust_env_chapters)
    attn_cli_test(${t}.env_dev_zero EXIT 1 ENV ATTN_DATA=/dev/zero
                  MATCH "^${chapter}: error: cannot read corpus '/dev/zero': ${not_regular} \\(from \\$ATTN_DATA\\)$"
                  COMMAND ${chapter})
  endif()

  # Output: a full disk is an error, for a run and for --help.
  attn_cli_test(${t}.stdout_full EXIT 1 STDOUT_TO /dev/full
                MATCH "^${chapter}: error: cannot write the output \\(stdout\\): "
                COMMAND ${chapter})
  attn_cli_test(${t}.help_stdout_full EXIT 1 STDOUT_TO /dev/full
                MATCH "^${chapter}: error: cannot write the output \\(stdout\\): "
                COMMAND ${chapter} --help)
  # ... and so is a file size limit (ulimit -f): SIGXFSZ is ignored, the write fails with EFBIG.
  attn_cli_test(${t}.stdout_file_size_limit EXIT 1 FILE_SIZE_LIMIT 1
                STDOUT_TO ${robust_dir}/stdout_limited_${nn}.txt
                MATCH "^${chapter}: error: cannot write the output \\(stdout\\): File too large$"
                COMMAND ${chapter})
endforeach()

# Chapter 01: its (V, V) table bounds the vocabulary; chapter 07 takes the same corpus.
set(vocab ${robust_dir}/vocab_3000.txt)
attn_cli_test(robust.ch01.vocabulary_above_2048 EXIT 1 PREPARE "${hostile} vocab 3000 > ${vocab}"
              MATCH "^01_bigram: error: corpus .*vocab_3000.txt \\(--data\\) has 3001 distinct characters, but this chapter's bigram table holds V x V numbers \\(9006001 here\\), so it accepts at most 2048 characters; chapter 07 stores V x C numbers instead and runs on this corpus$"
              COMMAND 01_bigram --data ${vocab})
attn_cli_test(robust.ch07.vocabulary_3000 EXIT 0 STDOUT
              PREPARE "${hostile} vocab 3000 > ${robust_dir}/vocab_3000_07.txt"
              MATCH "Here V = 3001,"
              COMMAND 07_causal_lm --data ${robust_dir}/vocab_3000_07.txt --tokens 5)
# Chapter 01: the memory of a step (B * T * V numbers) and the work of training (times the
# steps) are bounded too, each flag being within its own bound.
attn_cli_test(robust.ch01.batch_numbers EXIT 2
              MATCH "^01_bigram: error: --batch-size 1024 x --block-size 1024 x V = [0-9]+ is [0-9]+ numbers per step, more than the limit of 16777216: lower --batch-size or --block-size"
              COMMAND 01_bigram --batch-size 1024 --block-size 1024)
attn_cli_test(robust.ch01.training_work EXIT 2
              MATCH "^01_bigram: error: --steps 3000 x --batch-size 1024 x --block-size 256 x V = [0-9]+ is [0-9]+ operations, more than the limit of 2147483648: lower one of them"
              COMMAND 01_bigram --batch-size 1024 --block-size 256)

# Control characters from the corpus are escaped (expect.cmake fails on any raw ESC).
set(controls ${robust_dir}/controls.txt)
attn_cli_test(robust.ch01.control_characters EXIT 0 STDOUT
              PREPARE "${hostile} controls > ${controls}"
              MATCH "\\\\x00.*\\\\x1b"
              COMMAND 01_bigram --data ${controls} --start "S")
attn_cli_test(robust.ch07.control_characters EXIT 0 STDOUT
              PREPARE "${hostile} controls > ${robust_dir}/controls_07.txt"
              MATCH "prompt \"Shall I compare thee \\\\x1b\\[31mto a summer's\\\\x1b\\[0m day\\?\""
              COMMAND 07_causal_lm --data ${robust_dir}/controls_07.txt --tokens 40)

# A temperature so small that logits / T overflows float samples the argmax (its exact limit).
attn_cli_test(robust.ch01.tiny_temperature EXIT 0 STDOUT MATCH "Sampling: writing with the learned table"
              COMMAND 01_bigram --temperature 1e-38)
attn_cli_test(robust.ch07.tiny_temperature EXIT 0 STDOUT MATCH "temperature 0.0000000000000000000000000000000000000*1, top-k off"
              COMMAND 07_causal_lm --temperature 1e-38 --tokens 20)
# ... on every sampling path (chapter 07's generation loop and chapter 10's go through
# TokenSampler), down to float's smallest subnormal.
attn_cli_test(robust.ch07.subnormal_temperature EXIT 0 STDOUT MATCH "top-k off"
              COMMAND 07_causal_lm --temperature 1e-45 --tokens 20)
attn_cli_test(robust.ch10.tiny_temperature EXIT 0 STDOUT MATCH "temperature "
              COMMAND 10_generation --temperature 1e-38 --tokens 20)
attn_cli_test(robust.ch10.subnormal_temperature EXIT 0 STDOUT MATCH "temperature "
              COMMAND 10_generation --temperature 1e-45 --tokens 20)

# Chapter 07: the default prompt is the corpus's first long line, cut to 200 characters.
attn_cli_test(robust.ch07.long_first_line EXIT 0 STDOUT
              PREPARE "${hostile} longline 100000 > ${robust_dir}/longline.txt"
              MATCH "prompt \"the the [^\n]*\" \\(200 characters\\)"
              COMMAND 07_causal_lm --data ${robust_dir}/longline.txt --tokens 5)
string(REPEAT "a" 5000 long_prompt)
attn_cli_test(robust.ch07.long_prompt_flag EXIT 2
              MATCH "^07_causal_lm: error: --prompt must be at most 4096 characters, got 5000"
              COMMAND 07_causal_lm --prompt ${long_prompt})

# Chapter 07: broken model weights, each named with its file (never blamed on a flag).
# Each test exports the model to its own folder (ctest -j runs them side by side).
foreach(kind nan overflowing_shape link_to_dev_zero)
  set(model_${kind} ${robust_dir}/model_${kind})
  set(export_${kind} "rm -rf ${model_${kind}} && $<TARGET_FILE:07_causal_lm> --export ${model_${kind}} --tokens 1 > /dev/null")
endforeach()
attn_cli_test(robust.ch07.weights_nan EXIT 1
              PREPARE "${export_nan} && ${hostile} npy '(64,)' 5 > ${model_nan}/ln_f_gamma.npy"
              MATCH "^07_causal_lm: error: model '.*/model_nan': ln_f_gamma.npy holds nan at flat index 5: weights must be finite numbers$"
              COMMAND 07_causal_lm --weights ${model_nan})
attn_cli_test(robust.ch07.weights_overflowing_shape EXIT 1
              PREPARE "${export_overflowing_shape} && ${hostile} npy '(0, 18446744073709551615)' > ${model_overflowing_shape}/wte.npy"
              MATCH "^07_causal_lm: error: .*/wte.npy: shape \\(0, 18446744073709551615\\) is too large \\(the limit is 256 MiB of data\\)$"
              COMMAND 07_causal_lm --weights ${model_overflowing_shape})
attn_cli_test(robust.ch07.weights_link_to_dev_zero EXIT 1
              PREPARE "${export_link_to_dev_zero} && rm ${model_link_to_dev_zero}/wpe.npy && ln -s /dev/zero ${model_link_to_dev_zero}/wpe.npy"
              MATCH "^07_causal_lm: error: model '.*/model_link_to_dev_zero': wpe.npy is not a regular file \\(links are not followed\\)$"
              COMMAND 07_causal_lm --weights ${model_link_to_dev_zero})

# Chapter 07: the flags together are bounded too, by the model's size and by the work of
# generating (each alone is within its bound here).
attn_cli_test(robust.ch07.model_parameters EXIT 2
              MATCH "^07_causal_lm: error: --n-layers 48 --n-embd 512 --block-size 32 make a model of [0-9]+ parameters \\(before the embedding\\), more than the limit of 33554432: lower --n-layers or --n-embd"
              COMMAND 07_causal_lm --n-layers 48 --n-embd 512)
attn_cli_test(robust.ch07.generation_work EXIT 2
              MATCH "^07_causal_lm: error: --tokens 2000 with L = 2, C = 64, T_max = 4096 is about [0-9.]+e\\+[0-9]+ floating-point operations of generation, more than the limit of 2.5e\\+11: lower"
              COMMAND 07_causal_lm --block-size 4096 --tokens 2000)

# Files past a file size limit (ulimit -f) are write errors too, one line and exit 1, never a
# silent SIGXFSZ (exit 153): 07's exported weights, 12's figures.
attn_cli_test(robust.ch07.export_file_size_limit EXIT 1 FILE_SIZE_LIMIT 1
              PREPARE "rm -rf ${robust_dir}/export_limited"
              MATCH "^07_causal_lm: error: .*export_limited/[a-z_0-9.]+npy.*File too large$"
              COMMAND 07_causal_lm --export ${robust_dir}/export_limited --tokens 1)
attn_cli_test(robust.ch12.svg_file_size_limit EXIT 1 FILE_SIZE_LIMIT 1
              PREPARE "rm -rf ${robust_dir}/svg_limited"
              MATCH "^12_fast_attention: error: cannot write '.*svg_limited/[a-z_0-9]+.svg': File too large$"
              COMMAND 12_fast_attention --sweep 64 --svg ${robust_dir}/svg_limited)

# The tools check their output too.
attn_cli_test(robust.tools.golden_stdout_full EXIT 1 STDOUT_TO /dev/full
              MATCH "^attn-golden: error: cannot write the output \\(stdout\\)$"
              COMMAND attn-golden ${PROJECT_SOURCE_DIR}/tests/golden/cases/softmax_rows)
# All the cases: more output than stdio's buffer, so a write fails (and throws) mid-run.
attn_cli_test(robust.tools.golden_all_cases_stdout_full EXIT 1 STDOUT_TO /dev/full
              MATCH "^attn-golden: error: cannot write the output \\(stdout\\)$"
              COMMAND attn-golden ${PROJECT_SOURCE_DIR}/tests/golden/cases)
# --help too, whichever way a tool ends (attn-bench's --help exits inside Google Benchmark).
foreach(tool attn-golden attn-check attn-doccheck attn-bench)
  attn_cli_test(robust.tools.${tool}_help_stdout_full EXIT 1 STDOUT_TO /dev/full
                MATCH "^${tool}: error: cannot write the output \\(stdout\\)"
                COMMAND ${tool} --help)
endforeach()
# Past a file size limit (ulimit -f) the write fails with EFBIG: reported, never a SIGXFSZ death.
attn_cli_test(robust.tools.golden_file_size_limit EXIT 1 FILE_SIZE_LIMIT 1
              STDOUT_TO ${robust_dir}/golden_limited.txt
              MATCH "^attn-golden: error: cannot write the output \\(stdout\\)$"
              COMMAND attn-golden ${PROJECT_SOURCE_DIR}/tests/golden/cases)
attn_cli_test(robust.tools.doccheck_stdout_full EXIT 1 STDOUT_TO /dev/full
              MATCH "^attn-doccheck: error: cannot write the output \\(stdout\\)$"
              COMMAND attn-doccheck --bin-dir $<TARGET_FILE_DIR:attn-doccheck>
                      --root ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/CONTRIBUTING.md)

# A model folder's sizes are held to the bounds of the flags that make such models (issue 29):
# model.txt's block_size 8192 is above 07's --block-size bound, named with its file, exit 1.
foreach(chapter 07_causal_lm 10_generation)
  string(SUBSTRING ${chapter} 0 2 nn)
  set(big ${robust_dir}/model_block_8192_${chapter})
  attn_cli_test(robust.ch${nn}.model_txt_block_size_above_bound EXIT 1
                PREPARE "rm -rf ${big} && cp -RL ${ch09_parts_model}/current/model ${big} && rm ${big}/MANIFEST.txt && sed -i 's/^block_size .*/block_size 8192/' ${big}/model.txt"
                MATCH "^${chapter}: error: model '.*model_block_8192_${chapter}': block_size 8192 \\(model.txt\\) is above 4096, the most this chapter takes \\(the bound of --block-size\\)$"
                COMMAND ${chapter} --weights ${big})
  set_tests_properties(cli.robust.ch${nn}.model_txt_block_size_above_bound
                       PROPERTIES FIXTURES_REQUIRED ch09_parts_run)
endforeach()
# ... and a size past what model.txt can hold at all says its bound, not "a whole number".
set(huge_t ${robust_dir}/model_block_2_pow_22)
attn_cli_test(robust.ch10.model_txt_block_size_past_2_pow_20 EXIT 1
              PREPARE "rm -rf ${huge_t} && cp -RL ${ch09_parts_model}/current/model ${huge_t} && rm ${huge_t}/MANIFEST.txt && sed -i 's/^block_size .*/block_size 4194304/' ${huge_t}/model.txt"
              MATCH "model.txt line [0-9]+: block_size is '4194304', expected a whole number in \\[1, 1048576\\]$"
              COMMAND 10_generation --weights ${huge_t})
set_tests_properties(cli.robust.ch10.model_txt_block_size_past_2_pow_20
                     PROPERTIES FIXTURES_REQUIRED ch09_parts_run)

# Out of memory is one line and exit 1 (issue 29), also where the allocation fails in a worker
# thread of the pool (the backward's scratch): under `ulimit -v` of 1.3 GB this step does, on two
# threads (below about 1 GB the evaluation on the main thread fails first, since the program holds
# OpenBLAS's buffers up front: attn/core/threads.hpp).
# (Not under the sanitizers: AddressSanitizer reserves terabytes of address space.)
if(NOT ATTN_SANITIZE)
  attn_cli_test(robust.ch09.out_of_memory_in_a_worker EXIT 1 MEMORY_LIMIT 1300000
                ENV OPENBLAS_NUM_THREADS=2
                MATCH "^09_training: error: out of memory \\(std::bad_alloc\\): the sizes asked for need more memory than this machine can give"
                COMMAND 09_training --batch-size 16 --block-size 1024 --n-embd 64 --n-heads 16
                        --n-layers 1 --steps 2 --eval-iters 1 --eval-interval 100 --tokens 0)

  # A memory limit never hangs (issue 29): every BLAS call takes a 128 MiB buffer from OpenBLAS,
  # mapped the first time, and OpenBLAS 0.3.21 retries a failed mapping forever. Under 250 MB
  # the smallest long-context run used to hang at its first matrix product (and a program whose
  # OpenBLAS thread could not map its buffer, at its exit); the buffers are now reserved with
  # their address space checked first, and the limit is an out-of-memory error. TIMEOUT turns a
  # hang into a failure within seconds.
  attn_cli_test(robust.ch12.memory_limit_does_not_hang EXIT 1 MEMORY_LIMIT 250000
                ENV OPENBLAS_NUM_THREADS=2
                MATCH "^12_fast_attention: error: out of memory \\(std::bad_alloc\\): .*\\(--help shows each flag's limit\\)$"
                COMMAND 12_fast_attention --long 64)
  # ... nor later, when the pool starts a worker, whose first product needs a buffer of its own
  # (under 500 MB this one hung in some runs: 1 in 4 here, by the order its threads start).
  attn_cli_test(robust.ch12.memory_limit_long_does_not_hang EXIT 1 MEMORY_LIMIT 500000
                ENV OPENBLAS_NUM_THREADS=2
                MATCH "^12_fast_attention: error: out of memory \\(std::bad_alloc\\): .*\\(--help shows each flag's limit\\)$"
                COMMAND 12_fast_attention --long 16384)
  set_tests_properties(cli.robust.ch12.memory_limit_does_not_hang
                       cli.robust.ch12.memory_limit_long_does_not_hang PROPERTIES TIMEOUT 30)
endif()

# A run whose `current` points to a checkpoint that is gone is named as such (issue 29), not as
# "n_layers must be at least 1, got 0".
set(dangling ${robust_dir}/dangling_run)
foreach(chapter 07_causal_lm 10_generation)
  string(SUBSTRING ${chapter} 0 2 nn)
  attn_cli_test(robust.ch${nn}.weights_dangling_current EXIT 1
                PREPARE "rm -rf ${dangling}_${nn} && mkdir -p ${dangling}_${nn} && ln -s ckpt-000002 ${dangling}_${nn}/current && ln -s current/model ${dangling}_${nn}/model"
                MATCH "^${chapter}: error: --weights '.*dangling_run_${nn}': the link '.*dangling_run_${nn}/current' points to 'ckpt-000002', which is gone"
                COMMAND ${chapter} --weights ${dangling}_${nn})
endforeach()
