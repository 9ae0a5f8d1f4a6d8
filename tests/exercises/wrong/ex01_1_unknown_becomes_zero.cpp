// Wrong: a character outside the vocabulary silently becomes id 0.
#include "attn/io/text.hpp"
#include "exercises.hpp"

namespace ex01 {

std::vector<int> encode(const attn::Vocab& vocab, std::string_view text) {
  std::vector<int> ids;
  for (const char32_t c : attn::decode_utf8(text))
    ids.push_back(vocab.contains(c) ? vocab.id_of(c) : 0);
  return ids;
}

std::string decode(const attn::Vocab& vocab, std::span<const int> ids) {
  std::u32string chars;
  for (const int id : ids) chars += vocab.char_of(id);
  return attn::encode_utf8(chars);
}

}  // namespace ex01
