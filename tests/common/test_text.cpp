// Tests for attn/io/text.hpp (chapter 01): UTF-8, the character vocabulary, the train/val split
// and the (B, T) batches every training loop of the course draws from.
// Expected values are written out by hand or computed with plain loops, never with the code under
// test.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/io/text.hpp"
#include "attn/io/data.hpp"

namespace {

// The message of the exception `f` throws, or "" if it throws nothing / something else.
template <class Exception, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const Exception& e) {
    return e.what();
  }
  return "";
}

std::string bytes(std::initializer_list<unsigned char> list) {
  std::string out;
  for (unsigned char b : list) out.push_back(static_cast<char>(b));
  return out;
}

}  // namespace

TEST_SUITE("text") {

TEST_CASE("ASCII decodes to one code point per byte") {
  CHECK(attn::decode_utf8("hi!\n") == std::u32string{U'h', U'i', U'!', U'\n'});
  CHECK(attn::decode_utf8("").empty());
}

TEST_CASE("2-, 3- and 4-byte characters decode to one code point each") {
  // é U+00E9 = C3 A9, € U+20AC = E2 82 AC, 😀 U+1F600 = F0 9F 98 80 (written as bytes so the
  // test does not depend on the source file's encoding).
  CHECK(attn::decode_utf8(bytes({0xC3, 0xA9})) == std::u32string{char32_t{0xE9}});
  CHECK(attn::decode_utf8(bytes({0xE2, 0x82, 0xAC})) == std::u32string{char32_t{0x20AC}});
  CHECK(attn::decode_utf8(bytes({0xF0, 0x9F, 0x98, 0x80})) == std::u32string{char32_t{0x1F600}});
  const std::string mixed =
      "a" + bytes({0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80}) + "z";
  CHECK(attn::decode_utf8(mixed) ==
        std::u32string{U'a', char32_t{0xE9}, char32_t{0x20AC}, char32_t{0x1F600}, U'z'});
}

TEST_CASE("encoding gives back the exact bytes") {
  CHECK(attn::encode_utf8(char32_t{0x41}) == "A");
  CHECK(attn::encode_utf8(char32_t{0xE9}) == bytes({0xC3, 0xA9}));
  CHECK(attn::encode_utf8(char32_t{0x20AC}) == bytes({0xE2, 0x82, 0xAC}));
  CHECK(attn::encode_utf8(char32_t{0x1F600}) == bytes({0xF0, 0x9F, 0x98, 0x80}));
  CHECK(attn::encode_utf8(std::u32string{U'a', char32_t{0xE9}, char32_t{0x1F600}}) ==
        "a" + bytes({0xC3, 0xA9, 0xF0, 0x9F, 0x98, 0x80}));
}

TEST_CASE("every boundary code point survives a round trip") {
  for (char32_t c : {char32_t{0}, char32_t{0x7F}, char32_t{0x80}, char32_t{0x7FF}, char32_t{0x800},
                     char32_t{0xD7FF}, char32_t{0xE000}, char32_t{0xFFFF}, char32_t{0x10000},
                     char32_t{0x10FFFF}}) {
    CAPTURE(static_cast<unsigned>(c));
    CHECK(attn::decode_utf8(attn::encode_utf8(c)) == std::u32string(1, c));
  }
}

TEST_CASE("encoding a surrogate or a value above U+10FFFF throws") {
  CHECK_THROWS_AS(attn::encode_utf8(char32_t{0xD800}), std::invalid_argument);
  CHECK_THROWS_AS(attn::encode_utf8(char32_t{0x110000}), std::invalid_argument);
}

TEST_CASE("each invalid form is reported with the offset and value of its first byte") {
  struct Case {
    const char* what;
    std::string input;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"a lone continuation byte", "ab" + bytes({0x80}), "invalid UTF-8 at byte 2 (0x80)"},
      {"0xff never appears in UTF-8", "abc" + bytes({0xFF}) + "d",
       "invalid UTF-8 at byte 3 (0xff)"},
      {"0xf5 would start a value above U+10FFFF", bytes({0xF5, 0x80, 0x80, 0x80}),
       "invalid UTF-8 at byte 0 (0xf5)"},
      {"overlong '/' in two bytes", "x" + bytes({0xC0, 0xAF}), "invalid UTF-8 at byte 1 (0xc0)"},
      {"overlong U+007F in two bytes", bytes({0xC1, 0xBF}), "invalid UTF-8 at byte 0 (0xc1)"},
      {"overlong U+07FF in three bytes", bytes({0xE0, 0x9F, 0xBF}),
       "invalid UTF-8 at byte 0 (0xe0)"},
      {"overlong U+FFFF in four bytes", bytes({0xF0, 0x8F, 0xBF, 0xBF}),
       "invalid UTF-8 at byte 0 (0xf0)"},
      {"surrogate U+D800", "ok" + bytes({0xED, 0xA0, 0x80}), "invalid UTF-8 at byte 2 (0xed)"},
      {"surrogate U+DFFF", bytes({0xED, 0xBF, 0xBF}), "invalid UTF-8 at byte 0 (0xed)"},
      {"U+110000, above the last code point", bytes({0xF4, 0x90, 0x80, 0x80}),
       "invalid UTF-8 at byte 0 (0xf4)"},
      {"2-byte form truncated at the end", "abc" + bytes({0xC3}), "invalid UTF-8 at byte 3 (0xc3)"},
      {"3-byte form truncated at the end", "a" + bytes({0xE2, 0x82}),
       "invalid UTF-8 at byte 1 (0xe2)"},
      {"4-byte form truncated at the end", bytes({0xF0, 0x9F, 0x98}),
       "invalid UTF-8 at byte 0 (0xf0)"},
      {"lead byte followed by ASCII", "e" + bytes({0xC3}) + "a", "invalid UTF-8 at byte 1 (0xc3)"},
      {"third byte not a continuation", bytes({0xE2, 0x82}) + "A",
       "invalid UTF-8 at byte 0 (0xe2)"},
      {"fourth byte not a continuation", bytes({0xF0, 0x9F, 0x98}) + "!",
       "invalid UTF-8 at byte 0 (0xf0)"},
      {"error after a valid multi-byte character", bytes({0xC3, 0xA9, 0xFE}),
       "invalid UTF-8 at byte 2 (0xfe)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    CHECK(message_of<std::runtime_error>([&] { (void)attn::decode_utf8(c.input); }) == c.message);
  }
}

TEST_CASE("the largest valid forms next to each invalid range are accepted") {
  CHECK(attn::decode_utf8(bytes({0xC2, 0x80})) == std::u32string{char32_t{0x80}});
  CHECK(attn::decode_utf8(bytes({0xE0, 0xA0, 0x80})) == std::u32string{char32_t{0x800}});
  CHECK(attn::decode_utf8(bytes({0xED, 0x9F, 0xBF})) == std::u32string{char32_t{0xD7FF}});
  CHECK(attn::decode_utf8(bytes({0xEE, 0x80, 0x80})) == std::u32string{char32_t{0xE000}});
  CHECK(attn::decode_utf8(bytes({0xF0, 0x90, 0x80, 0x80})) == std::u32string{char32_t{0x10000}});
  CHECK(attn::decode_utf8(bytes({0xF4, 0x8F, 0xBF, 0xBF})) == std::u32string{char32_t{0x10FFFF}});
}

TEST_CASE("quote writes a text as a one-line double-quoted literal") {
  CHECK(attn::quote(U"") == "\"\"");
  CHECK(attn::quote(U"First Citizen:\nBefore") == "\"First Citizen:\\nBefore\"");
  CHECK(attn::quote(U"a\tb \"c\"") == "\"a\\tb \\\"c\\\"\"");
  CHECK(attn::quote(U"\u00e9t\u00e9 \u2014 ok") ==
        "\"\xc3\xa9t\xc3\xa9 \xe2\x80\x94 ok\"");  // UTF-8
}

TEST_CASE("quote and terminal_safe escape what would act on a terminal (ESC, NUL, CR)") {
  using namespace std::string_literals;
  const std::u32string text = U"a\x1b[31mb\0c\rd\ne\tf\u2028g\x7f\x9bh"s;
  CHECK(attn::quote(text) == "\"a\\x1b[31mb\\x00c\\rd\\ne\\tf\\u{2028}g\\x7f\\x9bh\"");
  // Sampled text keeps its line breaks and tabs; everything else that is invisible is escaped.
  CHECK(attn::terminal_safe(text) == "a\\x1b[31mb\\x00c\\rd\ne\tf\\u{2028}g\\x7f\\x9bh");
  CHECK(attn::terminal_safe(U"plain é text\n") == "plain \xc3\xa9 text\n");
}

TEST_CASE("printable names make invisible characters visible") {
  CHECK(attn::printable(U'a') == "a");
  CHECK(attn::printable(U'\n') == "\\n");
  CHECK(attn::printable(U'\t') == "\\t");
  CHECK(attn::printable(U' ') == "' '");
  CHECK(attn::printable(char32_t{0x07}) == "\\x07");
  CHECK(attn::printable(char32_t{0x7F}) == "\\x7f");
  CHECK(attn::printable(char32_t{0xE9}) == bytes({0xC3, 0xA9}));
  CHECK(attn::printable(char32_t{0x2028}) == "\\u{2028}");
}

TEST_CASE("the vocabulary of hello is its sorted unique characters") {
  const attn::Vocab vocab = attn::Vocab::from_text("hello");
  CHECK(vocab.size() == 4);
  CHECK(vocab.chars() == U"ehlo");
  CHECK(vocab.id_of(U'e') == 0);
  CHECK(vocab.id_of(U'h') == 1);
  CHECK(vocab.id_of(U'l') == 2);
  CHECK(vocab.id_of(U'o') == 3);
  CHECK(vocab.char_of(2) == U'l');
  CHECK(vocab.contains(U'h'));
  CHECK_FALSE(vocab.contains(U'z'));
  CHECK(vocab.encode("hello") == std::vector<int>{1, 0, 2, 2, 3});
}

TEST_CASE("the vocabulary is sorted by code point, not by byte or locale") {
  // In bytes, é (C3 A9) sorts after z; so does U+00E9 as a code point. Upper case comes first
  // (A = 0x41 < a = 0x61), the newline before everything printable, as in sorted(set(text)).
  const std::string text = "zaA\n " + bytes({0xC3, 0xA9}) + "!";
  const attn::Vocab vocab = attn::Vocab::from_text(text);
  CHECK(vocab.chars() == std::u32string{U'\n', U' ', U'!', U'A', U'a', U'z', char32_t{0xE9}});
  CHECK(vocab.id_of(char32_t{0xE9}) == 6);
  CHECK(vocab.encode(bytes({0xC3, 0xA9})) == std::vector<int>{6});  // one token, not two

  // Several non-ASCII characters, repeated and out of order: 😀 U+1F600, € U+20AC, é U+00E9.
  const std::string euro = bytes({0xE2, 0x82, 0xAC});
  const std::string e_acute = bytes({0xC3, 0xA9});
  const std::string smiley = bytes({0xF0, 0x9F, 0x98, 0x80});
  const attn::Vocab wide =
      attn::Vocab::from_text(smiley + euro + e_acute + "b" + euro + smiley + "a");
  CHECK(wide.chars() ==
        std::u32string{U'a', U'b', char32_t{0xE9}, char32_t{0x20AC}, char32_t{0x1F600}});
  CHECK(wide.encode(e_acute + "a" + smiley) == std::vector<int>{2, 0, 4});
}

TEST_CASE("encode and decode are inverse on text over the vocabulary") {
  const std::string text = "To be, or not to be: " + bytes({0xE2, 0x82, 0xAC}) + "5\nThat is it.";
  const attn::Vocab vocab = attn::Vocab::from_text(text);
  const std::vector<int> ids = vocab.encode(text);
  CHECK(ids.size() == attn::decode_utf8(text).size());
  CHECK(vocab.decode(ids) == text);
  for (int id = 0; id < static_cast<int>(vocab.size()); ++id) {
    CHECK(vocab.id_of(vocab.char_of(id)) == id);
  }
}

TEST_CASE("from_text rejects empty text and invalid UTF-8") {
  CHECK_THROWS_AS(attn::Vocab::from_text(""), std::invalid_argument);
  CHECK(message_of<std::runtime_error>([] {
          (void)attn::Vocab::from_text("ab" + bytes({0xFF}));
        }) == "invalid UTF-8 at byte 2 (0xff)");
}

TEST_CASE("the constructor rejects unsorted, repeated or empty character lists") {
  CHECK_NOTHROW(attn::Vocab(U"abc"));
  CHECK_THROWS_AS(attn::Vocab(U"bac"), std::invalid_argument);
  CHECK_THROWS_AS(attn::Vocab(U"abb"), std::invalid_argument);
  CHECK_THROWS_AS(attn::Vocab(U""), std::invalid_argument);
  CHECK_THROWS_AS(attn::Vocab(std::u32string{U'a', char32_t{0xD800}}), std::invalid_argument);
  CHECK(
      message_of<std::invalid_argument>([] { (void)attn::Vocab(U"bac"); }) ==
      "attn::Vocab: characters must be sorted by code point and unique, but U+0061 follows U+0062");
}

TEST_CASE("an unknown character is named on one line with its code point and the vocabulary size") {
  const attn::Vocab vocab = attn::Vocab::from_text("hello");
  const std::string message = message_of<std::invalid_argument>([&] { (void)vocab.id_of(U'Z'); });
  CHECK(message == "unknown character 'Z' (U+005A): the vocabulary has 4 characters, see --help");

  // encode() reports the same error for an unknown ASCII character between known ones.
  CHECK(message_of<std::invalid_argument>([&] { (void)vocab.encode("hex"); }) ==
        "unknown character 'x' (U+0078): the vocabulary has 4 characters, see --help");
  CHECK(message_of<std::invalid_argument>([&] { (void)vocab.encode("h e"); }) ==
        "unknown character ' ' (U+0020): the vocabulary has 4 characters, see --help");

  // A newline must not break the message over two lines.
  const std::string newline = message_of<std::invalid_argument>([&] { (void)vocab.id_of(U'\n'); });
  CHECK(newline.find('\n') == std::string::npos);
  CHECK(newline.find("'\\n' (U+000A)") != std::string::npos);

  const std::string euro = message_of<std::invalid_argument>([&] {
    (void)vocab.encode("h" + bytes({0xE2, 0x82, 0xAC}));
  });
  CHECK(euro.find("(U+20AC)") != std::string::npos);
  CHECK(euro.find("'" + bytes({0xE2, 0x82, 0xAC}) + "'") != std::string::npos);
  CHECK(message_of<std::invalid_argument>([&] {
          (void)vocab.id_of(char32_t{0x1F600});
        }).find("(U+1F600)") != std::string::npos);
}

TEST_CASE("an id outside the vocabulary is out of range") {
  const attn::Vocab vocab = attn::Vocab::from_text("hello");
  CHECK_THROWS_AS((void)vocab.char_of(-1), std::out_of_range);
  CHECK_THROWS_AS((void)vocab.char_of(4), std::out_of_range);
  const std::vector<int> bad = {0, 1, 4};
  CHECK_THROWS_AS((void)vocab.decode(bad), std::out_of_range);
  const std::vector<int> negative = {-1};
  CHECK_THROWS_AS((void)vocab.decode(negative), std::out_of_range);
}

TEST_CASE("the split point is int(0.9 * n), like the lecture") {
  std::vector<int> ten(10);
  for (int i = 0; i < 10; ++i) ten[static_cast<std::size_t>(i)] = i;
  const attn::Split s = attn::train_val_split(ten);
  CHECK(s.train == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(s.val == std::vector<int>{9});

  // Tiny Shakespeare: int(0.9 * 1115394) = int(1003854.6) = 1003854.
  const std::vector<int> full(1115394, 7);
  const attn::Split f = attn::train_val_split(full);
  CHECK(f.train.size() == 1003854);
  CHECK(f.val.size() == 111540);

  // Truncation, not rounding: int(0.5 * 7) = 3; int(0.75 * 3) = 2.
  CHECK(attn::train_val_split(std::vector<int>(7), 0.5).train.size() == 3);
  CHECK(attn::train_val_split(std::vector<int>(3), 0.75).train.size() == 2);
}

TEST_CASE("a train fraction outside (0, 1) is rejected") {
  const std::vector<int> ten(10);
  for (double bad : {0.0, 1.0, -0.5, 1.5, std::nan("")}) {
    CAPTURE(bad);
    CHECK_THROWS_AS((void)attn::train_val_split(ten, bad), std::invalid_argument);
  }
}

TEST_CASE("a batch has shape (B, T) and y is x shifted by one") {
  // data[k] = 100 + k, so every window can be checked against its own position.
  std::vector<int> data(50);
  for (std::size_t k = 0; k < data.size(); ++k) data[k] = 100 + static_cast<int>(k);
  attn::Rng rng(1337);
  const attn::Batch batch = attn::get_batch(data, 4, 8, rng);
  REQUIRE(batch.x.shape()[0] == 4);
  REQUIRE(batch.x.shape()[1] == 8);
  REQUIRE(batch.y.shape()[0] == 4);
  REQUIRE(batch.y.shape()[1] == 8);
  for (std::size_t b = 0; b < 4; ++b) {
    const int start = batch.x(b, 0) - 100;
    CHECK(start >= 0);
    CHECK(start <= 50 - 8 - 1);  // the last target, start + 8, is still inside the data
    for (std::size_t t = 0; t < 8; ++t) {
      CHECK(batch.x(b, t) == 100 + start + static_cast<int>(t));
      CHECK(batch.y(b, t) == 100 + start + static_cast<int>(t) + 1);
    }
  }
}

TEST_CASE("batch starts are drawn with rng.below(n - T), one per row, in row order") {
  std::vector<int> data(30);
  for (std::size_t k = 0; k < data.size(); ++k) data[k] = static_cast<int>(k);
  attn::Rng rng(7);
  attn::Rng twin(7);
  const attn::Batch batch = attn::get_batch(data, 5, 4, rng);
  for (std::size_t b = 0; b < 5; ++b) {
    CHECK(batch.x(b, 0) == static_cast<int>(twin.below(30 - 4)));
  }
  CHECK(rng.next_u32() == twin.next_u32());  // no extra draws were made
}

TEST_CASE("with exactly T + 1 tokens every window is the whole data") {
  const std::vector<int> data = {3, 1, 4, 1, 5};
  attn::Rng rng(1);
  const attn::Batch batch = attn::get_batch(data, 3, 4, rng);
  for (std::size_t b = 0; b < 3; ++b) {
    for (std::size_t t = 0; t < 4; ++t) {
      CHECK(batch.x(b, t) == data[t]);
      CHECK(batch.y(b, t) == data[t + 1]);
    }
  }
}

TEST_CASE("every start position is reachable and none beyond n - T - 1") {
  std::vector<int> data(12);
  for (std::size_t k = 0; k < data.size(); ++k) data[k] = static_cast<int>(k);
  attn::Rng rng(3);
  std::vector<int> seen(12, 0);
  for (int round = 0; round < 200; ++round) {
    const attn::Batch batch = attn::get_batch(data, 8, 3, rng);
    for (std::size_t b = 0; b < 8; ++b) ++seen[static_cast<std::size_t>(batch.x(b, 0))];
  }
  for (std::size_t i = 0; i <= 12 - 3 - 1; ++i) CHECK(seen[i] > 0);
  for (std::size_t i = 12 - 3; i < 12; ++i) CHECK(seen[i] == 0);
}

TEST_CASE("the same seed gives the same batches") {
  std::vector<int> data(1000);
  for (std::size_t k = 0; k < data.size(); ++k) data[k] = static_cast<int>(k * 7 % 65);
  attn::Rng a(42);
  attn::Rng b(42);
  attn::Rng c(43);
  const attn::Batch ba = attn::get_batch(data, 32, 8, a);
  const attn::Batch bb = attn::get_batch(data, 32, 8, b);
  const attn::Batch bc = attn::get_batch(data, 32, 8, c);
  CHECK(ba.x == bb.x);
  CHECK(ba.y == bb.y);
  CHECK(ba.x != bc.x);
}

TEST_CASE("get_batch names the expected and actual sizes when it cannot cut a window") {
  const std::vector<int> five = {0, 1, 2, 3, 4};
  attn::Rng rng(1);
  CHECK(message_of<std::invalid_argument>([&] { (void)attn::get_batch(five, 4, 8, rng); }) ==
        "attn::get_batch: expected at least block_size + 1 = 9 tokens, got 5");
  CHECK(message_of<std::invalid_argument>([&] { (void)attn::get_batch(five, 1, 5, rng); }) ==
        "attn::get_batch: expected at least block_size + 1 = 6 tokens, got 5");
  CHECK(message_of<std::invalid_argument>([&] { (void)attn::get_batch(five, 0, 2, rng); }) ==
        "attn::get_batch: expected batch_size >= 1, got 0");
  CHECK(message_of<std::invalid_argument>([&] { (void)attn::get_batch(five, 2, 0, rng); }) ==
        "attn::get_batch: expected block_size >= 1, got 0");
  const std::vector<int> none;
  CHECK_THROWS_AS((void)attn::get_batch(none, 1, 1, rng), std::invalid_argument);
}

}  // TEST_SUITE
