// Exercise ex13.4: a decode that survives split characters (chapter 13, docs/13-tokens.md).
//
// Goal: like attn::Bpe::decode. Tokens are bytes, and a character of 2-4 UTF-8 bytes may be
// split over two tokens; a model may also emit a sequence of tokens that is not UTF-8 at all.
// Input: a tokenizer and ids (n,). Output: UTF-8 text.
// Contract: join every token's bytes (bpe.token_bytes, which throws std::out_of_range for an
// unknown id), then decode the bytes as UTF-8. A well-formed character is copied; where a
// sequence breaks, its maximal invalid piece becomes one U+FFFD ("\xEF\xBF\xBD"), exactly as
// Python's bytes.decode("utf-8", errors="replace"):
//   - a byte that cannot start a character (0x80-0xC1, 0xF5-0xFF): one U+FFFD for that byte;
//   - a lead byte followed by fewer continuation bytes than it needs (the text ends, or a byte
//     that does not fit comes): one U+FFFD for the lead byte and the continuation bytes that did
//     fit; the byte that did not fit is read again as the start of the next character.
//   The second byte's allowed range depends on the lead byte (E0: A0-BF, ED: 80-9F, F0: 90-BF,
//   F4: 80-8F, others 80-BF), which rules out overlong forms, surrogates and values past
//   U+10FFFF.
//
// Check: build/default/bin/attn-check 13
#include <stdexcept>

#include "exercises.hpp"

namespace ex13 {

std::string decode(const attn::Bpe& bpe, std::span<const int> ids) {
  // TODO(ex13.4): join the bytes of all tokens first, then walk the bytes: copy each valid
  // character, append one U+FFFD per maximal invalid piece.
  throw std::logic_error("TODO ex13.4: decode with replacement");
}

}  // namespace ex13
