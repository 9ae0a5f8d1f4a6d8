// Exercise ex10.2: one new query attending over the cache (chapter 10, docs/10-generation.md).
//
// Goal: like attn::attend_cache. The token being generated has one query per head; the cache
// holds the keys and values of every position so far, itself included (position n - 1).
//   in:  q (B, C), C = H * hs, the heads side by side; keys, values (B, H, T_max, hs);
//        n, the positions filled, 1 <= n <= T_max
//   out: (B, C), head h of sequence b in columns h*hs .. (h+1)*hs: chapter 04's scaled attention
//        of that head's one query over the first n cached keys and values (docs/10-generation.md,
//        "The math"). No mask: the cache only holds the past.
// The contract:
//   - positions n..T_max-1 are not filled yet and hold anything (large numbers included): never
//     read them, not even for a max;
//   - finite for any finite scores: all of them far below 0 (-1000) or far above;
//   - throw std::invalid_argument for n = 0, n > T_max, values not shaped like keys, or q not
//     (B, H * hs) with the cache's B.
//
// Check: build/default/bin/attn-check 10
#include <stdexcept>

#include "exercises.hpp"

namespace ex10 {

attn::Matrix attend_cache(const attn::Matrix& q, const attn::Tensor<4>& keys,
                          const attn::Tensor<4>& values, std::size_t n) {
  // TODO(ex10.2): check n and every shape (q's batch too); return (B, C), each head's attention
  // over the first n positions only.
  throw std::logic_error("TODO ex10.2: attend over the cache");
}

}  // namespace ex10
