// Wrong: the pair with the highest rank (the merge learned last, the longest token) goes first.
#include <optional>

#include "exercises.hpp"

namespace ex13 {

std::vector<int> encode_chunk(const attn::Bpe& bpe, std::string_view chunk) {
  std::vector<int> ids;
  for (const char c : chunk) ids.push_back(bpe.byte_id(static_cast<unsigned char>(c)));
  while (ids.size() >= 2) {
    std::optional<std::size_t> best;
    attn::TokenPair pair{0, 0};
    for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
      const auto rank = bpe.rank_of({ids[i], ids[i + 1]});
      if (rank && (!best || *rank > *best)) {
        best = rank;
        pair = {ids[i], ids[i + 1]};
      }
    }
    if (!best) break;
    ids = ex13::merge_pair(ids, pair, bpe.merges()[*best].id);
  }
  return ids;
}

}  // namespace ex13
