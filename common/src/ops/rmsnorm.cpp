// rmsnorm.cpp: RMSNorm over the last axis (chapter 11) and its backward: the reference, the page's
// equations in the page's order, one token (row) at a time, sums in double.
#include "attn/ops/rmsnorm.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "attn/core/check.hpp"

namespace attn {

namespace {

// x (..., C) with C >= 1 and gamma (C,).
template <class S, std::size_t N>
void check_rms_norm(const char* fn, const xt::xtensor<S, N>& x, const xt::xtensor<S, 1>& gamma) {
  const std::size_t C = x.shape()[N - 1];
  if (C == 0 || gamma.size() != C) {
    shape_error(fn, "x (..., C) with C > 0 and gamma (C,)",
                "x " + shape_str(x.shape()) + ", gamma " + shape_str(gamma.shape()));
  }
}

}  // namespace

// x (..., C) seen as (rows, C), gamma (C,) -> y (..., C); cache.rstd (rows,).
template <class S, std::size_t N>
xt::xtensor<S, N> rms_norm(const xt::xtensor<S, N>& x, const xt::xtensor<S, 1>& gamma, double eps,
                           RmsNormCache<S>& cache) {
  check_rms_norm<S, N>("attn::rms_norm", x, gamma);
  require(std::isfinite(eps) && eps >= 0.0, "attn::rms_norm",
          [&] { return "eps must be a finite number >= 0, got " + std::to_string(eps); });
  const std::size_t C = x.shape()[N - 1], rows = x.size() / C;
  xt::xtensor<S, N> y = xt::xtensor<S, N>::from_shape(x.shape());
  cache.rstd = xt::xtensor<S, 1>::from_shape({rows});
  for (std::size_t r = 0; r < rows; ++r) {
    const S* xr = x.data() + r * C;  // token r, (C,)
    S* yr = y.data() + r * C;        // (C,)
    // 1. The mean square: rms^2 = (1/C) sum_j x_j^2 (no mean subtracted).
    double squares = 0.0;
    for (std::size_t j = 0; j < C; ++j)
      squares += static_cast<double>(xr[j]) * static_cast<double>(xr[j]);
    // 2. rstd = 1 / sqrt(rms^2 + eps): eps keeps a zero token from dividing by zero (y = 0).
    const double rstd = 1.0 / std::sqrt(squares / static_cast<double>(C) + eps);
    // 3. y_j = x_j * rstd * gamma_j: every token rescaled to root-mean-square 1, then gained.
    for (std::size_t j = 0; j < C; ++j)
      yr[j] = static_cast<S>(static_cast<double>(xr[j]) * rstd * static_cast<double>(gamma(j)));
    cache.rstd(r) = static_cast<S>(rstd);
  }
  return y;
}

template <class S, std::size_t N>
xt::xtensor<S, N> rms_norm(const xt::xtensor<S, N>& x, const xt::xtensor<S, 1>& gamma, double eps) {
  RmsNormCache<S> unused;
  return rms_norm<S, N>(x, gamma, eps, unused);
}

// dy, x (..., C) seen as (rows, C), gamma (C,), cache.rstd (rows,) -> dx like x, dgamma (C,).
template <class S, std::size_t N>
RmsNormGrads<S, N> rms_norm_backward(const xt::xtensor<S, N>& dy, const xt::xtensor<S, N>& x,
                                     const xt::xtensor<S, 1>& gamma, const RmsNormCache<S>& cache) {
  const char* fn = "attn::rms_norm_backward";
  check_rms_norm<S, N>(fn, x, gamma);
  if (dy.shape() != x.shape()) {
    shape_error(fn, "dy of the same shape as x " + shape_str(x.shape()),
                "dy " + shape_str(dy.shape()));
  }
  const std::size_t C = x.shape()[N - 1], rows = x.size() / C;
  if (cache.rstd.size() != rows) {
    shape_error(fn,
                "a cache from the forward of x " + shape_str(x.shape()) + ": rstd (" +
                    std::to_string(rows) + ",)",
                "rstd " + shape_str(cache.rstd.shape()));
  }
  RmsNormGrads<S, N> grads{xt::xtensor<S, N>::from_shape(x.shape()),
                           xt::xtensor<S, 1>::from_shape({C})};
  std::vector<double> dgamma(C, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    const S* xr = x.data() + r * C;    // (C,)
    const S* dyr = dy.data() + r * C;  // (C,)
    S* dxr = grads.dx.data() + r * C;  // (C,)
    const double rstd = static_cast<double>(cache.rstd(r));
    // 1. xhat_j = x_j * rstd and g_j = gamma_j * dy_j, the gradient reaching xhat.
    auto xhat = [&](std::size_t j) { return static_cast<double>(xr[j]) * rstd; };
    auto g = [&](std::size_t j) {
      return static_cast<double>(gamma(j)) * static_cast<double>(dyr[j]);
    };
    // 2. b = mean_j g_j xhat_j: how much the row's rms moves the loss.
    double b = 0.0;
    for (std::size_t j = 0; j < C; ++j) b += g(j) * xhat(j);
    b /= static_cast<double>(C);
    // 3. dx_j = rstd (g_j - xhat_j b): the direct path, minus the path through rstd (every x_j
    //    changes the row's mean square).
    for (std::size_t j = 0; j < C; ++j) dxr[j] = static_cast<S>(rstd * (g(j) - xhat(j) * b));
    // 4. y_j = xhat_j gamma_j, so dgamma_j = sum over rows of dy_j xhat_j.
    for (std::size_t j = 0; j < C; ++j) dgamma[j] += static_cast<double>(dyr[j]) * xhat(j);
  }
  for (std::size_t j = 0; j < C; ++j) grads.dgamma(j) = static_cast<S>(dgamma[j]);
  return grads;
}

#define ATTN_RMSNORM_INSTANTIATE(S, N)                                                          \
  template xt::xtensor<S, N> rms_norm<S, N>(const xt::xtensor<S, N>&, const xt::xtensor<S, 1>&, \
                                            double);                                            \
  template xt::xtensor<S, N> rms_norm<S, N>(const xt::xtensor<S, N>&, const xt::xtensor<S, 1>&, \
                                            double, RmsNormCache<S>&);                          \
  template RmsNormGrads<S, N> rms_norm_backward<S, N>(                                          \
      const xt::xtensor<S, N>&, const xt::xtensor<S, N>&, const xt::xtensor<S, 1>&,             \
      const RmsNormCache<S>&);
ATTN_RMSNORM_INSTANTIATE(float, 2)
ATTN_RMSNORM_INSTANTIATE(float, 3)
ATTN_RMSNORM_INSTANTIATE(float, 4)
ATTN_RMSNORM_INSTANTIATE(double, 2)
ATTN_RMSNORM_INSTANTIATE(double, 3)
ATTN_RMSNORM_INSTANTIATE(double, 4)
#undef ATTN_RMSNORM_INSTANTIATE

}  // namespace attn
