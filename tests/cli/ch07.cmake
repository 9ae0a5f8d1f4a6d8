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
              MATCH "--weights: '/nonexistent/model' is not a folder"
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

foreach(copy missing misshaped corrupt)
  file(COPY ${DIR}/good/ DESTINATION ${DIR}/${copy})
endforeach()
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
# An old spelling (--layers) is a hidden alias of --n-layers: accepted, and the message names the
# flag --help shows.
attn_cli_test(ch07.weights_more_blocks_than_layers EXIT 2
              MATCH "--n-layers 1 but model '.*/good' has 2 blocks"
              COMMAND 07_causal_lm --weights ${ch07_models}/good --layers 1)
attn_cli_test(ch07.weights_heads_not_dividing EXIT 2 MATCH "--n-heads 5 does not divide C = 64"
              COMMAND 07_causal_lm --weights ${ch07_models}/good --n-heads 5)
foreach(t weights_round_trip weights_missing_tensor weights_misshaped_tensor weights_corrupt_file
          weights_other_vocabulary weights_more_blocks_than_layers weights_heads_not_dividing)
  set_tests_properties(cli.ch07.${t} PROPERTIES FIXTURES_REQUIRED ch07_models)
endforeach()
attn_cli_test(ch07.export_not_a_folder EXIT 1
              MATCH "model '.*/data/sonnets\\.txt/model': cannot create the folder"
              COMMAND 07_causal_lm --export ${PROJECT_SOURCE_DIR}/data/sonnets.txt/model)
