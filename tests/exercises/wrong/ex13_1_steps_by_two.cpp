// Wrong: pairs counted without overlap, stepping two ids at a time, so [5, 5, 5] holds (5, 5)
// once and the pairs that start at odd positions are never seen.
#include "exercises.hpp"

namespace ex13 {

std::map<attn::TokenPair, std::size_t> count_pairs(std::span<const int> ids) {
  std::map<attn::TokenPair, std::size_t> counts;
  for (std::size_t i = 0; i + 1 < ids.size(); i += 2) ++counts[{ids[i], ids[i + 1]}];
  return counts;
}

}  // namespace ex13
