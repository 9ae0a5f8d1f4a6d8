# Chapter 07 (07_causal_lm): bad command lines exit with 2, bad input files with 1, each with one
# line on stderr.
attn_cli_test(ch07.n_heads_not_dividing EXIT 2
              MATCH "--n-heads 5 does not divide --n-embd 64"
              COMMAND 07_causal_lm --n-heads 5)
attn_cli_test(ch07.n_embd_zero EXIT 2 MATCH "--n-embd must be at least 1, got 0"
              COMMAND 07_causal_lm --n-embd 0)
attn_cli_test(ch07.prompt_unknown_character EXIT 1
              MATCH "--prompt: character 'Z' \\(U\\+005A\\) is not in the vocabulary of this corpus \\(59 characters\\)"
              COMMAND 07_causal_lm --prompt Zebra)
attn_cli_test(ch07.top_k_zero EXIT 2 MATCH "--top-k must be at least 1, got 0"
              COMMAND 07_causal_lm --top-k 0)
attn_cli_test(ch07.top_k_above_vocabulary EXIT 2
              MATCH "--top-k must be at most V = 59 \\(the vocabulary size\\), got 60"
              COMMAND 07_causal_lm --top-k 60)
attn_cli_test(ch07.top_k_not_a_number EXIT 2 MATCH "--top-k expects an integer, got 'five'"
              COMMAND 07_causal_lm --top-k five)
attn_cli_test(ch07.temperature_zero EXIT 2 MATCH "--temperature must be > 0, got 0"
              COMMAND 07_causal_lm --temperature 0)
attn_cli_test(ch07.temperature_negative EXIT 2 MATCH "--temperature must be > 0, got -1"
              COMMAND 07_causal_lm --temperature -1)
attn_cli_test(ch07.prompt_needs_a_value EXIT 2 MATCH "--prompt needs a value"
              COMMAND 07_causal_lm --prompt)
attn_cli_test(ch07.weights_not_a_folder EXIT 1
              MATCH "--weights: '/nonexistent/model' does not exist \\(expected a model folder\\)"
              COMMAND 07_causal_lm --weights /nonexistent/model)

# --prompt "": attn_cli_test cannot pass an empty argument (a CMake list drops it), so this case
# runs its own short script, where the empty argument is written out.
set(ch07_empty_script ${CMAKE_CURRENT_BINARY_DIR}/ch07_prompt_empty.cmake)
file(WRITE ${ch07_empty_script} [=[
# Written by tests/cli/ch07.cmake: cmake -DEXE=<07_causal_lm> -P ch07_prompt_empty.cmake
execute_process(COMMAND ${EXE} --prompt "" RESULT_VARIABLE code OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
string(REGEX REPLACE "\n$" "" line "${err}")
if(NOT code EQUAL 2 OR line MATCHES "\n" OR
   NOT line MATCHES "^07_causal_lm: error: --prompt must not be empty")
  message(FATAL_ERROR "07_causal_lm --prompt \"\": expected exit code 2 and one line "
                      "'--prompt must not be empty', got exit code ${code} and:\n${err}")
endif()
message("ok: 07_causal_lm --prompt \"\"\n  exit 2, stderr: ${line}")
]=])
add_test(NAME cli.ch07.prompt_empty
         COMMAND ${CMAKE_COMMAND} -E env --unset=ATTN_DATA
                 ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:07_causal_lm> -P ${ch07_empty_script})
set_tests_properties(cli.ch07.prompt_empty PROPERTIES LABELS "cli;ch07")

# --weights with a broken model. The fixture test cli.ch07.make_models exports a good model, a
# narrower one (C = 32) and one made on a 6-character corpus, then copies the good one three
# times: without h1.w_v.npy, with the narrow model's h1.w_q.npy, and with h0.w_k.npy replaced by
# text.
set(ch07_models ${CMAKE_CURRENT_BINARY_DIR}/ch07_models)
set(ch07_script ${CMAKE_CURRENT_BINARY_DIR}/ch07_make_models.cmake)
file(WRITE ${ch07_script} [=[
# Written by tests/cli/ch07.cmake: the model folders of the cli.ch07.weights_* tests.
#   cmake -DEXE=<07_causal_lm> -DDIR=<folder> -P ch07_make_models.cmake
file(REMOVE_RECURSE ${DIR})
file(MAKE_DIRECTORY ${DIR})
file(WRITE ${DIR}/abcd.txt "abcd dcba abcd dcba abcd dcba abcd dcba abcd\n")

function(export_model name)
  execute_process(COMMAND ${EXE} --export ${DIR}/${name} --tokens 1 ${ARGN}
                  RESULT_VARIABLE code OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "exporting ${name} failed (exit ${code}): ${err}")
  endif()
endfunction()
export_model(good)
export_model(narrow --n-embd 32)
export_model(other_corpus --data ${DIR}/abcd.txt)

foreach(copy missing misshaped corrupt no_model_txt)
  file(COPY ${DIR}/good/ DESTINATION ${DIR}/${copy})
endforeach()
file(REMOVE ${DIR}/no_model_txt/model.txt)
file(REMOVE ${DIR}/missing/h1.w_v.npy)
file(COPY_FILE ${DIR}/narrow/h1.w_q.npy ${DIR}/misshaped/h1.w_q.npy)
file(WRITE ${DIR}/corrupt/h0.w_k.npy "this is not a .npy file\n")
message("ok: model folders in ${DIR}")
]=])
add_test(NAME cli.ch07.make_models
         COMMAND ${CMAKE_COMMAND} -E env --unset=ATTN_DATA
                 ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:07_causal_lm> -DDIR=${ch07_models}
                 -P ${ch07_script})
set_tests_properties(cli.ch07.make_models PROPERTIES LABELS "cli;ch07"
                     FIXTURES_SETUP ch07_models)

attn_cli_test(ch07.weights_round_trip EXIT 0 STDOUT MATCH "model: loaded from '.*/good'"
              COMMAND 07_causal_lm --weights ${ch07_models}/good --tokens 5)
attn_cli_test(ch07.weights_missing_tensor EXIT 1 MATCH "h1\\.w_v\\.npy"
              COMMAND 07_causal_lm --weights ${ch07_models}/missing)
attn_cli_test(ch07.weights_misshaped_tensor EXIT 1
              MATCH "h1\\.w_q\\.npy has shape \\(32, 32\\), expected \\(64, 64\\)"
              COMMAND 07_causal_lm --weights ${ch07_models}/misshaped)
attn_cli_test(ch07.weights_corrupt_file EXIT 1 MATCH "corrupt/h0\\.w_k\\.npy"
              COMMAND 07_causal_lm --weights ${ch07_models}/corrupt)
attn_cli_test(ch07.weights_other_vocabulary EXIT 1
              MATCH "has a vocabulary of 6 tokens .* but the corpus has 59 characters"
              COMMAND 07_causal_lm --weights ${ch07_models}/other_corpus)
# The folder describes the model (model.txt): a flag may repeat it, never contradict it. An old
# spelling (--layers) is a hidden alias of --n-layers: accepted, and the message names the flag
# --help shows.
attn_cli_test(ch07.weights_more_blocks_than_layers EXIT 2
              MATCH "--n-layers 1 contradicts model '.*/good', whose model.txt says n_layers 2: drop the flag"
              COMMAND 07_causal_lm --weights ${ch07_models}/good --layers 1)
attn_cli_test(ch07.weights_heads_contradict EXIT 2
              MATCH "--n-heads 5 contradicts model '.*/good', whose model.txt says n_heads 4"
              COMMAND 07_causal_lm --weights ${ch07_models}/good --n-heads 5)
attn_cli_test(ch07.weights_flags_agree EXIT 0 STDOUT MATCH "L = 2, H = 4 \\(head size 16\\)"
              COMMAND 07_causal_lm --weights ${ch07_models}/good --n-layers 2 --n-heads 4
                      --n-embd 64 --block-size 32 --tokens 5)
# Without model.txt (a folder exported elsewhere): L from its blocks, H from --n-heads.
attn_cli_test(ch07.weights_no_model_txt EXIT 0 STDOUT
              MATCH "no model.txt, so L from its blocks and H from --n-heads.*L = 2, H = 2"
              COMMAND 07_causal_lm --weights ${ch07_models}/no_model_txt --n-heads 2 --tokens 5)
attn_cli_test(ch07.weights_heads_not_dividing EXIT 2 MATCH "--n-heads 5 does not divide C = 64"
              COMMAND 07_causal_lm --weights ${ch07_models}/no_model_txt --n-heads 5)
attn_cli_test(ch07.weights_layers_not_on_disk EXIT 2
              MATCH "--n-layers 3 contradicts model '.*/no_model_txt', which holds 2 blocks \\(h0 to h1\\)"
              COMMAND 07_causal_lm --weights ${ch07_models}/no_model_txt --n-layers 3)
foreach(t weights_round_trip weights_missing_tensor weights_misshaped_tensor weights_corrupt_file
          weights_other_vocabulary weights_more_blocks_than_layers weights_heads_contradict
          weights_flags_agree weights_no_model_txt weights_heads_not_dividing
          weights_layers_not_on_disk)
  set_tests_properties(cli.ch07.${t} PROPERTIES FIXTURES_REQUIRED ch07_models)
endforeach()

# A non-default chapter-09 run (2 layers, 2 heads, ReLU, C 32, T_max 16, a separate head), shared
# with tests/cli/ch10.cmake: `--weights RUN` alone loads it, the architecture from its model.txt
# and the vocabulary from its vocab.txt (issue 17).
set(ch09_run ${CMAKE_CURRENT_BINARY_DIR}/ch09_nondefault_run)
add_test(NAME cli.ch09_run_for_07_10
         COMMAND ${CMAKE_COMMAND} -E env --unset=ATTN_DATA
                 $<TARGET_FILE:09_training> --n-embd 32 --n-heads 2 --n-layers 2 --block-size 16
                 --batch-size 4 --steps 20 --eval-interval 20 --eval-iters 2 --tokens 0
                 --activation relu --save ${ch09_run} --overwrite)
set_tests_properties(cli.ch09_run_for_07_10 PROPERTIES LABELS "cli;ch07;ch09;ch10"
                     FIXTURES_SETUP ch09_run)
attn_cli_test(ch07.weights_run_alone EXIT 0 STDOUT
              MATCH "L, H and the variant from its model.txt;.* the vocabulary from its vocab.txt.*ReLU FFN.*lm_head \\+ b .*L = 2, H = 2 \\(head size 16\\).*output head lm_head \\(32, 59\\) and its bias"
              COMMAND 07_causal_lm --weights ${ch09_run} --tokens 5)
# Its step-by-step forward (block by block, ln_f, the separate head) equals lm_forward: the
# program's own claim, checked in self-check mode (every claim held, or exit 1).
attn_cli_test(ch07.weights_run_stepwise_equals_lm_forward EXIT 0
              MATCH "^self-check: [0-9]+ claims held$"
              ENV ATTN_SELF_CHECK=1
              COMMAND 07_causal_lm --weights ${ch09_run}/current --tokens 5)
attn_cli_test(ch07.weights_run_contradicting_layers EXIT 2
              MATCH "--n-layers 4 contradicts model '.*/ch09_nondefault_run', whose model.txt says n_layers 2: drop the flag"
              COMMAND 07_causal_lm --weights ${ch09_run} --n-layers 4)
attn_cli_test(ch07.weights_run_contradicting_embd EXIT 2
              MATCH "--n-embd 64 contradicts model '.*/ch09_nondefault_run', whose wte.npy has C = 32: drop the flag"
              COMMAND 07_causal_lm --weights ${ch09_run} --n-embd 64)
attn_cli_test(ch07.weights_run_contradicting_block_size EXIT 2
              MATCH "--block-size 32 contradicts model '.*/ch09_nondefault_run', whose wpe.npy has T_max = 16"
              COMMAND 07_causal_lm --weights ${ch09_run} --block-size 32)
# --mine on it: the learner's ex07.3 builds the stub's model (GELU, tied head), not this one; one
# line says so and what to run instead, and none of the learner's code is blamed.
attn_cli_test(ch07.mine_other_model EXIT 1
              MATCH "--mine cannot run your ex07\\.3 on model '[^']*ch09_nondefault_run': it has an untied head \\(lm_head\\), relu activation, and your lm_forward builds the stub's model \\(GELU, tied head\\); run 07_causal_lm --mine without --weights"
              COMMAND 07_causal_lm --weights ${ch09_run} --mine)
foreach(t weights_run_alone weights_run_stepwise_equals_lm_forward
          weights_run_contradicting_layers weights_run_contradicting_embd
          weights_run_contradicting_block_size mine_other_model)
  set_tests_properties(cli.ch07.${t} PROPERTIES FIXTURES_REQUIRED ch09_run)
endforeach()
attn_cli_test(ch07.export_not_a_folder EXIT 1
              MATCH "model '.*/data/sonnets\\.txt/model': cannot create the folder"
              COMMAND 07_causal_lm --export ${PROJECT_SOURCE_DIR}/data/sonnets.txt/model)
# A run with chapter 11's parts (issue 19): its folder records them; chapter 07, which takes
# GPT-2's model apart, says so in one line and points to chapter 10, which generates from it.
set(ch09_parts_model ${CMAKE_CURRENT_BINARY_DIR}/ch09_parts_model)
add_test(NAME cli.ch09_parts_run_for_07_10
         COMMAND ${CMAKE_COMMAND} -E env --unset=ATTN_DATA
                 $<TARGET_FILE:09_training> --n-embd 16 --n-heads 4 --n-layers 2 --block-size 8
                 --batch-size 4 --steps 6 --eval-interval 6 --eval-iters 1 --tokens 0
                 --positions rope --normalization rmsnorm --ffn swiglu --n-kv-heads 2
                 --window 4 --no-bias --save ${ch09_parts_model} --overwrite)
set_tests_properties(cli.ch09_parts_run_for_07_10 PROPERTIES LABELS "cli;ch07;ch09;ch10"
                     FIXTURES_SETUP ch09_parts_run)
attn_cli_test(ch07.weights_parts_refused EXIT 1
              MATCH "model '.*/ch09_parts_model' is built from parts this chapter does not take apart \\(rope positions, RMSNorm, SwiGLU, 2 K/V heads for 4, window 4, no biases\\): 10_generation --weights"
              COMMAND 07_causal_lm --weights ${ch09_parts_model})
set_tests_properties(cli.ch07.weights_parts_refused PROPERTIES FIXTURES_REQUIRED ch09_parts_run)
