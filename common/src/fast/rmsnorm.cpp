// fast/rmsnorm.cpp: RMSNorm forward and backward on the fast path (chapter 11): the reference's
// loops (ops/rmsnorm.cpp), per token in double, spread over the library's threads, into
// caller-owned buffers. dgamma is summed over the tokens in their order, as the reference does.
#include "attn/fast/rmsnorm.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/core/parallel.hpp"

namespace attn::fast {

namespace {

// Tokens per piece of work over the threads (each token on its own: any split, same result).
constexpr std::size_t kRmsRows = 256;

template <class Work>
void for_rows(std::size_t rows, const Work& work) {
  const std::size_t pieces = (rows + kRmsRows - 1) / kRmsRows;
  detail::run_parts(
      pieces, detail::worker_count(pieces), [&](std::size_t first, std::size_t last, std::size_t) {
        for (std::size_t r = first * kRmsRows; r < std::min(rows, last * kRmsRows); ++r) work(r);
      });
}

void check(const char* fn, const Tensor<3>& x, const Vector& gamma) {
  const std::size_t C = x.shape()[2];
  if (C == 0 || gamma.size() != C) {
    shape_error(fn, "x (..., C) with C > 0 and gamma (C,)",
                "x " + shape_str(x.shape()) + ", gamma " + shape_str(gamma.shape()));
  }
}

// Token r of x (C,) -> y (C,): rstd = 1 / sqrt(mean(x^2) + eps), then y = x * rstd * gamma.
// Returns rstd. y may be x.
double normalize_row(const float* xr, std::size_t C, const float* gamma, double eps, float* yr) {
  double squares = 0.0;
  for (std::size_t j = 0; j < C; ++j)
    squares += static_cast<double>(xr[j]) * static_cast<double>(xr[j]);
  const double rstd = 1.0 / std::sqrt(squares / static_cast<double>(C) + eps);
  for (std::size_t j = 0; j < C; ++j)
    yr[j] = static_cast<float>(static_cast<double>(xr[j]) * rstd * static_cast<double>(gamma[j]));
  return rstd;
}

}  // namespace

void rms_norm_rows(const float* x, std::size_t rows, std::size_t C, const float* gamma, double eps,
                   float* y) {
  for_rows(rows, [&](std::size_t r) { (void)normalize_row(x + r * C, C, gamma, eps, y + r * C); });
}

void rms_norm(const Tensor<3>& x, const Vector& gamma, double eps, RmsNormCache<float>& cache,
              Tensor<3>& y) {
  constexpr const char* kFn = "attn::fast::rms_norm";
  check(kFn, x, gamma);
  require(&y != &x, kFn, "the output must not be x");
  require(std::isfinite(eps) && eps >= 0.0, kFn,
          [&] { return "eps must be a finite number >= 0, got " + std::to_string(eps); });
  const std::size_t C = x.shape()[2], rows = x.size() / C;
  if (y.shape() != x.shape()) y.resize(x.shape());
  if (cache.rstd.size() != rows) cache.rstd.resize({rows});
  for_rows(rows, [&](std::size_t r) {
    const double rstd = normalize_row(x.data() + r * C, C, gamma.data(), eps, y.data() + r * C);
    cache.rstd(r) = static_cast<float>(rstd);
  });
}

void rms_norm_backward(const Tensor<3>& dy, const Tensor<3>& x, const Vector& gamma,
                       const RmsNormCache<float>& cache, Tensor<3>& dx, Vector& dgamma,
                       Workspace& ws) {
  constexpr const char* kFn = "attn::fast::rms_norm_backward";
  check(kFn, x, gamma);
  const std::size_t C = x.shape()[2], rows = x.size() / C;
  if (dy.shape() != x.shape() || cache.rstd.size() != rows || dgamma.size() != C) {
    shape_error(kFn,
                "dy like x " + shape_str(x.shape()) + ", a cache from its forward (rstd (" +
                    std::to_string(rows) + ",)), dgamma (" + std::to_string(C) + ",)",
                "dy " + shape_str(dy.shape()) + ", rstd " + shape_str(cache.rstd.shape()) +
                    ", dgamma " + shape_str(dgamma.shape()));
  }
  // 1. dgamma = sum over tokens of dy * xhat, in token order (read before dx may overwrite dy).
  double* dg = at_least(ws.sums, C);  // (C,) the caller's, no allocation once it is C long
  std::fill(dg, dg + C, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * C;
    const float* dyr = dy.data() + r * C;
    const double rstd = static_cast<double>(cache.rstd(r));
    for (std::size_t j = 0; j < C; ++j)
      dg[j] += static_cast<double>(dyr[j]) * (static_cast<double>(xr[j]) * rstd);
  }
  // 2. Per token: g = gamma * dy, xhat = x * rstd, dx = rstd * (g - xhat * mean(g * xhat)).
  if (&dx != &dy && dx.shape() != x.shape()) dx.resize(x.shape());
  for_rows(rows, [&](std::size_t r) {
    const float* xr = x.data() + r * C;
    const float* dyr = dy.data() + r * C;
    float* dxr = dx.data() + r * C;
    const double rstd = static_cast<double>(cache.rstd(r));
    double b = 0.0;
    for (std::size_t j = 0; j < C; ++j)
      b += static_cast<double>(gamma(j)) * static_cast<double>(dyr[j]) *
           (static_cast<double>(xr[j]) * rstd);
    b /= static_cast<double>(C);
    for (std::size_t j = 0; j < C; ++j) {
      const double g = static_cast<double>(gamma(j)) * static_cast<double>(dyr[j]);
      dxr[j] = static_cast<float>(rstd * (g - static_cast<double>(xr[j]) * rstd * b));
    }
  });
  for (std::size_t j = 0; j < C; ++j) dgamma(j) += static_cast<float>(dg[j]);
}

void rms_norm_backward(const Tensor<3>& dy, const Tensor<3>& x, const Vector& gamma,
                       const RmsNormCache<float>& cache, Tensor<3>& dx, Vector& dgamma) {
  Workspace ws;
  rms_norm_backward(dy, x, gamma, cache, dx, dgamma, ws);
}

}  // namespace attn::fast
