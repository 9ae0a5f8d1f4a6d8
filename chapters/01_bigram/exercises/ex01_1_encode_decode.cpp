// Exercise ex01.1: encode and decode (chapter 01, the bigram model).
//
// Goal: turn text into token ids and back. The vocabulary is the sorted set of the corpus's
// characters, and a character's id is its position in that set, so with the vocabulary
// " dehlorw" the text "hello" is [3, 2, 4, 4, 5].
//   encode: text (UTF-8, n characters) -> ids (n,), each in [0, V)
//   decode: ids (n,)                   -> text (UTF-8, n characters)
// Formula: encode(text)[i] = vocab.id_of(c_i) for the characters c_0 .. c_{n-1} of text;
//          decode(ids)     = the characters vocab.char_of(ids[0]) .. vocab.char_of(ids[n-1]).
// A character is a Unicode code point, not a byte: "é" is 2 bytes but 1 token. To get the
// code points of a UTF-8 string call attn::decode_utf8 (bytes -> code points);
// attn::encode_utf8 goes back (code points -> bytes). Both live in attn/io/text.hpp.
// Check: build/default/bin/attn-check 01
#include <stdexcept>

#include "exercises.hpp"

namespace ex01 {

std::vector<int> encode(const attn::Vocab& vocab, std::string_view text) {
  // TODO(ex01.1): return one id per character (code point) of text, vocab's id for it; a
  // character outside the vocabulary is an error (std::invalid_argument).
  throw std::logic_error("TODO ex01.1: encode text into token ids");
}

std::string decode(const attn::Vocab& vocab, std::span<const int> ids) {
  // TODO(ex01.1): return the UTF-8 text of the characters with these ids, in order; "" for no ids.
  throw std::logic_error("TODO ex01.1: decode token ids into text");
}

}  // namespace ex01
