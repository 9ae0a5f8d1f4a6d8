// Wrong: one token per UTF-8 byte instead of per character (code point).

#include "exercises.hpp"

namespace ex01 {

std::vector<int> encode(const attn::Vocab& vocab, std::string_view text) {
  std::vector<int> ids;
  for (const char byte : text) ids.push_back(vocab.id_of(static_cast<unsigned char>(byte)));
  return ids;
}

std::string decode(const attn::Vocab& vocab, std::span<const int> ids) {
  std::string text;
  for (const int id : ids) text += static_cast<char>(vocab.char_of(id));
  return text;
}

}  // namespace ex01
