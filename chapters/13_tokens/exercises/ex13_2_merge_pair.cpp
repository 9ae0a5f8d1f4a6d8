// Exercise ex13.2: one merge (chapter 13, docs/13-tokens.md).
//
// Goal: like attn::merge_pair. Once training has chosen a pair, every occurrence of it becomes
// one new token; encoding replays the same step.
// Input: ids (n,), the pair (left, right), the new token's id. Output: the ids after the merge.
// Contract: scan left to right; where ids[i], ids[i+1] is the pair, emit new_id and use up both;
// elsewhere copy. Occurrences never overlap: merging (7, 7) in [7, 7, 7] gives [new, 7], and in
// [7, 7, 7, 7] gives [new, new]. A pair that does not occur leaves the ids as they were.
//
// Check: build/default/bin/attn-check 13
#include <stdexcept>

#include "exercises.hpp"

namespace ex13 {

std::vector<int> merge_pair(std::span<const int> ids, attn::TokenPair pair, int new_id) {
  // TODO(ex13.2): build the merged list left to right; after a match, the next position to look
  // at is two further on.
  throw std::logic_error("TODO ex13.2: merge one pair");
}

}  // namespace ex13
