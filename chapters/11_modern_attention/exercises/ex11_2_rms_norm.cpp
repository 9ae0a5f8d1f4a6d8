// Exercise ex11.2: RMSNorm (chapter 11, docs/11-modern-attention.md).
//
// Goal: like attn::rms_norm. LayerNorm without the mean and without beta: per token (row of C
// features)
//   x (B, T, C), gamma (C,) -> y (B, T, C)
//   y_j = x_j / sqrt(mean over the row of x^2 + eps) * gamma_j
// Sum in double. Throw std::invalid_argument when gamma is not (C,).
//
// Check: build/default/bin/attn-check 11
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

attn::Tensor<3> rms_norm(const attn::Tensor<3>& x, const attn::Vector& gamma, double eps) {
  // TODO(ex11.2): check gamma's shape, then scale every row by 1 / sqrt(mean(x^2) + eps) and
  // multiply by gamma. No mean is subtracted.
  throw std::logic_error("TODO ex11.2: RMSNorm");
}

}  // namespace ex11
