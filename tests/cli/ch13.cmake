# Chapter 13 (13_tokens): the tokenizer tools on the committed tokenizer tests/tokens/sonnets-1024
# (what `13_tokens --train data/sonnets.txt --vocab-size 1024 --save DIR` writes: ch13_train.sh
# checks that it still does, byte for byte), and bad command lines (exit 2) and bad tokenizer
# files (exit 1), each with one line on stderr.
set(ch13_tok ${PROJECT_SOURCE_DIR}/tests/tokens/sonnets-1024)
attn_cli_test(ch13.encode EXIT 0 STDOUT MATCH "^842 308 764 535 337 288 262 688 295 456 63\n$"
              COMMAND 13_tokens --tokenizer ${ch13_tok} --encode "Shall I compare thee to a summer's day?")
attn_cli_test(ch13.encode_emoji EXIT 0 STDOUT MATCH "^240 159 153 130 287 97 195 175 268\n$"
              COMMAND 13_tokens --tokenizer ${ch13_tok} --encode "🙂 naïve")
attn_cli_test(ch13.decode EXIT 0 STDOUT MATCH "^Shall I compare thee to a summer's day[?]\n$"
              COMMAND 13_tokens --tokenizer ${ch13_tok} --decode "842 308 764 535 337 288 262 688 295 456 63")
attn_cli_test(ch13.decode_commas EXIT 0 STDOUT MATCH "^🙂 naïve\n$"
              COMMAND 13_tokens --tokenizer ${ch13_tok} --decode "240,159,153,130,287,97,195,175,268")
# Half an emoji: one U+FFFD, as Python's errors="replace".
attn_cli_test(ch13.decode_split EXIT 0 STDOUT MATCH "^x�\n$"
              COMMAND 13_tokens --tokenizer ${ch13_tok} --decode "120 240 159")
attn_cli_test(ch13.help EXIT 0 STDOUT MATCH "--tokenizer.*--encode.*--decode"
              COMMAND 13_tokens --help)

attn_cli_test(ch13.vocab_size_below_bytes EXIT 2 MATCH "--vocab-size must be at least 256, got 255"
              COMMAND 13_tokens --vocab-size 255)
attn_cli_test(ch13.vocab_size_above_max EXIT 2 MATCH "--vocab-size must be at most 65536, got 65537"
              COMMAND 13_tokens --vocab-size 65537)
attn_cli_test(ch13.encode_without_tokenizer EXIT 2 MATCH "--encode needs --tokenizer DIR"
              COMMAND 13_tokens --encode hello)
attn_cli_test(ch13.decode_without_tokenizer EXIT 2 MATCH "--decode needs --tokenizer DIR"
              COMMAND 13_tokens --decode 1)
attn_cli_test(ch13.tokenizer_alone EXIT 2 MATCH "--tokenizer DIR needs --encode TEXT or --decode IDS"
              COMMAND 13_tokens --tokenizer ${ch13_tok})
attn_cli_test(ch13.encode_and_decode EXIT 2 MATCH "--encode and --decode exclude each other"
              COMMAND 13_tokens --tokenizer ${ch13_tok} --encode a --decode 1)
attn_cli_test(ch13.train_and_tokenizer EXIT 2 MATCH "--train and --tokenizer exclude each other"
              COMMAND 13_tokens --train ${PROJECT_SOURCE_DIR}/data/sonnets.txt --tokenizer ${ch13_tok} --encode a)
attn_cli_test(ch13.save_without_train EXIT 2 MATCH "--save DIR needs --train FILE"
              COMMAND 13_tokens --save /tmp/nowhere)
attn_cli_test(ch13.mine_with_tool EXIT 2 MATCH "--mine runs the walkthrough"
              COMMAND 13_tokens --mine --tokenizer ${ch13_tok} --encode a)
attn_cli_test(ch13.decode_unknown_id EXIT 2
              MATCH "--decode: token id 1024 is outside \\[0, 1024\\) of the tokenizer in"
              COMMAND 13_tokens --tokenizer ${ch13_tok} --decode "5 1024")
attn_cli_test(ch13.decode_not_a_number EXIT 2 MATCH "--decode: '-1' is not a token id"
              COMMAND 13_tokens --tokenizer ${ch13_tok} --decode "5 -1")
attn_cli_test(ch13.decode_huge EXIT 2 MATCH "--decode: '99999999999999999999' is not a token id"
              COMMAND 13_tokens --tokenizer ${ch13_tok} --decode 99999999999999999999)

# Bad files: exit 1, the file and what was wrong.
attn_cli_test(ch13.train_missing_file EXIT 1 MATCH "cannot read corpus '/nonexistent/x.txt': No such file"
              COMMAND 13_tokens --train /nonexistent/x.txt)
attn_cli_test(ch13.tokenizer_missing EXIT 1
              MATCH "tokenizer folder '/nonexistent' does not exist \\(expected a folder with vocab.json and merges.txt\\)$"
              COMMAND 13_tokens --tokenizer /nonexistent --encode a)
set(ch13_bad ${CMAKE_CURRENT_BINARY_DIR}/ch13_bad)
attn_cli_test(ch13.vocab_not_object EXIT 1
              MATCH "tokenizer file '.*/list/vocab.json': expected one JSON object .*, got array"
              PREPARE "mkdir -p ${ch13_bad}/list && echo '[1, 2]' > ${ch13_bad}/list/vocab.json && : > ${ch13_bad}/list/merges.txt"
              COMMAND 13_tokens --tokenizer ${ch13_bad}/list --encode a)
attn_cli_test(ch13.merges_unknown_token EXIT 1
              MATCH "tokenizer file '.*/unknown/merges.txt': line 3: token 'qqq' is not in vocab.json"
              PREPARE "mkdir -p ${ch13_bad}/unknown && cp ${ch13_tok}/vocab.json ${ch13_bad}/unknown/ && printf '#version: 0.2\\nĠ t\\nqqq u\\n' > ${ch13_bad}/unknown/merges.txt"
              COMMAND 13_tokens --tokenizer ${ch13_bad}/unknown --decode 1)

# --train --save writes the committed tokenizer again, byte for byte, and what it writes loads.
add_test(NAME cli.ch13.train_save_same_files
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/ch13_train.sh $<TARGET_FILE:13_tokens>
                 ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/ch13_train)
set_tests_properties(cli.ch13.train_save_same_files PROPERTIES LABELS "cli;ch13")

# --compare: chapter 09's model on characters and on BPE tokens.
attn_cli_test(ch13.compare_with_tool EXIT 2 MATCH "--compare runs on its own"
              COMMAND 13_tokens --compare --tokenizer ${ch13_tok} --encode a)
attn_cli_test(ch13.steps_without_compare EXIT 2 MATCH "--steps needs --compare"
              COMMAND 13_tokens --steps 5)
attn_cli_test(ch13.steps_zero EXIT 2 MATCH "--steps must be at least 1, got 0"
              COMMAND 13_tokens --compare --steps 0)
attn_cli_test(ch13.steps_above_max EXIT 2 MATCH "--steps must be at most 20000, got 20001"
              COMMAND 13_tokens --compare --steps 20001)
attn_cli_test(ch13.compare_short_corpus EXIT 1
              MATCH "--compare: the corpus .*short.txt \\(--data\\) is too short: each split needs more than 32 characters"
              PREPARE "mkdir -p ${ch13_bad} && printf 'To be or not' > ${ch13_bad}/short.txt"
              COMMAND 13_tokens --compare --data ${ch13_bad}/short.txt)
