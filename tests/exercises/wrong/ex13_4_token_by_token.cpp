// Wrong: each token is decoded on its own and the pieces joined, so a character split over
// two tokens becomes two U+FFFD.
#include <string>

#include "exercises.hpp"

namespace {

// One character's length from its lead byte, and the allowed range of its second byte.
bool lead(unsigned char b0, std::size_t& length, unsigned char& lo, unsigned char& hi) {
  lo = 0x80;
  hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return false;
  }
  return true;
}

std::string replace_invalid(const std::string& bytes) {
  const std::string r = "\xEF\xBF\xBD";
  std::string out;
  std::size_t i = 0;
  while (i < bytes.size()) {
    const auto b0 = static_cast<unsigned char>(bytes[i]);
    if (b0 < 0x80) {
      out.push_back(bytes[i++]);
      continue;
    }
    std::size_t length = 0;
    unsigned char lo = 0, hi = 0;
    if (!lead(b0, length, lo, hi)) {
      out += r;
      ++i;
      continue;
    }
    std::size_t valid = 1;
    while (valid < length && i + valid < bytes.size()) {
      const auto b = static_cast<unsigned char>(bytes[i + valid]);
      if (!(valid == 1 ? (b >= lo && b <= hi) : (b & 0xC0) == 0x80)) break;
      ++valid;
    }
    if (valid == length) {
      out.append(bytes, i, length);
      i += length;
    } else {
      out += r;
      i += valid;
    }
  }
  return out;
}

}  // namespace

namespace ex13 {

std::string decode(const attn::Bpe& bpe, std::span<const int> ids) {
  std::string out;
  for (const int id : ids) out += replace_invalid(bpe.token_bytes(id));
  return out;
}

}  // namespace ex13
