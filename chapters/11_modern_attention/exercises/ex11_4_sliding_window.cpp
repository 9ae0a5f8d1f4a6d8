// Exercise ex11.4: sliding-window attention (chapter 11, docs/11-modern-attention.md).
//
// Goal: like attn::sliding_window_attention. Causal attention where each query sees only the
// last W keys, itself included:
//   q, k, v (B, H, T, hs) -> out (B, H, T, hs), weights (B, H, T, T)
//   query t sees keys s with max(0, t - W + 1) <= s <= t
//   weights[t, s] = softmax over the visible s of q_t . k_s / sqrt(hs); exactly 0 elsewhere
//   out[t] = sum_s weights[t, s] v_s
// W >= T is plain causal attention. Keys outside a query's window play no part in its row: not
// in the max, not in the sum (the tests give such a key a score of 1000, or NaN). Scores may be
// large (near 1000): the softmax must not overflow. Throw std::invalid_argument for window 0 or
// q, k, v of different shapes.
//
// Check: build/default/bin/attn-check 11
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

attn::WindowAttention<float> sliding_window_attention(const attn::Tensor<4>& q,
                                                      const attn::Tensor<4>& k,
                                                      const attn::Tensor<4>& v,
                                                      std::size_t window) {
  // TODO(ex11.4): check the window and the shapes; per (b, h, t), a stable softmax over the keys
  // of the window only, then the weighted sum of their values.
  throw std::logic_error("TODO ex11.4: sliding-window attention");
}

}  // namespace ex11
