// tests/fuzz/fuzz_utf8.cpp: libFuzzer target for the corpus decoder (attn::decode_utf8) and what
// the chapters build on it. Invalid input throws std::runtime_error; valid input must survive
// encode_utf8 byte for byte, give a Vocab that encodes and decodes it back, and quote to one
// line free of control characters.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "attn/io/text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::u32string text;
  try {
    text = attn::decode_utf8(bytes);
  } catch (const std::runtime_error&) {
    return 0;  // reported with its byte offset; nothing else to check
  }
  // 1. Round trip: the bytes are exactly the encoding of what was decoded.
  if (attn::encode_utf8(text) != bytes) std::abort();
  if (text.empty()) return 0;
  // 2. The vocabulary of the text encodes it and decodes it back.
  const attn::Vocab vocab = attn::Vocab::from_text(bytes);
  if (vocab.decode(vocab.encode(bytes)) != bytes) std::abort();
  // 3. What the narration prints: valid UTF-8 without a character that acts on a terminal (C0
  //    and C1 controls, DEL, line separators); quote() is also a single line.
  const std::string quoted = attn::quote(text);
  if (quoted.find('\n') != std::string::npos) std::abort();
  for (const std::string& shown : {quoted, attn::terminal_safe(text)}) {
    for (const char32_t c : attn::decode_utf8(shown)) {
      if (c == U'\n' || c == U'\t') continue;
      if (c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x2028 || c == 0x2029) std::abort();
    }
  }
  return 0;
}
