// Wrong: the loop looks at pairs only (i + 1 < n), so a last id that is not part of a merge is
// lost.
#include "exercises.hpp"

namespace ex13 {

std::vector<int> merge_pair(std::span<const int> ids, attn::TokenPair pair, int new_id) {
  std::vector<int> out;
  std::size_t i = 0;
  while (i + 1 < ids.size()) {
    if (ids[i] == pair.first && ids[i + 1] == pair.second) {
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
