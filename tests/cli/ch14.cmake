# Chapter 14 (14_gpt2): bad command lines exit with 2; broken GPT-2 folders with 1, each with one
# line on stderr naming the file and the field. The broken folders are written at test time by
# make_bad_gpt2 (tests/cli/make_bad_gpt2.cpp) from the shipped fixture tests/gpt2/tiny.
if(NOT TARGET 14_gpt2)
  return()
endif()
add_executable(make_bad_gpt2 ${CMAKE_CURRENT_LIST_DIR}/make_bad_gpt2.cpp)
target_include_directories(make_bad_gpt2 PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_link_libraries(make_bad_gpt2 PRIVATE nlohmann_json::nlohmann_json attn::warnings
                                            attn::sanitizers)
set(ch14_dir ${CMAKE_CURRENT_BINARY_DIR}/ch14_folders)
set(ch14_fixture ${PROJECT_SOURCE_DIR}/tests/gpt2/tiny)
add_test(NAME cli.ch14.make_folders COMMAND make_bad_gpt2 ${ch14_fixture} ${ch14_dir})
set_tests_properties(cli.ch14.make_folders PROPERTIES LABELS "cli;ch14" FIXTURES_SETUP ch14_folders)

file(READ ${ch14_fixture}/expected/prompt_ids.txt ch14_prompt_ids)
string(STRIP "${ch14_prompt_ids}" ch14_prompt_ids)
file(READ ${ch14_fixture}/expected/greedy_ids.txt ch14_greedy_ids)
string(STRIP "${ch14_greedy_ids}" ch14_greedy_ids)

# Usage errors: exit 2.
attn_cli_test(ch14.tokens_zero EXIT 2 MATCH "--tokens must be at least 1, got 0"
              COMMAND 14_gpt2 --tokens 0)
attn_cli_test(ch14.tokens_above_max EXIT 2 MATCH "--tokens must be at most 4096, got 4097"
              COMMAND 14_gpt2 --tokens 4097)
attn_cli_test(ch14.prompt_ids_bad EXIT 2
              MATCH "--prompt-ids must be token ids in \\[0, 320\\) separated by commas, got '320'"
              COMMAND 14_gpt2 --prompt-ids 1,2,320)
attn_cli_test(ch14.prompt_ids_empty_item EXIT 2 MATCH "--prompt-ids must be token ids .* got ''"
              COMMAND 14_gpt2 --prompt-ids 1,,2)
attn_cli_test(ch14.prompt_and_ids EXIT 2 MATCH "--prompt and --prompt-ids both give the prompt"
              COMMAND 14_gpt2 --prompt hi --prompt-ids 1)
attn_cli_test(ch14.top_k_above_v EXIT 2 MATCH "--top-k"
              COMMAND 14_gpt2 --top-k 321)
attn_cli_test(ch14.temperature_zero EXIT 2 MATCH "--temperature"
              COMMAND 14_gpt2 --temperature 0)

# The fixture's greedy ids, exactly, with and without the cache (transformers' generate).
attn_cli_test(ch14.greedy_ids_cached EXIT 0 STDOUT MATCH "^${ch14_greedy_ids}$"
              COMMAND 14_gpt2 --weights ${ch14_dir}/no_tokenizer --greedy --raw
                      --prompt-ids ${ch14_prompt_ids} --tokens 24)
attn_cli_test(ch14.greedy_ids_uncached EXIT 0 STDOUT MATCH "^${ch14_greedy_ids}$"
              COMMAND 14_gpt2 --weights ${ch14_dir}/no_tokenizer --greedy --raw --no-cache
                      --prompt-ids ${ch14_prompt_ids} --tokens 24)
attn_cli_test(ch14.timing_last_line EXIT 0 STDOUT
              MATCH "\ngeneration: 24 tokens in [0-9.]+ s \\([0-9.]+ tokens/s\\)\n$"
              COMMAND 14_gpt2 --greedy --timing)
set_tests_properties(cli.ch14.greedy_ids_cached cli.ch14.greedy_ids_uncached
                     PROPERTIES FIXTURES_REQUIRED ch14_folders)

# Broken folders: exit 1, the file and the field named.
set(st "model.safetensors")
foreach(case
    "truncated|${st}: tensor '.*': data_offsets \\[[0-9]+, [0-9]+\\] run past the data section"
    "truncated_length|${st}: file is truncated: 5 bytes"
    "oversized_header|${st}: header length 1099511627776 runs past the end of the file"
    "overlap|${st}: tensor 'transformer.ln_f.weight': data_offsets \\[[0-9]+, [0-9]+\\] overlap the tensor before it"
    "past_end|${st}: tensor 'transformer.wte.weight': data_offsets \\[[0-9]+, [0-9]+\\] run past the data section"
    "dtype_f64|${st}: tensor 'transformer.wpe.weight': dtype F64 is not supported"
    "missing|${st}: tensor 'transformer.h.1.mlp.c_fc.weight' is missing"
    "config_disagrees|${st}: tensor 'transformer.h.0.attn.c_attn.bias' is \\(96,\\), but .*config.json says \\(144,\\)")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 message)
  attn_cli_test(ch14.bad_${name} EXIT 1 MATCH "^14_gpt2: error: .*${message}"
                COMMAND 14_gpt2 --weights ${ch14_dir}/${name})
  set_tests_properties(cli.ch14.bad_${name} PROPERTIES FIXTURES_REQUIRED ch14_folders)
endforeach()
attn_cli_test(ch14.prompt_without_tokenizer EXIT 1
              MATCH "--prompt needs a tokenizer: .*no_tokenizer has no vocab.json and merges.txt"
              COMMAND 14_gpt2 --weights ${ch14_dir}/no_tokenizer --prompt hello)
attn_cli_test(ch14.weights_missing EXIT 1
              MATCH "^14_gpt2: error: --weights: '/nonexistent' does not exist \\(expected a GPT-2 folder: config.json, model.safetensors, vocab.json, merges.txt\\)$"
              COMMAND 14_gpt2 --weights /nonexistent)
set_tests_properties(cli.ch14.prompt_without_tokenizer PROPERTIES FIXTURES_REQUIRED ch14_folders)
