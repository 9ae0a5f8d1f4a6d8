// Exercise ex11.7: ALiBi's bias (chapter 11, docs/11-modern-attention.md).
//
// Goal: like attn::alibi_bias (Press et al., "Train Short, Test Long"). ALiBi adds no position
// vector: each head h adds to the score of query t and key s a penalty that grows with the
// distance, with a slope m_h of its own:
//   (n_heads, T) -> bias (H, T, T),  bias[h, t, s] = -m_h * (t - s)   for every t, s
// (above the diagonal the bias is positive; the causal mask hides those keys).
// The slopes, as the paper's reference code computes them for any H:
//   - H a power of two: m_h = 2^(-8 (h + 1) / H), h = 0 .. H - 1 (H = 8: 1/2, 1/4, ..., 1/256);
//   - otherwise: the n slopes of n, the largest power of two below H, then the first H - n of
//     every other slope of 2n (the ones at h = 0, 2, 4, ... of 2^(-8 (h + 1) / 2n)).
// Compute the slopes in double. Throw std::invalid_argument for n_heads 0.
//
// Check: build/default/bin/attn-check 11
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

attn::Tensor<3> alibi_bias(std::size_t n_heads, std::size_t T) {
  // TODO(ex11.7): check n_heads; the H slopes, then the (H, T, T) bias.
  throw std::logic_error("TODO ex11.7: ALiBi's bias");
}

}  // namespace ex11
