// Exercise ex11.5: RMSNorm's backward (chapter 11, docs/11-modern-attention.md).
//
// Goal: like attn::rms_norm_backward. The forward, per token (row of C features):
//   rstd = 1 / sqrt(mean(x^2) + eps),  xhat = x * rstd,  y = xhat * gamma
// Given dy = dL/dy (B, T, C), return
//   dgamma (C,)    summed over every row
//   dx (B, T, C)   through both paths: x itself, and x through rstd
// Derive dx on paper first (the page does it for LayerNorm in chapter 08; RMSNorm has one term
// fewer). Sum in double. Throw std::invalid_argument when dy and x differ in shape or gamma is
// not (C,).
//
// Check: build/default/bin/attn-check 11
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

attn::RmsNormGrads<float, 3> rms_norm_backward(const attn::Tensor<3>& dy, const attn::Tensor<3>& x,
                                               const attn::Vector& gamma, double eps) {
  // TODO(ex11.5): per row, recompute rstd and xhat; dgamma += dy * xhat; with g = gamma * dy,
  // dx = rstd * (g - xhat * mean(g * xhat)).
  throw std::logic_error("TODO ex11.5: RMSNorm backward");
}

}  // namespace ex11
