// attn/ops/rmsnorm.hpp: RMSNorm (chapter 11; Zhang and Sennrich 2019; Llama, Mistral, Gemma), the
// reference, forward beside backward. LayerNorm without the mean: per token (row) of C features
//   rms^2 = (1/C) sum_j x_j^2,   rstd = 1 / sqrt(rms^2 + eps),   y_j = x_j * rstd * gamma_j
// No beta and no centring: the scale is what keeps deep stacks stable, and dropping the mean
// saves a reduction per token. eps = 1e-5 by default (Llama 2's). Templated on the scalar: float
// for the model, double for the gradient checks; sums in double.
#pragma once

#include <cstddef>

#include "attn/core/xt.hpp"

namespace attn {

// What the forward keeps for the backward: 1 / sqrt(mean(x^2) + eps) per row (token).
template <class S>
struct RmsNormCache {
  xt::xtensor<S, 1> rstd;  // (rows,)
};

// x (..., C), gamma (C,) -> y (..., C), for ranks 2 to 4. Throws std::invalid_argument naming the
// shapes, or when eps < 0.
template <class S, std::size_t N>
xt::xtensor<S, N> rms_norm(const xt::xtensor<S, N>& x, const xt::xtensor<S, 1>& gamma,
                           double eps = 1e-5);
// The forward that also fills `cache` (same output).
template <class S, std::size_t N>
xt::xtensor<S, N> rms_norm(const xt::xtensor<S, N>& x, const xt::xtensor<S, 1>& gamma, double eps,
                           RmsNormCache<S>& cache);

// Backward. With xhat = x * rstd and g = gamma * dy, per row of C:
//   dx = rstd * (g - xhat * mean(g * xhat))    (the direct path, and the path through rms)
//   dgamma = sum_rows dy * xhat
// LayerNorm's formula without its "- mean(g)" term: no mean was subtracted in the forward.
template <class S, std::size_t N>
struct RmsNormGrads {
  xt::xtensor<S, N> dx;      // like x
  xt::xtensor<S, 1> dgamma;  // (C,)
};
template <class S, std::size_t N>
RmsNormGrads<S, N> rms_norm_backward(const xt::xtensor<S, N>& dy, const xt::xtensor<S, N>& x,
                                     const xt::xtensor<S, 1>& gamma, const RmsNormCache<S>& cache);

}  // namespace attn
