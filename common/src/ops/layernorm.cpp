// layernorm.cpp: layer normalisation over the last axis (chapter 06) and its backward (chapter
// 08), as in PyTorch's nn.LayerNorm: the reference, the page's equations in the page's order. The
// transformer block applies it before (pre-norm) or after (post-norm) each sub-layer, so the
// activations keep a unit scale however many blocks we stack. The model's fast path runs the same
// math in fast/layernorm.cpp (SIMD lanes, threads), tested equal to this file.
#include "attn/ops/layernorm.hpp"

#include <cmath>
#include <vector>

#include "layernorm_checks.hpp"

namespace attn {

namespace {

// mean = (1/C) sum_j x_j of one row, summed in double: a float sum of 512 values near 1e4 reaches
// 5e6, where one float step is 0.5, and the mean would drift by ~1e-3, 15% of the spread of a
// 1e4 + N(0, 0.01^2) token. (Plain loops on raw rows: lazy xtensor reducers with keep_dims give
// wrong numbers in xtensor 0.24, see docs/xtensor-for-numpy-users.md, pitfall 1.)
template <class Real>
double row_mean(const Real* x, std::size_t C) {
  double sum = 0.0;
  for (std::size_t j = 0; j < C; ++j) sum += static_cast<double>(x[j]);
  return sum / static_cast<double>(C);
}

// The bodies, on float or double (Real; the float64 twins serve chapter 08's gradient checks).
// x (..., C) seen as (rows, C), gamma (C,), beta (C,) -> y (..., C);
// cache.mean, cache.rstd (rows,).
template <std::size_t N, class Real>
xt::xtensor<Real, N> layer_norm_of(const xt::xtensor<Real, N>& x, const xt::xtensor<Real, 1>& gamma,
                                   const xt::xtensor<Real, 1>& beta, Real eps,
                                   LayerNormCacheOf<Real>& cache) {
  detail::check_layer_norm(x, gamma, beta, eps);
  const std::size_t C = x.shape()[N - 1], rows = x.size() / C;
  xt::xtensor<Real, N> y(x.shape());
  cache.mean = xt::xtensor<Real, 1>::from_shape({rows});
  cache.rstd = xt::xtensor<Real, 1>::from_shape({rows});
  for (std::size_t r = 0; r < rows; ++r) {
    const Real* xr = x.data() + r * C;  // token r, (C,)
    Real* yr = y.data() + r * C;        // (C,)
    // 1. mean = (1/C) sum_j x_j
    const double mean = row_mean(xr, C);
    // 2. var = (1/C) sum_j (x_j - mean)^2: biased (divide by C, not C - 1), like PyTorch. Two
    //    passes instead of E[x^2] - E[x]^2: for a token near 1e4 with spread 0.01, E[x^2] = 1e8
    //    and the variance 1e-4 would be lost in the rounding of the difference.
    double squares = 0.0;
    for (std::size_t j = 0; j < C; ++j) {
      const double d = static_cast<double>(xr[j]) - mean;
      squares += d * d;
    }
    const double var = squares / static_cast<double>(C);
    // 3. rstd = 1 / sqrt(var + eps). eps keeps a constant token (var = 0) from dividing by zero:
    //    its xhat is 0, so y = beta instead of NaN.
    const double rstd = 1.0 / std::sqrt(var + static_cast<double>(eps));
    // 4. y_j = xhat_j * gamma_j + beta_j with xhat_j = (x_j - mean) * rstd, in double: the mean
    //    rounded to float could be off by 5e-4 near 1e4, a large error next to a spread of 0.01.
    for (std::size_t j = 0; j < C; ++j) {
      const double xhat = (static_cast<double>(xr[j]) - mean) * rstd;
      yr[j] =
          static_cast<Real>(xhat * static_cast<double>(gamma(j)) + static_cast<double>(beta(j)));
    }
    cache.mean(r) = static_cast<Real>(mean);
    cache.rstd(r) = static_cast<Real>(rstd);
  }
  return y;
}

// dy, x (..., C) seen as (rows, C), gamma (C,), cache (rows,) -> dx like x (overwritten);
// dgamma, dbeta (C,) accumulated.
template <std::size_t N, class Real>
void layer_norm_backward_of(const xt::xtensor<Real, N>& dy, const xt::xtensor<Real, N>& x,
                            const xt::xtensor<Real, 1>& gamma, const LayerNormCacheOf<Real>& cache,
                            xt::xtensor<Real, N>& dx, xt::xtensor<Real, 1>& dgamma,
                            xt::xtensor<Real, 1>& dbeta) {
  detail::check_layer_norm_backward(dy, x, gamma, cache.rstd, dgamma, dbeta);
  const std::size_t C = x.shape()[N - 1], rows = x.size() / C;
  const double inv_C = 1.0 / static_cast<double>(C);
  if (dx.shape() != x.shape()) dx.resize(x.shape());
  std::vector<double> dgamma_sum(C, 0.0), dbeta_sum(C, 0.0);  // over all rows, in double
  for (std::size_t r = 0; r < rows; ++r) {
    const Real* xr = x.data() + r * C;    // (C,)
    const Real* dyr = dy.data() + r * C;  // (C,)
    Real* dxr = dx.data() + r * C;        // (C,), may be dyr
    // 1. xhat_j = (x_j - mean) * rstd, as the forward saw it (mean recomputed in double).
    const double mean = row_mean(xr, C);
    const double rstd = static_cast<double>(cache.rstd(r));
    auto xhat = [&](std::size_t j) { return (static_cast<double>(xr[j]) - mean) * rstd; };
    // 2. g_j = gamma_j dy_j, the gradient reaching xhat, and its two row means:
    //    a = mean_j g_j,  b = mean_j g_j xhat_j.
    auto g = [&](std::size_t j) {
      return static_cast<double>(gamma(j)) * static_cast<double>(dyr[j]);
    };
    double a = 0.0, b = 0.0;
    for (std::size_t j = 0; j < C; ++j) {
      a += g(j);
      b += g(j) * xhat(j);
    }
    a *= inv_C;
    b *= inv_C;
    // 3. The parameters: y = xhat * gamma + beta, so dgamma_j += dy_j xhat_j, dbeta_j += dy_j.
    for (std::size_t j = 0; j < C; ++j) {
      dgamma_sum[j] += static_cast<double>(dyr[j]) * xhat(j);
      dbeta_sum[j] += static_cast<double>(dyr[j]);
    }
    // 4. The three terms: dx_j = rstd (g_j - a - xhat_j b). g_j is the direct path; -a because
    //    every x_j moves the mean; -xhat_j b because every x_j moves the variance. (dxr may be
    //    dyr: element j is read before it is written.)
    for (std::size_t j = 0; j < C; ++j) dxr[j] = static_cast<Real>(rstd * (g(j) - a - xhat(j) * b));
  }
  for (std::size_t j = 0; j < C; ++j) {
    dgamma(j) = static_cast<Real>(static_cast<double>(dgamma(j)) + dgamma_sum[j]);
    dbeta(j) = static_cast<Real>(static_cast<double>(dbeta(j)) + dbeta_sum[j]);
  }
}

template <std::size_t N, class Real>
LayerNormGrads<N, Real> layer_norm_backward_of(const xt::xtensor<Real, N>& dy,
                                               const xt::xtensor<Real, N>& x,
                                               const xt::xtensor<Real, 1>& gamma, Real eps) {
  detail::check_layer_norm_input(x, gamma);
  require(eps >= Real(0), detail::kLayerNormBackward,
          [&] { return "eps must be >= 0, got " + std::to_string(eps); });
  // The cache from the forward (beta does not enter mean or rstd: zeros will do).
  const std::size_t C = x.shape()[N - 1];
  LayerNormCacheOf<Real> cache;
  (void)layer_norm_of<N>(x, gamma, xt::xtensor<Real, 1>(xt::zeros<Real>({C})), eps, cache);
  LayerNormGrads<N, Real> grads{xt::xtensor<Real, N>(), xt::zeros<Real>({C}), xt::zeros<Real>({C})};
  layer_norm_backward_of<N>(dy, x, gamma, cache, grads.dx, grads.dgamma, grads.dbeta);
  return grads;
}

}  // namespace

template <std::size_t N>
Tensor<N> layer_norm(const Tensor<N>& x, const Vector& gamma, const Vector& beta, float eps,
                     LayerNormCache& cache) {
  return layer_norm_of<N>(x, gamma, beta, eps, cache);
}
template <std::size_t N>
Tensor<N> layer_norm(const Tensor<N>& x, const Vector& gamma, const Vector& beta, float eps) {
  LayerNormCache unused;
  return layer_norm_of<N>(x, gamma, beta, eps, unused);
}
template <std::size_t N>
void layer_norm_backward(const Tensor<N>& dy, const Tensor<N>& x, const Vector& gamma,
                         const LayerNormCache& cache, Tensor<N>& dx, Vector& dgamma,
                         Vector& dbeta) {
  layer_norm_backward_of<N>(dy, x, gamma, cache, dx, dgamma, dbeta);
}
template <std::size_t N>
LayerNormGrads<N> layer_norm_backward(const Tensor<N>& dy, const Tensor<N>& x, const Vector& gamma,
                                      float eps) {
  return layer_norm_backward_of<N>(dy, x, gamma, eps);
}

template <std::size_t N, std::same_as<double> Real>
xt::xtensor<Real, N> layer_norm(const xt::xtensor<Real, N>& x, const xt::xtensor<Real, 1>& gamma,
                                const xt::xtensor<Real, 1>& beta, double eps) {
  LayerNormCacheOf<Real> unused;
  return layer_norm_of<N>(x, gamma, beta, eps, unused);
}
template <std::size_t N, std::same_as<double> Real>
xt::xtensor<Real, N> layer_norm(const xt::xtensor<Real, N>& x, const xt::xtensor<Real, 1>& gamma,
                                const xt::xtensor<Real, 1>& beta, double eps,
                                LayerNormCacheOf<Real>& cache) {
  return layer_norm_of<N>(x, gamma, beta, eps, cache);
}
template <std::size_t N, std::same_as<double> Real>
void layer_norm_backward(const xt::xtensor<Real, N>& dy, const xt::xtensor<Real, N>& x,
                         const xt::xtensor<Real, 1>& gamma, const LayerNormCacheOf<Real>& cache,
                         xt::xtensor<Real, N>& dx, xt::xtensor<Real, 1>& dgamma,
                         xt::xtensor<Real, 1>& dbeta) {
  layer_norm_backward_of<N>(dy, x, gamma, cache, dx, dgamma, dbeta);
}
template <std::size_t N, std::same_as<double> Real>
LayerNormGrads<N, Real> layer_norm_backward(const xt::xtensor<Real, N>& dy,
                                            const xt::xtensor<Real, N>& x,
                                            const xt::xtensor<Real, 1>& gamma, double eps) {
  return layer_norm_backward_of<N>(dy, x, gamma, eps);
}

template Tensor<2> layer_norm<2>(const Tensor<2>&, const Vector&, const Vector&, float);
template Tensor<3> layer_norm<3>(const Tensor<3>&, const Vector&, const Vector&, float);
template Tensor<2> layer_norm<2>(const Tensor<2>&, const Vector&, const Vector&, float,
                                 LayerNormCache&);
template Tensor<3> layer_norm<3>(const Tensor<3>&, const Vector&, const Vector&, float,
                                 LayerNormCache&);
template void layer_norm_backward<2>(const Tensor<2>&, const Tensor<2>&, const Vector&,
                                     const LayerNormCache&, Tensor<2>&, Vector&, Vector&);
template void layer_norm_backward<3>(const Tensor<3>&, const Tensor<3>&, const Vector&,
                                     const LayerNormCache&, Tensor<3>&, Vector&, Vector&);
template LayerNormGrads<2> layer_norm_backward<2>(const Tensor<2>&, const Tensor<2>&, const Vector&,
                                                  float);
template LayerNormGrads<3> layer_norm_backward<3>(const Tensor<3>&, const Tensor<3>&, const Vector&,
                                                  float);
template Tensor64<3> layer_norm<3, double>(const Tensor64<3>&, const Tensor64<1>&,
                                           const Tensor64<1>&, double);
template Tensor64<3> layer_norm<3, double>(const Tensor64<3>&, const Tensor64<1>&,
                                           const Tensor64<1>&, double, LayerNormCache64&);
template void layer_norm_backward<3, double>(const Tensor64<3>&, const Tensor64<3>&,
                                             const Tensor64<1>&, const LayerNormCache64&,
                                             Tensor64<3>&, Tensor64<1>&, Tensor64<1>&);
template LayerNormGrads<3, double> layer_norm_backward<3, double>(const Tensor64<3>&,
                                                                  const Tensor64<3>&,
                                                                  const Tensor64<1>&, double);

}  // namespace attn
