// Text to tokens and back (see attn/io/text.hpp), chapter 01.
// The first step of every language model: decode the corpus into characters, number them,
// split the numbers into train and validation, and cut random (B, T) windows for training.
#include "attn/io/text.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "attn/core/check.hpp"
#include "attn/core/limits.hpp"

namespace attn {

namespace {

// "invalid UTF-8 at byte 12 (0xff)": the offset and value of the first byte of the bad sequence,
// which is what a hex editor (or Python's UnicodeDecodeError) points at.
[[noreturn]] void utf8_error(std::string_view bytes, std::size_t offset) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x",
                static_cast<unsigned>(static_cast<unsigned char>(bytes[offset])));
  throw std::runtime_error("invalid UTF-8 at byte " + std::to_string(offset) + " (" + hex + ")");
}

bool is_continuation(unsigned char b) { return (b & 0xC0u) == 0x80u; }

// Code points UTF-8 can carry: everything up to U+10FFFF except the UTF-16 surrogates.
bool is_scalar_value(char32_t c) { return c <= 0x10FFFF && (c < 0xD800 || c > 0xDFFF); }

// "U+005A": at least four hex digits, like the Unicode charts.
std::string code_point_name(char32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
  return buf;
}

}  // namespace

std::u32string decode_utf8(std::string_view bytes) {
  // Each code point is 1 to 4 bytes; the lead byte says how many. The ranges below are the
  // "well-formed byte sequences" table of the Unicode standard (ch. 3, table 3-7). Checking the
  // second byte's range is what rejects overlong forms (E0 80..9F, F0 80..8F), surrogates
  // (ED A0..BF) and values above U+10FFFF (F4 90..BF) without decoding them first.
  std::u32string out;
  out.reserve(bytes.size());  // at most one code point per byte
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  while (i < n) {
    const auto b0 = static_cast<unsigned char>(bytes[i]);
    if (b0 < 0x80u) {  // ASCII, by far the common case
      out.push_back(static_cast<char32_t>(b0));
      ++i;
      continue;
    }
    std::size_t length = 0;
    unsigned char lo = 0x80u;  // allowed range of the second byte
    unsigned char hi = 0xBFu;
    char32_t c = 0;
    if (b0 >= 0xC2u && b0 <= 0xDFu) {  // C0 and C1 could only start overlong forms of ASCII
      length = 2;
      c = b0 & 0x1Fu;
    } else if (b0 >= 0xE0u && b0 <= 0xEFu) {
      length = 3;
      c = b0 & 0x0Fu;
      if (b0 == 0xE0u) lo = 0xA0u;  // below: overlong (< U+0800)
      if (b0 == 0xEDu) hi = 0x9Fu;  // above: surrogates U+D800..U+DFFF
    } else if (b0 >= 0xF0u && b0 <= 0xF4u) {
      length = 4;
      c = b0 & 0x07u;
      if (b0 == 0xF0u) lo = 0x90u;  // below: overlong (< U+10000)
      if (b0 == 0xF4u) hi = 0x8Fu;  // above: > U+10FFFF
    } else {
      utf8_error(bytes, i);  // a stray continuation byte, or F5..FF which UTF-8 never uses
    }
    if (i + length > n) utf8_error(bytes, i);  // truncated at the end of the text
    const auto b1 = static_cast<unsigned char>(bytes[i + 1]);
    if (b1 < lo || b1 > hi) utf8_error(bytes, i);
    c = (c << 6) | (b1 & 0x3Fu);
    for (std::size_t k = 2; k < length; ++k) {
      const auto b = static_cast<unsigned char>(bytes[i + k]);
      if (!is_continuation(b)) utf8_error(bytes, i);
      c = (c << 6) | (b & 0x3Fu);
    }
    out.push_back(c);
    i += length;
  }
  return out;
}

std::string encode_utf8(char32_t code_point) {
  std::string out;
  const auto c = static_cast<std::uint32_t>(code_point);
  if (!is_scalar_value(code_point)) {
    throw std::invalid_argument("attn::encode_utf8: " + code_point_name(code_point) +
                                " is not a Unicode scalar value (a surrogate or above U+10FFFF)");
  }
  if (c < 0x80u) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800u) {
    out.push_back(static_cast<char>(0xC0u | (c >> 6)));
    out.push_back(static_cast<char>(0x80u | (c & 0x3Fu)));
  } else if (c < 0x10000u) {
    out.push_back(static_cast<char>(0xE0u | (c >> 12)));
    out.push_back(static_cast<char>(0x80u | ((c >> 6) & 0x3Fu)));
    out.push_back(static_cast<char>(0x80u | (c & 0x3Fu)));
  } else {
    out.push_back(static_cast<char>(0xF0u | (c >> 18)));
    out.push_back(static_cast<char>(0x80u | ((c >> 12) & 0x3Fu)));
    out.push_back(static_cast<char>(0x80u | ((c >> 6) & 0x3Fu)));
    out.push_back(static_cast<char>(0x80u | (c & 0x3Fu)));
  }
  return out;
}

std::string encode_utf8(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (char32_t c : code_points) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else {
      out += encode_utf8(c);
    }
  }
  return out;
}

std::string printable(char32_t c) {
  // Everything that would break a table row or a one-line error message is escaped; everything
  // else prints as itself. A space would be invisible, so it is shown quoted.
  switch (c) {
    case U'\n':
      return "\\n";
    case U'\t':
      return "\\t";
    case U'\r':
      return "\\r";
    case U' ':
      return "' '";
    default:
      break;
  }
  if (c < 0x20 || (c >= 0x7F && c <= 0x9F)) {  // C0 and C1 control characters, DEL
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
    return buf;
  }
  if (c == 0x2028 || c == 0x2029 || !is_scalar_value(c)) {  // line/paragraph separators, junk
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\u{%04X}", static_cast<unsigned>(c));
    return buf;
  }
  return encode_utf8(c);
}

namespace {

// Characters that act on a terminal instead of showing (ESC starts colour and cursor commands,
// NUL, BEL, backspace, CR...), and the ones that break a line without being '\n'.
bool acts_on_terminal(char32_t c) {
  return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x2028 || c == 0x2029 || !is_scalar_value(c);
}

}  // namespace

std::string quote(std::u32string_view text) {
  std::string out = "\"";
  for (const char32_t c : text) {
    if (c == U'\n')
      out += "\\n";
    else if (c == U'\t')
      out += "\\t";
    else if (c == U'"')
      out += "\\\"";
    else if (acts_on_terminal(c))
      out += printable(c);  // ESC as \x1b, CR as \r
    else
      out += encode_utf8(c);
  }
  return out + "\"";
}

std::string terminal_safe(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : text) {
    if (c == U'\n' || c == U'\t' || !acts_on_terminal(c)) {
      out += encode_utf8(c);
    } else {
      out += printable(c);
    }
  }
  return out;
}

std::string printable_bytes(std::string_view bytes) {
  std::string out;
  const auto hex = [&out](unsigned char b) { out += fmt::format("\\x{:02x}", b); };
  for (std::size_t i = 0; i < bytes.size();) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if (b < 0x80) {
      if (b == '\n') {
        out += "\\n";
      } else if (b == '\t') {
        out += "\\t";
      } else if (b < 0x20 || b == 0x7f) {
        hex(b);
      } else {
        out += static_cast<char>(b);
      }
      ++i;
      continue;
    }
    // A multi-byte character: kept when the whole sequence is valid UTF-8 and shows as itself.
    const std::size_t n = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
    bool valid = b >= 0xc2 && b <= 0xf4 && i + n <= bytes.size();
    if (valid) {
      try {
        const std::u32string c = decode_utf8(bytes.substr(i, n));
        valid = c.size() == 1 && !acts_on_terminal(c[0]);
      } catch (const std::runtime_error&) {
        valid = false;
      }
    }
    if (valid) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      hex(b);
      ++i;
    }
  }
  return out;
}

Vocab Vocab::from_text(std::string_view text) {
  require(!text.empty(), "attn::Vocab::from_text", "the text is empty, so there is no vocabulary");
  // sorted(set(text)). A corpus is mostly ASCII, so mark those in a 128-entry table and sort
  // only the rest: sorting a million code points would cost ten times more than reading them.
  bool ascii_seen[128] = {};
  std::u32string chars;
  for (char32_t c : decode_utf8(text)) {
    if (c < 128) {
      ascii_seen[c] = true;
    } else {
      chars.push_back(c);
    }
  }
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  std::u32string ascii;
  for (char32_t c = 0; c < 128; ++c) {
    if (ascii_seen[c]) ascii.push_back(c);
  }
  return Vocab(ascii + chars);  // every ASCII code point sorts before every other one
}

Vocab::Vocab(std::u32string sorted_unique_chars) : chars_(std::move(sorted_unique_chars)) {
  // id_of is a binary search, so the order is part of the contract: check it once here.
  require(!chars_.empty(), "attn::Vocab", "a vocabulary needs at least one character");
  // The messages are built only on failure (require() evaluates its arguments every time, and
  // chars_[i - 1] must not be read at i == 0).
  for (std::size_t i = 0; i < chars_.size(); ++i) {
    if (!is_scalar_value(chars_[i])) {
      require(false, "attn::Vocab",
              [&] { return code_point_name(chars_[i]) + " is not a Unicode scalar value"; });
    }
    if (i > 0 && !(chars_[i - 1] < chars_[i])) {
      require(false, "attn::Vocab", [&] {
        return "characters must be sorted by code point and unique, but " +
               code_point_name(chars_[i]) + " follows " + code_point_name(chars_[i - 1]);
      });
    }
  }
}

std::u32string chars_of(const Vocab& vocab, std::span<const int> ids) {
  std::u32string out;
  out.reserve(ids.size());
  for (int id : ids) out += vocab.char_of(id);
  return out;
}

bool Vocab::contains(char32_t c) const {
  return std::binary_search(chars_.begin(), chars_.end(), c);
}

int Vocab::id_of(char32_t c) const {
  // The token id is the character's rank in the sorted vocabulary, as in the lecture's
  // stoi = {ch: i for i, ch in enumerate(sorted(set(text)))}.
  const auto it = std::lower_bound(chars_.begin(), chars_.end(), c);
  if (it == chars_.end() || *it != c) {
    const std::string shown = c == U' ' ? printable(c) : "'" + printable(c) + "'";
    throw std::invalid_argument("unknown character " + shown + " (" + code_point_name(c) +
                                "): the vocabulary has " + std::to_string(chars_.size()) +
                                " characters, see --help");
  }
  return static_cast<int>(it - chars_.begin());
}

char32_t Vocab::char_of(int id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= chars_.size()) {
    throw std::out_of_range("attn::Vocab::char_of: token id " + std::to_string(id) +
                            " is outside [0, " + std::to_string(chars_.size()) + ")");
  }
  return chars_[static_cast<std::size_t>(id)];
}

std::vector<int> Vocab::encode(std::string_view text) const {
  // The ids of the 128 ASCII characters are looked up once (-1: not in the vocabulary), so
  // the usual character costs one table read instead of a binary search.
  int ascii_ids[128];
  for (char32_t c = 0; c < 128; ++c) {
    const auto it = std::lower_bound(chars_.begin(), chars_.end(), c);
    ascii_ids[c] = it != chars_.end() && *it == c ? static_cast<int>(it - chars_.begin()) : -1;
  }
  const std::u32string chars = decode_utf8(text);
  std::vector<int> ids;
  ids.reserve(chars.size());
  for (char32_t c : chars) {
    const int id = c < 128 ? ascii_ids[c] : -1;
    ids.push_back(id >= 0 ? id : id_of(c));  // id_of also throws the unknown-character error
  }
  return ids;
}

std::string Vocab::decode(std::span<const int> ids) const {
  std::u32string chars;
  chars.reserve(ids.size());
  for (std::size_t t = 0; t < ids.size(); ++t) {
    const int id = ids[t];
    if (id < 0 || static_cast<std::size_t>(id) >= chars_.size()) {
      throw std::out_of_range("attn::Vocab::decode: token id " + std::to_string(id) +
                              " at position " + std::to_string(t) + " is outside [0, " +
                              std::to_string(chars_.size()) + ")");
    }
    chars.push_back(chars_[static_cast<std::size_t>(id)]);
  }
  return encode_utf8(chars);
}

}  // namespace attn
