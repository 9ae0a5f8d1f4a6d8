# Chapter 01 (01_bigram): bad input exits with 2 (command line) or 1 (runtime) and one line on
# stderr. Every value here fails on the shipped corpus and on Tiny Shakespeare alike, so the tests
# pass with or without ATTN_DATA.

# Sizes and floats are checked by attn::Cli.
attn_cli_test(ch01.steps_zero EXIT 2 MATCH "--steps must be at least 1, got 0"
              COMMAND 01_bigram --steps 0)
attn_cli_test(ch01.batch_size_negative EXIT 2 MATCH "--batch-size must be at least 1, got -3"
              COMMAND 01_bigram --batch-size -3)
attn_cli_test(ch01.block_size_zero EXIT 2 MATCH "--block-size must be at least 1, got 0"
              COMMAND 01_bigram --block-size 0)
attn_cli_test(ch01.temperature_zero EXIT 2 MATCH "--temperature must be > 0, got 0"
              COMMAND 01_bigram --temperature 0)
attn_cli_test(ch01.temperature_negative EXIT 2 MATCH "--temperature must be > 0, got -1"
              COMMAND 01_bigram --temperature -1)
attn_cli_test(ch01.lr_not_a_number EXIT 2 MATCH "--lr expects a number, got 'abc'"
              COMMAND 01_bigram --lr abc)
attn_cli_test(ch01.tokens_too_large EXIT 2 MATCH "--tokens must be at most 100000, got 100001"
              COMMAND 01_bigram --tokens 100001)
# The old spelling --sample-length stays as a hidden alias of --tokens (messages name the new flag).
attn_cli_test(ch01.sample_length_alias EXIT 2 MATCH "--tokens must be at most 100000, got 100001"
              COMMAND 01_bigram --sample-length 100001)
attn_cli_test(ch01.unknown_flag EXIT 2 MATCH "unknown option '--frobnicate'"
              COMMAND 01_bigram --frobnicate)

# What the flags ask of the corpus is checked by the chapter, before the walkthrough starts.
attn_cli_test(ch01.start_unknown_character EXIT 1
              MATCH "--start: character '@' \\(U\\+0040\\) is not in the vocabulary"
              COMMAND 01_bigram --start "T@")
# A corpus too short for the windows is a bad file: exit code 1 (as in chapter 04).
set(ch01_short_corpus ${CMAKE_CURRENT_BINARY_DIR}/ch01_short.txt)
file(WRITE ${ch01_short_corpus} "Shall I compare thee to a summer's day?\nThou art more lovely and more temperate.\n")
attn_cli_test(ch01.block_size_beyond_corpus EXIT 1
              MATCH "--block-size 20 needs at least 21 tokens in each split, but the corpus splits into 72 train and 9 validation tokens"
              COMMAND 01_bigram --block-size 20 --data ${ch01_short_corpus})
attn_cli_test(ch01.block_size_too_large EXIT 2 MATCH "--block-size must be at most 1024, got 2000000"
              COMMAND 01_bigram --block-size 2000000)

# A missing, empty or invalid UTF-8 corpus (--data) is reported by the library, attn::read_corpus;
# tests/cli/CMakeLists.txt checks it for every chapter: cli.ch01.generic.data_missing,
# cli.ch01.generic.data_empty and cli.ch01.generic.data_invalid_utf8.
