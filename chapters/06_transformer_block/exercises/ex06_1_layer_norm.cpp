// Exercise ex06.1: layer normalisation over the last axis (chapter 06,
// docs/06-transformer-block.md).
//
// Goal: give every token vector mean 0 and variance 1 over its C features, then let the learned
// gamma and beta rescale and shift each feature.
//   x (B, T, C), gamma (C,), beta (C,) -> y (B, T, C)
//   mean = (1/C) sum_c x[c]                      (one token at a time)
//   var  = (1/C) sum_c (x[c] - mean)^2           (the biased variance: divide by C, not C - 1)
//   y[c] = (x[c] - mean) / sqrt(var + eps) * gamma[c] + beta[c]
// eps (1e-5 by default) keeps a constant token (var = 0) finite: it becomes beta, not NaN.
// Throw std::invalid_argument if gamma or beta is not of shape (C,).
//
// Check: build/default/bin/attn-check 06
#include <stdexcept>

#include "exercises.hpp"

namespace ex06 {

attn::Tensor<3> layer_norm(const attn::Tensor<3>& x, const attn::Vector& gamma,
                           const attn::Vector& beta, float eps) {
  // TODO(ex06.1): return (B, T, C), y = (x - mean) / sqrt(var + eps) * gamma + beta per token (b,
  // t), mean and biased var over c; precise for values near 1000; std::invalid_argument if gamma or
  // beta is not (C,).
  throw std::logic_error("TODO ex06.1: layer norm");
}

}  // namespace ex06
