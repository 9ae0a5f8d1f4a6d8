// Tests for attn/io/bpe.hpp, chapter 13's byte-level BPE: the pattern's chunks, GPT-2's byte
// alphabet, Python's errors="replace", the pair counting and merging pieces, training, encoding
// by rank, the files written and read back, and every kind of bad tokenizer file refused in one
// line naming the file and what was wrong. (The ids of Hugging Face's and tiktoken's tokenizers
// on hard strings are checked by tests/tokens/hard_strings.)
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "attn/io/bpe.hpp"
#include "attn/io/corpus.hpp"

namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / ("attn_test_bpe_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

void write(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A JSON string literal of `text` (only '"' and '\\' of the byte alphabet need escaping).
std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

// The 256 bytes (id = byte) and then `extra` tokens given as bytes, as a vocab.json text.
std::string vocab_json(const std::vector<std::string>& extra) {
  std::string out = "{";
  int id = 0;
  for (int b = 0; b < 256; ++b, ++id) {
    out += (id ? "," : "") +
           json_string(attn::gpt2_token_text(std::string(1, static_cast<char>(b)))) + ":" +
           std::to_string(id);
  }
  for (const std::string& token : extra) {
    out += "," + json_string(attn::gpt2_token_text(token)) + ":" + std::to_string(id++);
  }
  return out + "}";
}

// The message of the attn::BpeError that loading `dir` throws, or "(no error)".
std::string load_error(const fs::path& dir) {
  try {
    (void)attn::Bpe::load(dir);
  } catch (const attn::BpeError& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<std::string> chunks_of(std::string_view text) {
  std::vector<std::string> out;
  for (const auto chunk : attn::pretokenize(text)) out.emplace_back(chunk);
  return out;
}

}  // namespace

TEST_SUITE("common.bpe") {

TEST_CASE("GPT-2's pattern cuts words with their leading space, contractions, numbers, runs") {
  using V = std::vector<std::string>;
  CHECK(chunks_of("Hello world's end") == V{"Hello", " world", "'s", " end"});
  // Contractions are lower case only: "'S" is punctuation then a word, as in GPT-2.
  CHECK(chunks_of("HE'S here") == V{"HE", "'", "S", " here"});
  CHECK(chunks_of("we'll they've I'm") == V{"we", "'ll", " they", "'ve", " I", "'m"});
  CHECK(chunks_of("in 2024, 3.14!") == V{"in", " 2024", ",", " 3", ".", "14", "!"});
  // A run of spaces gives its last space to the next word; trailing spaces stay one chunk.
  CHECK(chunks_of("a   b  ") == V{"a", "  ", " b", "  "});
  // "\s+(?!\S)" leaves the last newline before a word to "\s+": two chunks, as in Python.
  CHECK(chunks_of("end.\n\nNext") == V{"end", ".", "\n", "\n", "Next"});
  // \p{L} is Unicode letters: accented, CJK; an emoji is neither letter nor number.
  CHECK(chunks_of("café 東京 🙂!") == V{"café", " 東京", " 🙂!"});
  CHECK(attn::pretokenize("").empty());
}

TEST_CASE("bytes that are not UTF-8 are kept as chunks of their own") {
  const std::string text = "ab\xff\xfe cd\xc3";
  std::string joined;
  for (const auto chunk : attn::pretokenize(text)) joined += chunk;
  CHECK(joined == text);
  CHECK(chunks_of(text) == std::vector<std::string>{"ab", "\xff\xfe", " cd", "\xc3"});
}

TEST_CASE("GPT-2's byte alphabet: printable bytes as themselves, the other 68 from U+0100") {
  CHECK(attn::gpt2_byte_char('a') == U'a');
  CHECK(attn::gpt2_byte_char('!') == U'!');
  CHECK(attn::gpt2_byte_char(0x00) == U'\u0100');
  CHECK(attn::gpt2_byte_char(' ') == U'\u0120');   // Ġ
  CHECK(attn::gpt2_byte_char('\n') == U'\u010A');  // Ċ
  CHECK(attn::gpt2_byte_char(0xAD) == U'\u0143');  // the soft hyphen, the last one moved
  CHECK(attn::gpt2_token_text(" the") == "\xC4\xA0the");
  std::map<char32_t, int> seen;
  for (int b = 0; b < 256; ++b) ++seen[attn::gpt2_byte_char(static_cast<unsigned char>(b))];
  CHECK(seen.size() == 256);  // a bijection
}

TEST_CASE("invalid UTF-8 becomes U+FFFD as CPython's errors='replace' does") {
  // Expected values from CPython 3.11: bytes.decode("utf-8", errors="replace").
  const std::string r = "\xEF\xBF\xBD";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"caf\xc3", "caf" + r},                    // truncated at the end: one
      {"\xf0\x9f\x98", r},                       // 3 of an emoji's 4 bytes: one
      {"\xf0\x80\x80", r + r + r},               // overlong: each byte
      {"\xed\xa0\x80", r + r + r},               // a surrogate: each byte
      {"\xc0\xaf", r + r},                       // C0 is never a lead byte
      {"\xe2\x82\xac\x80", "\xe2\x82\xac" + r},  // euro sign, then a stray continuation
      {"\xf4\x90\x80\x80", r + r + r + r},       // above U+10FFFF
      {"\xe0\x80", r + r},                       // overlong 3-byte start
      {"\xff\xfe", r + r},                       // bytes UTF-8 never uses
      {"a\xe2\x82"
       "b",
       "a" + r + "b"},                                 // cut short by an ASCII byte
      {"\xf0\x9f\x98\xc3\xa9", r + "\xc3\xa9"},        // cut short by the start of 'é'
      {"ok \xf0\x9f\x99\x82", "ok \xf0\x9f\x99\x82"},  // valid stays
  };
  for (const auto& [in, expected] : cases) {
    CAPTURE(in);
    CHECK(attn::utf8_replace(in) == expected);
  }
}

TEST_CASE("pairs are counted overlapping, merged left to right without overlap") {
  const std::vector<int> ids = {1, 1, 1, 2, 1, 1};
  const auto counts = attn::count_pairs(ids);
  CHECK(counts.at({1, 1}) == 3);
  CHECK(counts.at({1, 2}) == 1);
  CHECK(counts.at({2, 1}) == 1);
  CHECK(counts.size() == 3);
  CHECK(attn::count_pairs(std::vector<int>{7}).empty());
  CHECK(attn::merge_pair(ids, {1, 1}, 9) == std::vector<int>{9, 1, 2, 9});
  CHECK(attn::merge_pair(std::vector<int>{1, 1, 1, 1}, {1, 1}, 9) == std::vector<int>{9, 9});
  CHECK(attn::merge_pair(ids, {2, 2}, 9) == ids);
}

TEST_CASE("training merges the most frequent pair first, ties to the smallest pair") {
  // The chunks are "ab", " ab", " ab", " cd", " cd": (a, b) occurs 3 times and is merged first.
  std::vector<attn::LearnedMerge> learned;
  const attn::Bpe bpe = attn::Bpe::train(
      "ab ab ab cd cd", 256 + 4, [&](const attn::LearnedMerge& m) { learned.push_back(m); });
  REQUIRE(learned.size() >= 2);
  CHECK(learned[0].merge.left == 'a');
  CHECK(learned[0].merge.right == 'b');
  CHECK(learned[0].merge.id == 256);
  CHECK(learned[0].count == 3);
  // Then (' ', ab), (' ', c) and (c, d) occur twice each: the tie goes to the smallest pair,
  // (' ', 'c') = (32, 99), before (32, 256) and (99, 100).
  CHECK(learned[1].merge.left == ' ');
  CHECK(learned[1].merge.right == 'c');
  CHECK(learned[1].count == 2);
  CHECK(bpe.vocab_size() == 260);
  CHECK(bpe.token_bytes(256) == "ab");
  CHECK(bpe.token_bytes(257) == " c");
  CHECK(bpe.merges().size() == 4);
}

TEST_CASE("training is deterministic and encoding round-trips any bytes") {
  const attn::Corpus corpus = attn::read_corpus(attn::shipped_corpus_path());
  const attn::Bpe a = attn::Bpe::train(corpus.text, 400);
  const attn::Bpe b = attn::Bpe::train(corpus.text, 400);
  REQUIRE(a.vocab_size() == 400);
  REQUIRE(a.merges().size() == b.merges().size());
  for (std::size_t r = 0; r < a.merges().size(); ++r) {
    CHECK(a.merges()[r].left == b.merges()[r].left);
    CHECK(a.merges()[r].right == b.merges()[r].right);
    CHECK(a.merges()[r].id == b.merges()[r].id);
  }
  const std::vector<std::string> texts = {corpus.text.substr(0, 2000),
                                          "Shall I compare thee to a summer's day?",
                                          "naïve café 東京 🙂🙂",
                                          "  trailing  \n\n",
                                          "\xff\xc3(\xf0\x9f",
                                          ""};
  for (const std::string& text : texts) {
    CAPTURE(text);
    const std::vector<int> ids = a.encode(text);
    CHECK(a.bytes_of(ids) == text);
    CHECK(a.decode(ids) == attn::utf8_replace(text));
  }
  // The corpus compresses: fewer tokens than bytes.
  CHECK(a.encode(corpus.text.substr(0, 2000)).size() < 1500);
}

TEST_CASE("training stops when no pair is left") {
  const attn::Bpe bpe = attn::Bpe::train("aaaa", 1000);
  // "aaaa" -> (a,a) -> [aa, aa] -> (aa,aa) -> [aaaa]: two merges.
  CHECK(bpe.vocab_size() == 258);
  CHECK(bpe.encode("aaaa") == std::vector<int>{257});
  CHECK_THROWS_AS((void)attn::Bpe::train("x", 255), std::invalid_argument);
}

TEST_CASE("encoding applies merges by rank, not by position") {
  TempDir dir("rank");
  // Rank 0 merges (b, c), rank 1 (a, b): "abc" is [a, bc], though "ab" comes first in the text.
  write(dir.path / "vocab.json", vocab_json({"bc", "ab", "abc"}));
  write(dir.path / "merges.txt", "#version: 0.2\nb c\na b\na bc\n");
  const attn::Bpe bpe = attn::Bpe::load(dir.path);
  CHECK(bpe.vocab_size() == 259);
  CHECK(bpe.encode_chunk("abc") == std::vector<int>{258});  // a + bc, then (a, bc) -> abc
  CHECK(bpe.encode_chunk("abab") == std::vector<int>{257, 257});
  CHECK(bpe.encode_chunk("ab") == std::vector<int>{257});
  CHECK(bpe.rank_of({'b', 'c'}) == 0u);
  CHECK(bpe.rank_of({'a', 'b'}) == 1u);
  CHECK_FALSE(bpe.rank_of({'c', 'a'}).has_value());
  CHECK(bpe.decode(std::vector<int>{258, 'x'}) == "abcx");
  CHECK_THROWS_AS((void)bpe.decode(std::vector<int>{259}), std::out_of_range);
  CHECK_THROWS_AS((void)bpe.decode(std::vector<int>{-1}), std::out_of_range);
}

TEST_CASE("a split character decodes whole when its tokens are decoded together") {
  TempDir dir("split");
  // 🙂 is F0 9F 99 82: tokens "\xf0\x9f" and "\x99\x82".
  write(dir.path / "vocab.json", vocab_json({"\xf0\x9f", "\x99\x82"}));
  write(dir.path / "merges.txt",
        attn::gpt2_token_text("\xf0") + " " + attn::gpt2_token_text("\x9f") + "\n" +
            attn::gpt2_token_text("\x99") + " " + attn::gpt2_token_text("\x82") + "\n");
  const attn::Bpe bpe = attn::Bpe::load(dir.path);
  const std::vector<int> ids = bpe.encode("\xf0\x9f\x99\x82");
  REQUIRE(ids == std::vector<int>{256, 257});
  CHECK(bpe.decode(ids) == "\xf0\x9f\x99\x82");
  CHECK(bpe.decode(std::vector<int>{256}) + bpe.decode(std::vector<int>{257}) ==
        "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // each half alone: replaced
}

TEST_CASE("saved files load back to the same tokenizer, in GPT-2's format") {
  TempDir dir("save");
  const attn::Bpe bpe = attn::Bpe::train("the cat sat on the mat\nthe end. the end!", 280);
  bpe.save(dir.path / "tok");
  std::ifstream merges(dir.path / "tok" / "merges.txt");
  std::string first;
  std::getline(merges, first);
  CHECK(first == "#version: 0.2");
  std::string second;
  std::getline(merges, second);
  CHECK(second == attn::gpt2_token_text(bpe.token_bytes(bpe.merges()[0].left)) + " " +
                      attn::gpt2_token_text(bpe.token_bytes(bpe.merges()[0].right)));
  const attn::Bpe back = attn::Bpe::load(dir.path / "tok");
  REQUIRE(back.vocab_size() == bpe.vocab_size());
  for (int id = 0; id < static_cast<int>(bpe.vocab_size()); ++id) {
    CHECK(back.token_bytes(id) == bpe.token_bytes(id));
  }
  const std::string text = "the cat, the hat; the mat\n";
  CHECK(back.encode(text) == bpe.encode(text));
  // merges.txt without its #version line, with Windows line ends, still loads.
  write(dir.path / "tok" / "merges.txt", second + "\r\n");
  CHECK(load_error(dir.path / "tok") == "(no error)");
}

TEST_CASE("every bad tokenizer file is refused in one line naming the file and the problem") {
  TempDir dir("bad");
  const fs::path vocab = dir.path / "vocab.json";
  const fs::path merges = dir.path / "merges.txt";
  const std::string good_vocab = vocab_json({"ab"});
  const auto with = [&](const std::string& v, const std::string& m) {
    write(vocab, v);
    write(merges, m);
    const std::string error = load_error(dir.path);
    CHECK(error.find('\n') == std::string::npos);
    return error;
  };
  const auto contains = [](const std::string& text, const std::string& part) {
    INFO(text);
    CHECK(text.find(part) != std::string::npos);
  };
  REQUIRE(with(good_vocab, "a b\n") == "(no error)");

  SUBCASE("missing files") {
    fs::remove(merges);
    contains(load_error(dir.path), "merges.txt': No such file");
    fs::remove(vocab);
    contains(load_error(dir.path), "vocab.json': No such file");
    // A folder that is not there is named as the folder, not as a vocab.json inside it.
    contains(load_error(dir.path / "nowhere"),
             "nowhere' does not exist (expected a folder with vocab.json and merges.txt)");
  }
  SUBCASE("a folder where a file should be") {
    fs::remove(merges);
    fs::create_directory(merges);
    contains(load_error(dir.path), "merges.txt': not a regular file");
  }
  SUBCASE("vocab.json is not JSON, or not an object") {
    contains(with("{\"a\": 0,", "a b\n"), "vocab.json': not valid JSON");
    contains(with("[0, 1, 2]", "a b\n"), "vocab.json': expected one JSON object");
    contains(with("\"ab\"", "a b\n"), "got string");
    contains(with("", ""), "not valid JSON");
    contains(with("{\"\xff\": 0}", ""), "not valid JSON");  // not UTF-8
  }
  SUBCASE("ids that are not 0..N-1") {
    std::string v = good_vocab;
    v.replace(v.rfind(":256"), 4, ":-1");
    contains(with(v, ""), "token 'ab' has id -1, expected a whole number in [0, 257)");
    v = good_vocab;
    v.replace(v.rfind(":256"), 4, ":257");
    contains(with(v, ""), "has id 257");
    v = good_vocab;
    v.replace(v.rfind(":256"), 4, ":2.5");
    contains(with(v, ""), "has id 2.5");
    v = good_vocab;
    v.replace(v.rfind(":256"), 4, ":\"256\"");
    contains(with(v, ""), "has id \"256\"");
    v = good_vocab;
    v.replace(v.rfind(":256"), 4, ":255");
    contains(with(v, ""), "id 255 is given twice");
  }
  SUBCASE("a token given twice") {
    contains(with(good_vocab.substr(0, good_vocab.size() - 1) + ",\"ab\":257}", ""),
             "token 'ab' appears twice");
  }
  SUBCASE("a token outside GPT-2's byte alphabet, or empty") {
    contains(
        with(vocab_json({}).substr(0, vocab_json({}).size() - 1) + ",\"\xe2\x82\xac\":256}", ""),
        "is not spelled in GPT-2's byte alphabet");
    contains(with(vocab_json({}).substr(0, vocab_json({}).size() - 1) + ",\"\":256}", ""),
             "token '' is not spelled");
  }
  SUBCASE("a single byte missing") {
    // The 256 bytes with the one for 'a' renamed to "ab": 256 tokens, no 'a'.
    std::string v = vocab_json({});
    v.replace(v.find("\"a\":"), 4, "\"ab\":");
    contains(with(v, ""), "the single byte 0x61 ('a') is not a token");
    contains(with("{\"a\": 0}", ""), "holds 1 tokens, fewer than the 256");
  }
  SUBCASE("a merges line that is not two tokens") {
    contains(with(good_vocab, "a b\nab\n"), "merges.txt': line 2: expected two tokens");
    contains(with(good_vocab, "a b c\n"), "line 1: expected two tokens");
    contains(with(good_vocab, "a b\n\n"), "line 2: expected two tokens");
    contains(with(good_vocab, " a\n"), "line 1: expected two tokens");
    contains(with(good_vocab, "#version: 0.2\n#version: 0.2\n"), "line 2: token '#version:'");
  }
  SUBCASE("a merges line with an unknown token, or whose merge is not in the vocabulary") {
    contains(with(good_vocab, "a b\nzz q\n"), "merges.txt': line 2: token 'zz' is not in vocab");
    contains(with(good_vocab, "a b\nab \xe2\x82\xac\n"), "line 2: token '\xe2\x82\xac' is not");
    contains(with(good_vocab, "a b\nb a\n"), "line 2: the merge of 'b' and 'a' is not in vocab");
  }
  SUBCASE("a merge given twice") {
    contains(with(good_vocab, "a b\na b\n"), "line 2: the pair 'a b' appears twice");
  }
  SUBCASE("a file above the size limit is not read to its end") {
    write(merges, "");
    fs::resize_file(merges, (std::uintmax_t{64} << 20) + 1);
    contains(load_error(dir.path), "merges.txt': more than the limit of");
  }
}

}  // TEST_SUITE
