// Wrong: only the first occurrence of the pair is merged.
#include "exercises.hpp"

namespace ex13 {

std::vector<int> merge_pair(std::span<const int> ids, attn::TokenPair pair, int new_id) {
  std::vector<int> out;
  bool merged = false;
  std::size_t i = 0;
  while (i < ids.size()) {
    if (!merged && i + 1 < ids.size() && ids[i] == pair.first && ids[i + 1] == pair.second) {
      out.push_back(new_id);
      merged = true;
      i += 2;
    } else {
      out.push_back(ids[i]);
      ++i;
    }
  }
  return out;
}

}  // namespace ex13
