// Wrong: the last id is paired with the first, as if the list were a ring.
#include "exercises.hpp"

namespace ex13 {

std::map<attn::TokenPair, std::size_t> count_pairs(std::span<const int> ids) {
  std::map<attn::TokenPair, std::size_t> counts;
  for (std::size_t i = 0; i < ids.size(); ++i) ++counts[{ids[i], ids[(i + 1) % ids.size()]}];
  return counts;
}

}  // namespace ex13
