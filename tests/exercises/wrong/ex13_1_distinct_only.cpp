// Wrong: each distinct pair is recorded with count 1 (a set of pairs, not their counts).
#include "exercises.hpp"

namespace ex13 {

std::map<attn::TokenPair, std::size_t> count_pairs(std::span<const int> ids) {
  std::map<attn::TokenPair, std::size_t> counts;
  for (std::size_t i = 0; i + 1 < ids.size(); ++i) counts[{ids[i], ids[i + 1]}] = 1;
  return counts;
}

}  // namespace ex13
