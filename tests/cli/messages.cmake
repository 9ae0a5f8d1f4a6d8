# tests/cli/messages.cmake: every error message says what happened and what to do (issue 29,
# item 7). A hostile sweep (every flag of every binary with bad values, broken model folders,
# tokenizers and GPT-2 folders) found these classes; each has a test here (ctest -L robust):
#   raw bytes     a value or path quoted in a message reaches the terminal escaped, never raw
#                 (expect.cmake also fails on any raw ESC)
#   named         a word-valued flag's message names the flag
#   wrong blame   an empty folder, a missing path or a file where a folder belongs is said as
#                 such, not as "n_layers must be at least 1, got 0" or a file missing inside it
#   ignored       a flag that would change nothing (--ladder-rows without --ladder, --svg '') is
#                 refused instead of ignored without a word
#   duplicated    the same text twice in one message
#   the reason    a failed write says why (File too large), a parse error in the file's terms
set(messages_dir ${CMAKE_CURRENT_BINARY_DIR}/messages)
file(MAKE_DIRECTORY ${messages_dir})
string(ASCII 27 esc)
string(ASCII 255 byte_ff)

# Raw bytes: the flag parser, a chapter's own message, and the tools.
attn_cli_test(robust.messages.size_flag_escaped EXIT 2
              MATCH "^01_bigram: error: --steps expects an integer, got '\\\\x1b\\[31m\\\\xff' \\(see --help\\)$"
              COMMAND 01_bigram --steps "${esc}[31m${byte_ff}")
attn_cli_test(robust.messages.unexpected_argument_escaped EXIT 2
              MATCH "^02_averaging: error: unexpected argument '\\\\x1b\\[31m\\\\xff' \\(see --help\\)$"
              COMMAND 02_averaging "${esc}[31m${byte_ff}")
attn_cli_test(robust.messages.chapter_message_escaped EXIT 2
              MATCH "^06_transformer_block: error: --norm: unknown norm placement '\\\\x1b\\[31m\\\\xff': expected pre or post"
              COMMAND 06_transformer_block --norm "${esc}[31m${byte_ff}")
attn_cli_test(robust.messages.attn_check_escaped EXIT 2
              MATCH "^attn-check: error: '\\\\x1b\\[31m\\\\xff' is neither a chapter"
              COMMAND attn-check "${esc}[31m${byte_ff}")
attn_cli_test(robust.messages.golden_escaped EXIT 2
              MATCH "^attn-golden: error: '/nonexistent/\\\\x1b\\[31m\\\\xff' is not a folder"
              COMMAND attn-golden "/nonexistent/${esc}[31m${byte_ff}")
attn_cli_test(robust.messages.bench_unknown_argument EXIT 2
              MATCH "^attn-bench: error: unexpected argument 'junk': Google Benchmark's flags start with --benchmark_ \\(attn-bench --help lists them\\)$"
              COMMAND attn-bench junk --also-unknown)

# Named: 09's word-valued flags, each in its own message.
foreach(entry "activation;unknown activation 'bogus': expected relu, gelu or gelu_tanh"
              "init;unknown init 'bogus': expected gpt2 or pytorch"
              "schedule;unknown learning-rate schedule 'bogus': expected constant or cosine")
  list(GET entry 0 flag)
  list(GET entry 1 says)
  attn_cli_test(robust.ch09.${flag}_named EXIT 2
                MATCH "^09_training: error: --${flag}: ${says} \\(see --help\\)$"
                COMMAND 09_training --${flag} bogus)
endforeach()

# Wrong blame: an empty folder is no model (07, 10), a path that is not there or not a folder is
# named with its flag (07, 10, 13, 14), a GPT-2 config lacking its context length names the key
# that is missing.
foreach(chapter 07_causal_lm 10_generation)
  string(SUBSTRING ${chapter} 0 2 nn)
  set(empty ${messages_dir}/empty_model_${nn})
  attn_cli_test(robust.ch${nn}.weights_empty_folder EXIT 1
                PREPARE "rm -rf ${empty} && mkdir -p ${empty}"
                MATCH "^${chapter}: error: model '.*empty_model_${nn}': holds no model \\(no wte.npy, no h0.w_q.npy\\): give a folder written by 07_causal_lm --export, or a chapter-09 run or checkpoint$"
                COMMAND ${chapter} --weights ${empty})
endforeach()
set(gpt2_expected "expected a GPT-2 folder: config.json, model.safetensors, vocab.json, merges.txt")
attn_cli_test(robust.ch14.weights_not_a_folder EXIT 1
              MATCH "^14_gpt2: error: --weights: '/dev/null' is not a folder \\(${gpt2_expected}\\)$"
              COMMAND 14_gpt2 --weights /dev/null)
set(no_positions ${messages_dir}/gpt2_no_positions)
attn_cli_test(robust.ch14.config_without_n_positions EXIT 1
              PREPARE "rm -rf ${no_positions} && cp -R ${PROJECT_SOURCE_DIR}/tests/gpt2/tiny ${no_positions} && sed -i '/n_positions/d' ${no_positions}/config.json"
              MATCH "config.json: no n_positions \\(nor its older name n_ctx\\): a GPT-2 config names its context length$"
              COMMAND 14_gpt2 --weights ${no_positions})
attn_cli_test(robust.ch13.tokenizer_not_a_folder EXIT 1
              MATCH "^13_tokens: error: tokenizer folder '/dev/null' is not a folder \\(expected a folder with vocab.json and merges.txt\\)$"
              COMMAND 13_tokens --tokenizer /dev/null --encode hello)
# ... and a parse error in the file's terms (where), not the JSON library's class names.
set(bad_json ${messages_dir}/tokenizer_bad_json)
attn_cli_test(robust.ch13.vocab_not_json EXIT 1
              PREPARE "rm -rf ${bad_json} && cp -R ${PROJECT_SOURCE_DIR}/tests/tokens/sonnets-1024 ${bad_json} && printf '{\"a\": 1,' > ${bad_json}/vocab.json"
              MATCH "vocab.json': not valid JSON \\(error at byte 9\\)$"
              COMMAND 13_tokens --tokenizer ${bad_json} --encode hello)

# Ignored: a flag that would change nothing is refused.
attn_cli_test(robust.ch09.ladder_rows_without_ladder EXIT 2
              MATCH "^09_training: error: --ladder-rows sets up the ladder: it needs --ladder \\(see --help\\)$"
              COMMAND 09_training --ladder-rows 0,5)
# (An empty --svg, which would write the figures into the current folder, is refused too:
# tests/common/test_cli.cpp, since a ctest command line cannot hold an empty argument.)

# Duplicated: the list is quoted only when it holds more than the item at fault.
attn_cli_test(robust.ch12.sweep_one_bad_item EXIT 2
              MATCH "^12_fast_attention: error: --sweep: 'abc' is not a length \\(a whole number from 1 to 32768\\) \\(see --help\\)$"
              COMMAND 12_fast_attention --sweep abc)

# The reason: a tokenizer saved past a file size limit says why it failed.
attn_cli_test(robust.ch13.save_file_size_limit EXIT 1 FILE_SIZE_LIMIT 1
              PREPARE "rm -rf ${messages_dir}/tokenizer_limited"
              MATCH "^13_tokens: error: cannot write tokenizer file '.*tokenizer_limited/vocab.json': File too large$"
              COMMAND 13_tokens --train ${PROJECT_SOURCE_DIR}/data/sonnets.txt --vocab-size 260
                      --save ${messages_dir}/tokenizer_limited)

# An on/off flag given a value: said in the learner's terms, not CLI11's "could not convert".
attn_cli_test(robust.messages.on_off_flag_with_value EXIT 2
              MATCH "^03_masked_softmax: error: --timing is an on/off flag: give it alone, without '=maybe' \\(see --help\\)$"
              COMMAND 03_masked_softmax --timing=maybe)

# A library class name is not the learner's word: an empty vocab.txt is said in the file's terms.
set(empty_vocab ${messages_dir}/model_empty_vocab)
attn_cli_test(robust.ch10.vocab_txt_empty EXIT 1
              PREPARE "rm -rf ${empty_vocab} && cp -R ${PROJECT_SOURCE_DIR}/data/sonnets-model ${empty_vocab} && rm -f ${empty_vocab}/MANIFEST.txt && : > ${empty_vocab}/vocab.txt"
              MATCH "vocab.txt': a vocabulary needs at least one character \\(expected the vocabulary's characters, sorted, each once\\)$"
              COMMAND 10_generation --weights ${empty_vocab})

# Leftovers of the sweep. A model.txt size past what size_t holds says its key, the file, the
# value and the range, as a size within size_t but past 2^20 does (07 and 10 read it alike).
foreach(chapter 07_causal_lm 10_generation)
  string(SUBSTRING ${chapter} 0 2 nn)
  set(overflow ${messages_dir}/model_heads_overflow_${nn})
  attn_cli_test(robust.ch${nn}.model_txt_size_overflow EXIT 1
                PREPARE "rm -rf ${overflow} && cp -R ${PROJECT_SOURCE_DIR}/data/sonnets-model ${overflow} && rm -f ${overflow}/MANIFEST.txt && sed -i 's/^n_heads .*/n_heads 99999999999999999999/' ${overflow}/model.txt"
                MATCH "^${chapter}: error: model '.*model_heads_overflow_${nn}': model.txt line 3: n_heads is '99999999999999999999', expected a whole number in \\[1, 1048576\\]$"
                COMMAND ${chapter} --weights ${overflow})
endforeach()
# ffn_hidden takes 0 (unset), and says so in its range.
set(ffn_minus ${messages_dir}/model_ffn_minus)
attn_cli_test(robust.ch07.model_txt_optional_size_range EXIT 1
              PREPARE "rm -rf ${ffn_minus} && cp -R ${PROJECT_SOURCE_DIR}/data/sonnets-model ${ffn_minus} && rm -f ${ffn_minus}/MANIFEST.txt && sed -i 's/^ffn_hidden .*/ffn_hidden -1/' ${ffn_minus}/model.txt"
              MATCH "model.txt line [0-9]+: ffn_hidden is '-1', expected a whole number in \\[0, 1048576\\]$"
              COMMAND 07_causal_lm --weights ${ffn_minus})

# An empty id in --decode's list (two commas, a comma first or last) is named by its place.
set(ch13_tok ${PROJECT_SOURCE_DIR}/tests/tokens/sonnets-1024)
foreach(entry "between;842,,308;2" "first;,842;1" "last;842 308,;3")
  list(GET entry 0 where)
  list(GET entry 1 ids)
  list(GET entry 2 place)
  attn_cli_test(robust.ch13.decode_empty_id_${where} EXIT 2
                MATCH "^13_tokens: error: --decode: id ${place} is empty \\(a comma with no id on one side\\): ids are whole numbers, separated by spaces or commas \\(see --help\\)$"
                COMMAND 13_tokens --tokenizer ${ch13_tok} --decode "${ids}")
endforeach()

# An empty --table-rows or --table-seeds is refused, naming the flag (and the row names), not
# read as "all rows" or "the table's own seeds".
attn_cli_test(robust.ch11.table_rows_empty EXIT 2 EMPTY_LAST_ARG
              MATCH "^11_modern_attention: error: --table-rows is empty: give row names separated by commas \\(base, .*\\) \\(see --help\\)$"
              COMMAND 11_modern_attention --table-rows)
attn_cli_test(robust.ch11.table_seeds_empty EXIT 2 EMPTY_LAST_ARG
              MATCH "^11_modern_attention: error: --table-seeds is empty: give up to 16 seeds \\(whole numbers >= 0\\) separated by commas, e.g. 1,2 \\(see --help\\)$"
              COMMAND 11_modern_attention --table-seeds)

# 07 calls a loose model folder's broken vocab.txt the model folder's, not a checkpoint's.
set(empty_vocab_07 ${messages_dir}/model_empty_vocab_07)
attn_cli_test(robust.ch07.vocab_txt_empty EXIT 1
              PREPARE "rm -rf ${empty_vocab_07} && cp -R ${PROJECT_SOURCE_DIR}/data/sonnets-model ${empty_vocab_07} && rm -f ${empty_vocab_07}/MANIFEST.txt && : > ${empty_vocab_07}/vocab.txt"
              MATCH "^07_causal_lm: error: model folder '.*model_empty_vocab_07': vocab.txt: empty vocabulary$"
              COMMAND 07_causal_lm --weights ${empty_vocab_07})
