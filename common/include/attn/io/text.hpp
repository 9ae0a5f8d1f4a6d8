// attn/io/text.hpp: from a string of text to integer tokens and back (chapter 01).
// The vocabulary is the sorted set of unique characters of the corpus. Characters are Unicode
// code points decoded from UTF-8, not bytes, so "é" is one token, not two. The split into train
// and validation text and the batches drawn from it are training's: attn/io/data.hpp.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// UTF-8 <-> code points. decode_utf8 throws std::runtime_error naming the byte offset of the
// first invalid sequence: "invalid UTF-8 at byte 1041 (0xff)". Overlong forms, surrogates and
// values above U+10FFFF are invalid.
std::u32string decode_utf8(std::string_view bytes);
std::string encode_utf8(std::u32string_view code_points);
std::string encode_utf8(char32_t code_point);

// A printable name for one character, for tables: 'a', '\n' as "\\n", ' ' as "' '".
std::string printable(char32_t code_point);
// A text as a double-quoted literal on one line: newline as \n, tab as \t, '"' as \", control
// characters as printable() shows them (ESC as \x1b), the rest as UTF-8.
// quote(U"a\nb") == "\"a\\nb\"".
std::string quote(std::u32string_view text);
// A text to print as it is (sampled text, which may hold anything the corpus held), except the
// characters that would act on the terminal instead of showing (ESC, NUL, CR, other control
// characters): those are escaped as printable() does. Newlines and tabs stay.
std::string terminal_safe(std::u32string_view text);
// Bytes that are not known to be text (a file's path: any bytes but '/' and NUL), shown on one
// line: valid UTF-8 as it is, newline and tab as \n and \t, other control characters and every
// byte that is not part of valid UTF-8 as \xNN. printable_bytes("a\n\xff") == "a\\n\\xff".
std::string printable_bytes(std::string_view bytes);

class Vocab;
// The characters of `ids` (chapter 07 on: prompts and samples as text for attn::quote).
std::u32string chars_of(const Vocab& vocab, std::span<const int> ids);

class Vocab {
 public:
  // The sorted unique code points of `text`. Throws std::invalid_argument if the text is empty
  // and std::runtime_error if it is not valid UTF-8.
  static Vocab from_text(std::string_view text);
  explicit Vocab(std::u32string sorted_unique_chars);

  std::size_t size() const { return chars_.size(); }  // V
  const std::u32string& chars() const { return chars_; }
  bool contains(char32_t c) const;
  // The token id of `c`; throws std::invalid_argument for a character outside the vocabulary:
  // "unknown character 'Z' (U+005A): the vocabulary has 65 characters, see --help".
  int id_of(char32_t c) const;
  char32_t char_of(int id) const;  // throws std::out_of_range for an id outside [0, V)

  std::vector<int> encode(std::string_view text) const;  // string -> ids
  std::string decode(std::span<const int> ids) const;    // ids -> string

 private:
  std::u32string chars_;
};

}  // namespace attn
