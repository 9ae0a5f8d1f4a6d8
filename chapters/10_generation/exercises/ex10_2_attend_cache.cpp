// Exercise ex10.2: one new query attending over the cache (chapter 10, docs/10-generation.md).
//
// Goal: like attn::attend_cache. The token being generated has one query per head; the cache
// holds the keys and values of every position so far, itself included (position n - 1).
//   q (B, C) with C = H * hs, heads side by side; keys, values (B, H, T_max, hs); 1 <= n <= T_max
//   for every b and head h, with q_h = q[b, h*hs : (h+1)*hs]:
//     s_j = q_h . keys[b, h, j, :] / sqrt(hs)          j = 0..n-1
//     w   = softmax(s)                                 (subtract the max before exp)
//     out[b, h*hs : (h+1)*hs] = sum_j w_j values[b, h, j, :]
// No mask: the cache only holds the past. Positions n..T_max-1 are not filled yet: never read
// them.
// Throw std::invalid_argument for n = 0, n > T_max, or shapes that do not fit together.
//
// Check: build/default/bin/attn-check 10
#include <stdexcept>

#include "exercises.hpp"

namespace ex10 {

attn::Matrix attend_cache(const attn::Matrix& q, const attn::Tensor<4>& keys,
                          const attn::Tensor<4>& values, std::size_t n) {
  // TODO(ex10.2): check the shapes and n; per (b, h): n scaled dot products, a stable softmax,
  // the weighted sum of the first n values into out's column block h.
  throw std::logic_error("TODO ex10.2: attend over the cache");
}

}  // namespace ex10
