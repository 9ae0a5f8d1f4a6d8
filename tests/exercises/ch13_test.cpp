// Don't edit: these tests check your exercises.
// tests/exercises/ch13_test.cpp: chapter 13 (byte-pair encoding by hand, docs/13-tokens.md).
// Expected values are worked out by hand or by plain loops in this file, never from the attn::
// function the reference solution forwards to. The tokenizers are small hand-made vocab.json +
// merges.txt files, loaded with attn::Bpe::load; their single bytes are numbered backwards
// (byte b is id 255 - b), so a solution that takes a byte for its id is caught. Run them with
// build/default/bin/attn-check 13.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/io/bpe.hpp"
#include "exercises.hpp"

// Lists in failure messages: "[1, 2, 3]", "{(5, 5): 2}".
namespace doctest {
template <>
struct StringMaker<std::vector<int>> {
  static String convert(const std::vector<int>& v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
    return (out + "]").c_str();
  }
};
template <>
struct StringMaker<std::map<attn::TokenPair, std::size_t>> {
  static String convert(const std::map<attn::TokenPair, std::size_t>& m) {
    std::string out = "{";
    for (const auto& [pair, n] : m) {
      out += (out.size() > 1 ? ", " : "") + std::string("(") + std::to_string(pair.first) + ", " +
             std::to_string(pair.second) + "): " + std::to_string(n);
    }
    return (out + "}").c_str();
  }
};
}  // namespace doctest

namespace {

namespace fs = std::filesystem;
using Pairs = std::map<attn::TokenPair, std::size_t>;
using Ids = std::vector<int>;

// Every adjacent pair, counted with a plain loop (the independent check for longer lists).
Pairs pairs_by_hand(const Ids& ids) {
  Pairs out;
  for (std::size_t i = 1; i < ids.size(); ++i) out[{ids[i - 1], ids[i]}] += 1;
  return out;
}

// A JSON string literal of a token spelled in GPT-2's alphabet (only '"' and '\\' need escapes).
std::string json_string(const std::string& bytes) {
  std::string out = "\"";
  for (const char c : attn::gpt2_token_text(bytes)) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

// A tokenizer from hand-made files: byte b is id 255 - b; `tokens` get ids 256, 257, ... in
// order; `merges` are (left bytes, right bytes) in rank order.
attn::Bpe tokenizer(const std::vector<std::string>& tokens,
                    const std::vector<std::pair<std::string, std::string>>& merges) {
  const fs::path dir = fs::temp_directory_path() / ("attn_ch13_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string vocab = "{";
  for (int b = 0; b < 256; ++b) {
    vocab += (b ? "," : "") + json_string(std::string(1, static_cast<char>(b))) + ":" +
             std::to_string(255 - b);
  }
  for (std::size_t i = 0; i < tokens.size(); ++i)
    vocab += "," + json_string(tokens[i]) + ":" + std::to_string(256 + i);
  std::ofstream(dir / "vocab.json", std::ios::binary) << vocab << "}";
  std::string lines = "#version: 0.2\n";
  for (const auto& [left, right] : merges)
    lines += attn::gpt2_token_text(left) + " " + attn::gpt2_token_text(right) + "\n";
  std::ofstream(dir / "merges.txt", std::ios::binary) << lines;
  attn::Bpe bpe = attn::Bpe::load(dir);
  fs::remove_all(dir);
  return bpe;
}

int byte(char c) { return 255 - static_cast<unsigned char>(c); }  // the hand-made byte ids

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

TEST_SUITE("ex13.1 Counting pairs") {
TEST_CASE("pairs overlap: [5, 5, 5] holds (5, 5) twice" * doctest::description("hint 1")) {
  CHECK(ex13::count_pairs(Ids{5, 5, 5}) == Pairs{{{5, 5}, 2}});
  CHECK(ex13::count_pairs(Ids{5, 5, 5, 5}) == Pairs{{{5, 5}, 3}});
}

TEST_CASE("every adjacent position counts, the first and the last" *
          doctest::description("hint 1")) {
  CHECK(ex13::count_pairs(Ids{1, 2, 1, 2}) == Pairs{{{1, 2}, 2}, {{2, 1}, 1}});
  CHECK(ex13::count_pairs(Ids{9, 3}) == Pairs{{{9, 3}, 1}});
  CHECK(ex13::count_pairs(Ids{4, 1, 2, 3}) == Pairs{{{4, 1}, 1}, {{1, 2}, 1}, {{2, 3}, 1}});
}

TEST_CASE("fewer than two ids hold no pair" * doctest::description("hint 2")) {
  CHECK(ex13::count_pairs(Ids{}).empty());
  CHECK(ex13::count_pairs(Ids{7}).empty());
}

TEST_CASE("a long list of large ids, against a plain loop" * doctest::description("hint 2")) {
  Ids ids;
  for (int i = 0; i < 500; ++i) ids.push_back(256 + (i * 7919 % 13) * (i % 3 == 0 ? 1 : 50));
  CHECK(ex13::count_pairs(ids) == pairs_by_hand(ids));
}
}  // TEST_SUITE

TEST_SUITE("ex13.2 One merge") {
TEST_CASE("occurrences never overlap: (7, 7) in [7, 7, 7] gives [new, 7]" *
          doctest::description("hint 1")) {
  CHECK(ex13::merge_pair(Ids{7, 7, 7}, {7, 7}, 300) == Ids{300, 7});
  CHECK(ex13::merge_pair(Ids{7, 7, 7, 7}, {7, 7}, 300) == Ids{300, 300});
  CHECK(ex13::merge_pair(Ids{7, 7, 7, 7, 7}, {7, 7}, 300) == Ids{300, 300, 7});
}

TEST_CASE("every occurrence is merged, not only the first" * doctest::description("hint 1")) {
  CHECK(ex13::merge_pair(Ids{1, 2, 3, 1, 2, 1, 2}, {1, 2}, 256) == Ids{256, 3, 256, 256});
  CHECK(ex13::merge_pair(Ids{0, 1, 2, 9, 1, 2}, {1, 2}, 256) == Ids{0, 256, 9, 256});
}

TEST_CASE("the tokens around a merge stay, in order, the last one too" *
          doctest::description("hint 2")) {
  CHECK(ex13::merge_pair(Ids{4, 1, 2, 5}, {1, 2}, 256) == Ids{4, 256, 5});
  CHECK(ex13::merge_pair(Ids{4, 5, 1, 2}, {1, 2}, 256) == Ids{4, 5, 256});
  CHECK(ex13::merge_pair(Ids{1, 2, 1}, {1, 2}, 256) == Ids{256, 1});
  CHECK(ex13::merge_pair(Ids{2, 1}, {1, 2}, 256) == Ids{2, 1});  // order matters
}

TEST_CASE("a pair that does not occur changes nothing; no ids give no ids" *
          doctest::description("hint 2")) {
  CHECK(ex13::merge_pair(Ids{3, 4, 5}, {4, 3}, 256) == Ids{3, 4, 5});
  CHECK(ex13::merge_pair(Ids{3}, {3, 3}, 256) == Ids{3});
  CHECK(ex13::merge_pair(Ids{}, {3, 3}, 256).empty());
}
}  // TEST_SUITE

TEST_SUITE("ex13.3 Encoding by rank") {
TEST_CASE("a chunk with no merge is its bytes' ids, which need not be the bytes" *
          doctest::description("hint 1")) {
  const attn::Bpe bpe = tokenizer({"ab"}, {{"a", "b"}});
  CHECK(ex13::encode_chunk(bpe, "xyz") == Ids{byte('x'), byte('y'), byte('z')});
  CHECK(ex13::encode_chunk(bpe, "b") == Ids{byte('b')});
  CHECK(ex13::encode_chunk(bpe, "").empty());
  // Bytes above 0x7f (a UTF-8 'é' is c3 a9): unsigned, so 0xc3 is id 255 - 195 = 60.
  CHECK(ex13::encode_chunk(bpe, "\xc3\xa9") == Ids{60, 86});
}

TEST_CASE("the pair of lowest rank goes first, wherever it stands" *
          doctest::description("hint 2")) {
  // Rank 0 is (b, c), rank 1 is (a, b): "abc" becomes [a, bc] then [abc], not [ab, c].
  const attn::Bpe bpe = tokenizer({"bc", "ab", "abc"}, {{"b", "c"}, {"a", "b"}, {"a", "bc"}});
  CHECK(ex13::encode_chunk(bpe, "abc") == Ids{258});
  CHECK(ex13::encode_chunk(bpe, "ab") == Ids{257});
  CHECK(ex13::encode_chunk(bpe, "abcab") == Ids{258, 257});
  CHECK(ex13::encode_chunk(bpe, "cab") == Ids{byte('c'), 257});
}

TEST_CASE("a pair learned late never jumps ahead of one learned early" *
          doctest::description("hint 2")) {
  // Rank 0 (e, r), rank 1 (l, o), rank 2 (lo, w), rank 3 (low, er), rank 4 (w, e): in "wer"
  // (w, e) stands first but was learned last, so (e, r) takes the e first.
  const attn::Bpe bpe = tokenizer({"er", "lo", "low", "lower", "we"},
                                  {{"e", "r"}, {"l", "o"}, {"lo", "w"}, {"low", "er"}, {"w", "e"}});
  CHECK(ex13::encode_chunk(bpe, "lower") == Ids{259});
  CHECK(ex13::encode_chunk(bpe, "wer") == Ids{byte('w'), 256});
  CHECK(ex13::encode_chunk(bpe, "we") == Ids{260});
}

TEST_CASE("merging repeats until no adjacent pair has a merge" * doctest::description("hint 3")) {
  const attn::Bpe bpe = tokenizer({"aa", "aaaa"}, {{"a", "a"}, {"aa", "aa"}});
  CHECK(ex13::encode_chunk(bpe, "aaaa") == Ids{257});
  CHECK(ex13::encode_chunk(bpe, "aaaaa") == Ids{257, byte('a')});
  CHECK(ex13::encode_chunk(bpe, "aaaaaa") == Ids{257, 256});
  CHECK(ex13::encode_chunk(bpe, "aaaaaaaa") == Ids{257, 257});
}
}  // TEST_SUITE

TEST_SUITE("ex13.4 A decode that survives split characters") {
TEST_CASE("plain tokens decode to their text" * doctest::description("hint 1")) {
  const attn::Bpe bpe = tokenizer({" the", "cat"}, {});
  CHECK(ex13::decode(bpe, Ids{256, byte(' '), 257, byte('!')}) == " the cat!");
  CHECK(ex13::decode(bpe, Ids{}).empty());
}

TEST_CASE("a character split over two tokens decodes whole" * doctest::description("hint 1")) {
  // 🙂 is f0 9f 99 82, here two tokens of two bytes; é is c3 a9, here two byte tokens.
  const attn::Bpe bpe = tokenizer({"\xf0\x9f", "\x99\x82"}, {{"\xf0", "\x9f"}, {"\x99", "\x82"}});
  CHECK(ex13::decode(bpe, Ids{256, 257}) == "\xf0\x9f\x99\x82");
  CHECK(ex13::decode(bpe, Ids{byte('\xc3'), byte('\xa9')}) == "\xc3\xa9");
  CHECK(ex13::decode(bpe, Ids{byte('x'), 256, 257, byte('y')}) == "x\xf0\x9f\x99\x82y");
}

TEST_CASE("a cut sequence is one U+FFFD, the byte after it read again" *
          doctest::description("hint 2")) {
  // Expected values: CPython's bytes.decode("utf-8", errors="replace").
  const attn::Bpe bpe = tokenizer({"\xf0\x9f"}, {{"\xf0", "\x9f"}});
  CHECK(ex13::decode(bpe, Ids{256}) == kReplacement);                   // f0 9f
  CHECK(ex13::decode(bpe, Ids{256, byte('\x99')}) == kReplacement);     // f0 9f 99
  CHECK(ex13::decode(bpe, Ids{256, byte('a')}) == kReplacement + "a");  // f0 9f a
  CHECK(ex13::decode(bpe, Ids{byte('\xe2'), byte('\x82'), byte('b')}) == kReplacement + "b");
  // f0 9f 98, then c3 a9 (é): the c3 that broke the emoji starts the next character.
  CHECK(ex13::decode(bpe, Ids{256, byte('\x98'), byte('\xc3'), byte('\xa9')}) ==
        kReplacement + "\xc3\xa9");
  CHECK(ex13::decode(bpe, Ids{byte('c'), byte('\xc3')}) == "c" + kReplacement);  // cut at end
}

TEST_CASE("bytes that cannot start a character are one U+FFFD each" *
          doctest::description("hint 2")) {
  const attn::Bpe bpe = tokenizer({}, {});
  CHECK(ex13::decode(bpe, Ids{byte('\x80')}) == kReplacement);
  CHECK(ex13::decode(bpe, Ids{byte('\xff'), byte('\xfe')}) == kReplacement + kReplacement);
  // e2 82 ac is the euro sign; the 80 after it is a stray continuation byte.
  CHECK(ex13::decode(bpe, Ids{byte('\xe2'), byte('\x82'), byte('\xac'), byte('\x80')}) ==
        "\xe2\x82\xac" + kReplacement);
}

TEST_CASE("overlong forms, surrogates and values past U+10FFFF are not characters" *
          doctest::description("hint 3")) {
  const attn::Bpe bpe = tokenizer({}, {});
  const std::string r = kReplacement;
  CHECK(ex13::decode(bpe, Ids{byte('\xc0'), byte('\xaf')}) == r + r);  // overlong '/'
  CHECK(ex13::decode(bpe, Ids{byte('\xe0'), byte('\x80'), byte('\xaf')}) == r + r + r);
  CHECK(ex13::decode(bpe, Ids{byte('\xed'), byte('\xa0'), byte('\x80')}) == r + r + r);  // D800
  CHECK(ex13::decode(bpe, Ids{byte('\xf4'), byte('\x90'), byte('\x80'), byte('\x80')}) ==
        r + r + r + r);
  CHECK(ex13::decode(bpe, Ids{byte('\xf0'), byte('\x80'), byte('\x80')}) == r + r + r);
  // The largest valid ones stay: U+FFFF (ef bf bf) and U+10FFFF (f4 8f bf bf).
  CHECK(ex13::decode(bpe, Ids{byte('\xef'), byte('\xbf'), byte('\xbf')}) == "\xef\xbf\xbf");
  CHECK(ex13::decode(bpe, Ids{byte('\xf4'), byte('\x8f'), byte('\xbf'), byte('\xbf')}) ==
        "\xf4\x8f\xbf\xbf");
}

TEST_CASE("an unknown id is refused" * doctest::description("hint 1")) {
  const attn::Bpe bpe = tokenizer({}, {});
  CHECK_THROWS_AS(ex13::decode(bpe, Ids{256}), std::out_of_range);
  CHECK_THROWS_AS(ex13::decode(bpe, Ids{byte('a'), -1}), std::out_of_range);
}
}  // TEST_SUITE
