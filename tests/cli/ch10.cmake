# Chapter 10 (10_generation): bad command lines exit with 2, bad model folders with 1, each with
# one line on stderr.
attn_cli_test(ch10.tokens_zero EXIT 2 MATCH "--tokens must be at least 1, got 0"
              COMMAND 10_generation --tokens 0)
attn_cli_test(ch10.tokens_negative EXIT 2 MATCH "--tokens must be at least 1, got -3"
              COMMAND 10_generation --tokens -3)
attn_cli_test(ch10.tokens_above_max EXIT 2 MATCH "--tokens must be at most 100000, got 100001"
              COMMAND 10_generation --tokens 100001)
attn_cli_test(ch10.layers_above_max EXIT 2 MATCH "--n-layers must be at most 64, got 65"
              COMMAND 10_generation --n-layers 65)
attn_cli_test(ch10.heads_above_max EXIT 2 MATCH "--n-heads must be at most 64, got 100"
              COMMAND 10_generation --n-heads 100)
# The old spellings still work, as hidden aliases (messages name the new flag).
attn_cli_test(ch10.layers_alias EXIT 2 MATCH "--n-layers must be at most 64, got 65"
              COMMAND 10_generation --layers 65)
attn_cli_test(ch10.heads_alias EXIT 2 MATCH "--n-heads 5 contradicts model"
              COMMAND 10_generation --heads=5)
# The shipped model describes itself (model.txt): a flag may repeat it, never contradict it.
attn_cli_test(ch10.heads_contradict_shipped_model EXIT 2
              MATCH "--n-heads 5 contradicts model '.*sonnets-model', whose model.txt says n_heads 4: drop the flag"
              COMMAND 10_generation --n-heads 5)
attn_cli_test(ch10.layers_contradict_shipped_model EXIT 2
              MATCH "--n-layers 2 contradicts model '.*sonnets-model', whose model.txt says n_layers 4: drop the flag"
              COMMAND 10_generation --n-layers 2)
attn_cli_test(ch10.flags_agree_with_shipped_model EXIT 0 STDOUT MATCH "V 59, T_max 64, C 64, H 4, L 4"
              COMMAND 10_generation --n-layers 4 --n-heads 4 --tokens 5)
# The default prompt leaves the cache room to step: at most half of T_max (64 for the shipped
# model), so the text is not re-filled from its first token on.
attn_cli_test(ch10.default_prompt_lets_the_cache_step EXIT 0 STDOUT
              MATCH "prompt \"From fairest creatures we desire\".*1 prefill of the 32-token prompt, then 32 steps and 167 re-fills"
              COMMAND 10_generation)
attn_cli_test(ch10.top_k_zero EXIT 2 MATCH "--top-k must be at least 1, got 0"
              COMMAND 10_generation --top-k 0)
attn_cli_test(ch10.top_k_above_vocabulary EXIT 2
              MATCH "--top-k must be at most V = 59 \\(the vocabulary size\\), got 60"
              COMMAND 10_generation --top-k 60)
attn_cli_test(ch10.top_p_zero EXIT 2 MATCH "--top-p must be > 0, got 0"
              COMMAND 10_generation --top-p 0)
attn_cli_test(ch10.top_p_negative EXIT 2 MATCH "--top-p must be > 0, got -0.5"
              COMMAND 10_generation --top-p -0.5)
attn_cli_test(ch10.top_p_above_one EXIT 2 MATCH "--top-p must be in \\(0, 1\\], got 1.5"
              COMMAND 10_generation --top-p 1.5)
attn_cli_test(ch10.temperature_zero EXIT 2 MATCH "--temperature must be > 0, got 0"
              COMMAND 10_generation --temperature 0)
attn_cli_test(ch10.temperature_negative EXIT 2 MATCH "--temperature must be > 0, got -1"
              COMMAND 10_generation --temperature -1)
attn_cli_test(ch10.prompt_unknown_character EXIT 1
              MATCH "--prompt: character 'Z' \\(U\\+005A\\) is not in the model's vocabulary \\(59 characters\\)"
              COMMAND 10_generation --prompt Zebra)
attn_cli_test(ch10.weights_not_a_folder EXIT 1
              MATCH "--weights: '/nonexistent/model' does not exist \\(expected a model folder\\)"
              COMMAND 10_generation --weights /nonexistent/model)

# --prompt "": attn_cli_test cannot pass an empty argument (a CMake list drops it).
set(ch10_empty_script ${CMAKE_CURRENT_BINARY_DIR}/ch10_prompt_empty.cmake)
file(WRITE ${ch10_empty_script} [=[
# Written by tests/cli/ch10.cmake: cmake -DEXE=<10_generation> -P ch10_prompt_empty.cmake
execute_process(COMMAND ${EXE} --prompt "" RESULT_VARIABLE code OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
string(REGEX REPLACE "\n$" "" line "${err}")
if(NOT code EQUAL 2 OR line MATCHES "\n" OR
   NOT line MATCHES "^10_generation: error: --prompt must not be empty")
  message(FATAL_ERROR "10_generation --prompt \"\": expected exit code 2 and one line "
                      "'--prompt must not be empty', got exit code ${code} and:\n${err}")
endif()
message("ok: 10_generation --prompt \"\"\n  exit 2, stderr: ${line}")
]=])
add_test(NAME cli.ch10.prompt_empty
         COMMAND ${CMAKE_COMMAND} -E env --unset=ATTN_DATA
                 ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:10_generation> -P ${ch10_empty_script})
set_tests_properties(cli.ch10.prompt_empty PROPERTIES LABELS "cli;ch10")

# --weights. The fixture cli.ch10.make_models exports models with chapter 07 (2 blocks, C 64,
# T_max 32): `good` (the shipped corpus's 59 characters), `abcd` (made on a 6-character corpus)
# with a vocab.txt, then copies: `abcd_no_vocab` (no vocab.txt), `good_small_vocab` (a vocab.txt
# of 6 characters), `unsorted_vocab`, `missing` (no h1.w_v.npy).
set(ch10_models ${CMAKE_CURRENT_BINARY_DIR}/ch10_models)
set(ch10_script ${CMAKE_CURRENT_BINARY_DIR}/ch10_make_models.cmake)
file(WRITE ${ch10_script} [=[
# Written by tests/cli/ch10.cmake: the model folders of the cli.ch10.weights_* tests.
#   cmake -DEXE07=<07_causal_lm> -DDIR=<folder> -P ch10_make_models.cmake
file(REMOVE_RECURSE ${DIR})
file(MAKE_DIRECTORY ${DIR})
file(WRITE ${DIR}/abcd.txt "abcd dcba abcd dcba abcd dcba abcd dcba abcd\n")
function(export_model name)
  execute_process(COMMAND ${EXE07} --export ${DIR}/${name} --max-new-tokens 1 ${ARGN}
                  RESULT_VARIABLE code OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "exporting ${name} failed (exit ${code}): ${err}")
  endif()
endfunction()
export_model(good)
export_model(abcd --data ${DIR}/abcd.txt)
file(COPY ${DIR}/abcd/ DESTINATION ${DIR}/abcd_no_vocab)
file(WRITE ${DIR}/abcd/vocab.txt "\n abcd")
foreach(copy good_small_vocab unsorted_vocab missing no_model_txt)
  file(COPY ${DIR}/good/ DESTINATION ${DIR}/${copy})
endforeach()
file(REMOVE ${DIR}/no_model_txt/model.txt)
file(WRITE ${DIR}/good_small_vocab/vocab.txt "\n abcd")
file(COPY ${DIR}/abcd/ DESTINATION ${DIR}/unsorted_vocab)
file(WRITE ${DIR}/unsorted_vocab/vocab.txt "dcba \n")
file(REMOVE ${DIR}/missing/h1.w_v.npy)
message("ok: model folders in ${DIR}")
]=])
add_test(NAME cli.ch10.make_models
         COMMAND ${CMAKE_COMMAND} -E env --unset=ATTN_DATA
                 ${CMAKE_COMMAND} -DEXE07=$<TARGET_FILE:07_causal_lm> -DDIR=${ch10_models}
                 -P ${ch10_script})
set_tests_properties(cli.ch10.make_models PROPERTIES LABELS "cli;ch10" FIXTURES_SETUP ch10_models)

attn_cli_test(ch10.weights_good EXIT 0 STDOUT
              MATCH "model: loaded from '.*/good' \\(architecture from its model.txt, vocabulary of the corpus\\)"
              COMMAND 10_generation --weights ${ch10_models}/good --n-layers 2 --tokens 5)
attn_cli_test(ch10.weights_alone EXIT 0 STDOUT MATCH "V 59, T_max 32, C 64, H 4, L 2"
              COMMAND 10_generation --weights ${ch10_models}/good --tokens 5)
attn_cli_test(ch10.weights_with_vocab_file EXIT 0 STDOUT
              MATCH "vocabulary from its vocab.txt.*V 6, T_max 32"
              COMMAND 10_generation --weights ${ch10_models}/abcd --n-layers 2 --tokens 5
                      --prompt "abba")
attn_cli_test(ch10.weights_layers_mismatch EXIT 2
              MATCH "--n-layers 4 contradicts model '.*/good', whose model.txt says n_layers 2: drop the flag"
              COMMAND 10_generation --weights ${ch10_models}/good --n-layers 4)
attn_cli_test(ch10.weights_heads_not_dividing EXIT 2 MATCH "--n-heads 5 does not divide C = 64 of model"
              COMMAND 10_generation --weights ${ch10_models}/no_model_txt --n-heads 5)
attn_cli_test(ch10.weights_no_model_txt EXIT 0 STDOUT
              MATCH "no model.txt: L from its blocks, H from --n-heads.*V 59, T_max 32, C 64, H 2, L 2"
              COMMAND 10_generation --weights ${ch10_models}/no_model_txt --n-heads 2 --tokens 5)
attn_cli_test(ch10.weights_no_model_txt_layers EXIT 2
              MATCH "--n-layers 3 contradicts model '.*/no_model_txt', which holds 2 blocks"
              COMMAND 10_generation --weights ${ch10_models}/no_model_txt --n-layers 3)
attn_cli_test(ch10.weights_vocab_file_mismatch EXIT 1
              MATCH "has a vocabulary of 59 tokens \\(wte.npy\\) but its vocab.txt has 6 characters"
              COMMAND 10_generation --weights ${ch10_models}/good_small_vocab --n-layers 2)
attn_cli_test(ch10.weights_corpus_mismatch EXIT 1
              MATCH "has a vocabulary of 6 tokens \\(wte.npy\\) but the corpus \\(no vocab.txt in the folder\\) has 59 characters"
              COMMAND 10_generation --weights ${ch10_models}/abcd_no_vocab --n-layers 2)
attn_cli_test(ch10.weights_vocab_file_unsorted EXIT 1 MATCH "unsorted_vocab/vocab.txt': .*sorted"
              COMMAND 10_generation --weights ${ch10_models}/unsorted_vocab --n-layers 2)
attn_cli_test(ch10.weights_missing_tensor EXIT 1 MATCH "missing h1\\.w_v\\.npy"
              COMMAND 10_generation --weights ${ch10_models}/missing --n-layers 2)
foreach(t weights_good weights_alone weights_with_vocab_file weights_layers_mismatch
          weights_heads_not_dividing weights_no_model_txt weights_no_model_txt_layers
          weights_vocab_file_mismatch weights_corpus_mismatch weights_vocab_file_unsorted
          weights_missing_tensor)
  set_tests_properties(cli.ch10.${t} PROPERTIES FIXTURES_REQUIRED ch10_models)
endforeach()
attn_cli_test(ch10.no_cache_same_text EXIT 0 STDOUT
              MATCH "without the cache \\(--no-cache\\).*The same seed with the cache: the same 70 characters"
              COMMAND 10_generation --no-cache --tokens 70 --top-k 5 --top-p 0.9)
attn_cli_test(ch10.greedy_same_text EXIT 0 STDOUT
              MATCH "greedy \\(the most likely character every time\\).*without the cache: the same 90 characters"
              COMMAND 10_generation --greedy --tokens 90)

# A non-default chapter-09 run (the fixture of tests/cli/ch07.cmake: 2 layers, 2 heads, ReLU,
# C 32, T_max 16): `--weights RUN` alone, every claim held, and the cache steps with the default
# prompt (cut to T_max / 2 = 8 characters at a word's end: "From").
attn_cli_test(ch10.weights_run_alone EXIT 0 STDOUT
              MATCH "architecture from its model.txt, vocabulary from its vocab.txt\\).*V 59, T_max 16, C 32, H 2, L 2.*prompt \"From\".*1 prefill of the 4-token prompt, then 12 steps and 187 re-fills"
              COMMAND 10_generation --weights ${ch09_run})
attn_cli_test(ch10.weights_run_claims_hold EXIT 0 MATCH "^self-check: [0-9]+ claims held$"
              ENV ATTN_SELF_CHECK=1
              COMMAND 10_generation --weights ${ch09_run}/model --tokens 40)
attn_cli_test(ch10.weights_run_contradicting_heads EXIT 2
              MATCH "--n-heads 4 contradicts model '.*/ch09_nondefault_run', whose model.txt says n_heads 2: drop the flag"
              COMMAND 10_generation --weights ${ch09_run} --n-heads 4)
foreach(t weights_run_alone weights_run_claims_hold weights_run_contradicting_heads)
  set_tests_properties(cli.ch10.${t} PROPERTIES FIXTURES_REQUIRED ch09_run)
endforeach()
# A model with chapter 11's parts (rope, window 4, T_max 8): the rolling cache generates 60
# characters past T_max, never re-filled, the same as lm_generate (a claim, self-checked).
attn_cli_test(ch10.weights_parts_rolling EXIT 0 STDOUT
              MATCH "a window of 4.*never re-filled.*the same 60 characters"
              COMMAND 10_generation --weights ${ch09_parts_model} --tokens 60)
attn_cli_test(ch10.weights_parts_claims_hold EXIT 0 MATCH "^self-check: [0-9]+ claims held$"
              ENV ATTN_SELF_CHECK=1
              COMMAND 10_generation --weights ${ch09_parts_model} --tokens 60 --temperature 0.8)
# --mine on it: the learner's cache (ex10.1-ex10.3) cannot run a model with chapter 11's parts;
# one line says so and what to run instead, before any of the walkthrough runs.
attn_cli_test(ch10.mine_parts_model EXIT 1
              MATCH "--mine cannot run your ex10\\.1-ex10\\.3 on model '[^']*ch09_parts_model': its chapter-11 parts generate through the library's rolling cache, not yours; run 10_generation --mine without --weights"
              COMMAND 10_generation --weights ${ch09_parts_model} --mine)
foreach(t weights_parts_rolling weights_parts_claims_hold mine_parts_model)
  set_tests_properties(cli.ch10.${t} PROPERTIES FIXTURES_REQUIRED ch09_parts_run)
endforeach()
# --mine on the shipped stubs: the first exercise the walkthrough calls is named, exit code 1.
# (Each newer exercise alone unfinished, the others answered: cli.ch10.mine_todo_*,
# tests/exercises/.)
attn_cli_test(ch10.mine_unfinished EXIT 1
              MATCH "exercise ex10\\.1 \\(append to the cache\\) is not done yet"
              COMMAND 10_generation --mine)
# Time bounds (issue 29): the work of a run is estimated before it starts (setup.hpp) and held to
# about two minutes; the uncached run the cache is checked against stops at its own budget, so a
# rope model with a window (whose uncached forward runs over the whole context) stays bounded.
attn_cli_test(ch10.tokens_past_the_time_budget EXIT 2
              MATCH "^10_generation: error: --tokens 100000 with L = 4, C = 64, T_max = 64 is about [0-9.]+e\\+12 floating-point operations, more than the limit of 5e\\+12 \\(about two minutes on a 2-core machine\\): lower --tokens"
              COMMAND 10_generation --tokens 100000)
attn_cli_test(ch10.no_cache_past_the_time_budget EXIT 2
              MATCH "^10_generation: error: --tokens 60000 --no-cache .*: lower --tokens or drop --no-cache"
              COMMAND 10_generation --tokens 60000 --no-cache)
attn_cli_test(ch10.weights_parts_check_bounded EXIT 0 STDOUT
              MATCH "the same [0-9]+ characters\\.\n\\(The first [0-9]+ of the 100000 characters: the run without the cache"
              COMMAND 10_generation --weights ${ch09_parts_model} --tokens 100000)
set_tests_properties(cli.ch10.weights_parts_check_bounded PROPERTIES FIXTURES_REQUIRED ch09_parts_run)
