// Wrong: merges by position, not rank: the leftmost adjacent pair that has any merge goes first.
#include "exercises.hpp"

namespace ex13 {

std::vector<int> encode_chunk(const attn::Bpe& bpe, std::string_view chunk) {
  std::vector<int> ids;
  for (const char c : chunk) ids.push_back(bpe.byte_id(static_cast<unsigned char>(c)));
  bool merged = true;
  while (merged) {
    merged = false;
    for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
      const auto rank = bpe.rank_of({ids[i], ids[i + 1]});
      if (rank) {
        ids = ex13::merge_pair(ids, {ids[i], ids[i + 1]}, bpe.merges()[*rank].id);
        merged = true;
        break;
      }
    }
  }
  return ids;
}

}  // namespace ex13
