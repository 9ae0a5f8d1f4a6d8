// Tests for attn/io/keyvalue.hpp, the one `key value` format of model.txt, train.txt and
// case.txt: what a line is, what is skipped, what is refused (in one line naming the line), and
// the three readers built on it refusing the same malformed line.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "attn/io/keyvalue.hpp"

namespace {

// The message of the attn::KeyValueError f() throws, or "(no error)".
std::string error_of(auto&& f) {
  try {
    f();
  } catch (const attn::KeyValueError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_SUITE("common.keyvalue") {

TEST_CASE("one key per line, the rest of the line its value; comments and blanks skipped") {
  const std::vector<attn::KeyValue> kv = attn::parse_key_values(
      "# a model\n"
      "n_layers 2\n"
      "\n"
      "   \t\n"
      "  activation gelu_tanh\r\n"
      "corpus_path /data/my corpus.txt \n"
      "op\tsoftmax");
  REQUIRE(kv.size() == 4);
  CHECK(kv[0].line == 2);
  CHECK(kv[0].key == "n_layers");
  CHECK(kv[0].value == "2");
  CHECK(kv[1].line == 5);
  CHECK(kv[1].key == "activation");
  CHECK(kv[1].value == "gelu_tanh");             // the '\r' of a file saved on Windows dropped
  CHECK(kv[2].value == "/data/my corpus.txt ");  // a path keeps its spaces, at its end too
  CHECK(kv[3].key == "op");
  CHECK(kv[3].value == "softmax");
  CHECK(attn::parse_key_values("").empty());
  CHECK(attn::parse_key_values("# only a comment").empty());
}

TEST_CASE("a line without a value, or a key given twice, is refused naming the line") {
  CHECK(error_of([] { (void)attn::parse_key_values("n_layers 2\nn_heads\n"); }) ==
        "line 2 is not `key value`: 'n_heads'");
  CHECK(error_of([] { (void)attn::parse_key_values("n_heads \n"); }) ==
        "line 1 is not `key value`: 'n_heads '");
  CHECK(error_of([] { (void)attn::parse_key_values("a 1\nb 2\na 3\n"); }) ==
        "line 3: key 'a' appears twice");
  // A binary file's bytes are shown escaped, and only the first 40 of a line.
  CHECK(error_of([] { (void)attn::parse_key_values(std::string("\x1b[2J\xff", 5)); }) ==
        "line 1 is not `key value`: '\\x1b[2J\\xff'");
  const std::string long_line(100, 'x');
  CHECK(error_of([&] { (void)attn::parse_key_values(long_line); }) ==
        "line 1 is not `key value`: '" + std::string(40, 'x') + "'");
}

}  // TEST_SUITE
