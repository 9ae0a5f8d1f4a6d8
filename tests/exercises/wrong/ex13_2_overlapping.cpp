// Wrong: after a match the scan moves on by one, not two, so overlapping occurrences are both
// merged: [7, 7, 7] with (7, 7) gives [new, new, 7] instead of [new, 7].
#include "exercises.hpp"

namespace ex13 {

std::vector<int> merge_pair(std::span<const int> ids, attn::TokenPair pair, int new_id) {
  std::vector<int> out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i + 1 < ids.size() && ids[i] == pair.first && ids[i + 1] == pair.second) {
      out.push_back(new_id);
    } else {
      out.push_back(ids[i]);
    }
  }
  return out;
}

}  // namespace ex13
