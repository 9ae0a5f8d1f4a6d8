// attn/ops/layernorm.hpp: layer normalisation over the last axis (chapter 06) and its backward
// (chapter 08): the reference, written like the pages. Per token (row) of C features:
//   mean = (1/C) sum_j x_j,   var = (1/C) sum_j (x_j - mean)^2   (biased, like nn.LayerNorm)
//   rstd = 1 / sqrt(var + eps),   xhat = (x - mean) * rstd,   y = xhat * gamma + beta
// eps = 1e-5 by default. The model's fast path runs the same math in attn/fast/layernorm.hpp.
#pragma once

#include <concepts>

#include "attn/core/xt.hpp"

namespace attn {

// x (..., C), gamma (C,), beta (C,) -> (..., C). Throws std::invalid_argument naming the shapes.
template <std::size_t N>
Tensor<N> layer_norm(const Tensor<N>& x, const Vector& gamma, const Vector& beta,
                     float eps = 1e-5f);

extern template Tensor<2> layer_norm<2>(const Tensor<2>&, const Vector&, const Vector&, float);
extern template Tensor<3> layer_norm<3>(const Tensor<3>&, const Vector&, const Vector&, float);

// What the forward keeps for the backward: per row (token) the mean and 1/sqrt(var + eps).
template <class Real>
struct LayerNormCacheOf {
  xt::xtensor<Real, 1> mean;  // (rows,)
  xt::xtensor<Real, 1> rstd;  // (rows,)
};
using LayerNormCache = LayerNormCacheOf<float>;
using LayerNormCache64 = LayerNormCacheOf<double>;
// The forward that also fills `cache` (same output as layer_norm).
template <std::size_t N>
Tensor<N> layer_norm(const Tensor<N>& x, const Vector& gamma, const Vector& beta, float eps,
                     LayerNormCache& cache);

// Backward (chapter 08). With xhat = (x - mean) * rstd and g = gamma * dy, per row of C:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))     (the three terms)
//   dgamma += sum_rows dy * xhat,   dbeta += sum_rows dy   (accumulated)
// dx is overwritten (resized if needed); it may be dy itself. rstd is taken from the cache; the
// mean is recomputed from x in double (the cache's float mean of a token near 1e4 is off by up to
// 5e-4, a large error next to a spread of 0.01).
template <std::size_t N>
void layer_norm_backward(const Tensor<N>& dy, const Tensor<N>& x, const Vector& gamma,
                         const LayerNormCache& cache, Tensor<N>& dx, Vector& dgamma, Vector& dbeta);
// The same recomputing mean and rstd from x, returning fresh gradients (chapters, tests).
template <std::size_t N, class Real = float>
struct LayerNormGrads {
  xt::xtensor<Real, N> dx;      // like x
  xt::xtensor<Real, 1> dgamma;  // (C,)
  xt::xtensor<Real, 1> dbeta;   // (C,)
};
template <std::size_t N>
LayerNormGrads<N> layer_norm_backward(const Tensor<N>& dy, const Tensor<N>& x, const Vector& gamma,
                                      float eps = 1e-5f);

// The float64 twins, for the gradient checks of chapter 08 (attn::check_gradients): the same
// code instantiated on double. (Constrained to double, so a float call never picks them.)
template <std::size_t N, std::same_as<double> Real>
xt::xtensor<Real, N> layer_norm(const xt::xtensor<Real, N>& x, const xt::xtensor<Real, 1>& gamma,
                                const xt::xtensor<Real, 1>& beta, double eps = 1e-5);
template <std::size_t N, std::same_as<double> Real>
xt::xtensor<Real, N> layer_norm(const xt::xtensor<Real, N>& x, const xt::xtensor<Real, 1>& gamma,
                                const xt::xtensor<Real, 1>& beta, double eps,
                                LayerNormCacheOf<Real>& cache);
template <std::size_t N, std::same_as<double> Real>
void layer_norm_backward(const xt::xtensor<Real, N>& dy, const xt::xtensor<Real, N>& x,
                         const xt::xtensor<Real, 1>& gamma, const LayerNormCacheOf<Real>& cache,
                         xt::xtensor<Real, N>& dx, xt::xtensor<Real, 1>& dgamma,
                         xt::xtensor<Real, 1>& dbeta);
template <std::size_t N, std::same_as<double> Real>
LayerNormGrads<N, Real> layer_norm_backward(const xt::xtensor<Real, N>& dy,
                                            const xt::xtensor<Real, N>& x,
                                            const xt::xtensor<Real, 1>& gamma, double eps = 1e-5);
extern template Tensor64<3> layer_norm<3, double>(const Tensor64<3>&, const Tensor64<1>&,
                                                  const Tensor64<1>&, double);
extern template Tensor64<3> layer_norm<3, double>(const Tensor64<3>&, const Tensor64<1>&,
                                                  const Tensor64<1>&, double, LayerNormCache64&);
extern template void layer_norm_backward<3, double>(const Tensor64<3>&, const Tensor64<3>&,
                                                    const Tensor64<1>&, const LayerNormCache64&,
                                                    Tensor64<3>&, Tensor64<1>&, Tensor64<1>&);
extern template LayerNormGrads<3, double> layer_norm_backward<3, double>(const Tensor64<3>&,
                                                                         const Tensor64<3>&,
                                                                         const Tensor64<1>&,
                                                                         double);

}  // namespace attn
