// Exercise ex08.3: the LayerNorm backward (chapter 08, docs/08-backprop.md).
//
// Goal: the gradients of y = xhat * gamma + beta, xhat = (x - mean) * rstd, with
// rstd = 1 / sqrt(var + eps) and mean, var (biased, divide by C) over each token's C features.
//   dy (B, T, C), x (B, T, C), gamma (C,) -> dx (B, T, C), dgamma (C,), dbeta (C,)
//   dbeta  = sum over all tokens of dy
//   dgamma = sum over all tokens of dy * xhat
//   per token, with g = gamma * dy:
//   dx = rstd * (g - mean_c(g) - xhat * mean_c(g * xhat))      (the three terms)
// The first term is the direct path; the second is the path through the mean, the third the path
// through the variance. Recompute mean and rstd from x, as the forward did.
// Throw std::invalid_argument when dy and x differ in shape or gamma is not (C,).
//
// Check: build/default/bin/attn-check 08
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

attn::LayerNormGrads<3> layer_norm_backward(const attn::Tensor<3>& dy, const attn::Tensor<3>& x,
                                            const attn::Vector& gamma, float eps) {
  // TODO(ex08.3): dbeta, dgamma summed over tokens; per token dx from the three-term formula.
  throw std::logic_error("TODO ex08.3: LayerNorm backward");
}

}  // namespace ex08
