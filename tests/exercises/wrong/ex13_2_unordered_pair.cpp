// Wrong: the pair is matched in either order, so (1, 2) also merges 2, 1.
#include "exercises.hpp"

namespace ex13 {

std::vector<int> merge_pair(std::span<const int> ids, attn::TokenPair pair, int new_id) {
  std::vector<int> out;
  std::size_t i = 0;
  while (i < ids.size()) {
    const bool here = i + 1 < ids.size() &&
                      ((ids[i] == pair.first && ids[i + 1] == pair.second) ||
                       (ids[i] == pair.second && ids[i + 1] == pair.first));
    if (here) {
      out.push_back(new_id);
      i += 2;
    } else {
      out.push_back(ids[i]);
      ++i;
    }
  }
  return out;
}

}  // namespace ex13
