// Exercise ex11.5: RMSNorm's backward (chapter 11, docs/11-modern-attention.md).
//
// Goal: like attn::rms_norm_backward. The forward, per token (row of C features):
//   rstd = 1 / sqrt(mean(x^2) + eps),  xhat = x * rstd,  y = xhat * gamma
// Given dy = dL/dy (B, T, C), return
//   dgamma (C,)    dL/dgamma, every row's contribution added up
//   dx (B, T, C)   dL/dx, through both paths: x itself, and x through rstd
// What must hold (the tests check each):
//   - dx is the gradient of L = sum(dy * y): central differences of L agree with it;
//   - with eps = 0, scaling a row of x does not change its y, so dx of that row has no
//     component along x (dx . x = 0);
//   - the rows are independent: a row's dx depends on its own x and dy only.
// Derive dx on paper first (chapter 08 derives LayerNorm's; RMSNorm has no mean to subtract).
// Sum in double. Throw std::invalid_argument when dy and x differ in shape or gamma is not (C,).
//
// Check: build/default/bin/attn-check 11
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

attn::RmsNormGrads<float, 3> rms_norm_backward(const attn::Tensor<3>& dy, const attn::Tensor<3>& x,
                                               const attn::Vector& gamma, double eps) {
  // TODO(ex11.5): check the shapes; per row, recompute what the forward computed, then add the
  // row's share to dgamma and write its dx (your derivation).
  throw std::logic_error("TODO ex11.5: RMSNorm backward");
}

}  // namespace ex11
