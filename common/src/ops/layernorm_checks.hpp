// layernorm_checks.hpp (private to common/src): the input checks of LayerNorm, shared by the
// reference (ops/layernorm.cpp) and the fast kernels (fast/layernorm.cpp), so both reject the
// same inputs with the same one-line messages.
#pragma once

#include <cstddef>
#include <string>

#include "attn/core/check.hpp"
#include "attn/core/xt.hpp"

namespace attn::detail {

// x (..., C) with C > 0, gamma and beta (C,), eps >= 0.
// (Real: float, or double for chapter 08's float64 gradient checks.)
template <std::size_t N, class Real>
void check_layer_norm(const xt::xtensor<Real, N>& x, const xt::xtensor<Real, 1>& gamma,
                      const xt::xtensor<Real, 1>& beta, double eps) {
  const std::size_t C = x.shape()[N - 1];
  if (C == 0 || gamma.size() != C || beta.size() != C) {
    shape_error("attn::layer_norm", "x (..., C) with C > 0, gamma (C,) and beta (C,)",
                "x " + shape_str(x.shape()) + ", gamma " + shape_str(gamma.shape()) + ", beta " +
                    shape_str(beta.shape()));
  }
  require(eps >= 0.0, "attn::layer_norm",
          [&] { return "eps must be >= 0, got " + std::to_string(eps); });
}

inline constexpr const char* kLayerNormBackward = "attn::layer_norm_backward";

// x (..., C) with C > 0 and gamma (C,).
template <std::size_t N, class Real>
void check_layer_norm_input(const xt::xtensor<Real, N>& x, const xt::xtensor<Real, 1>& gamma) {
  const std::size_t C = x.shape()[N - 1];
  if (C == 0 || gamma.size() != C) {
    shape_error(kLayerNormBackward, "x (..., C) with C > 0 and gamma (C,)",
                "x " + shape_str(x.shape()) + ", gamma " + shape_str(gamma.shape()));
  }
}

// Everything the backward with a cache reads: dy like x, rstd (rows,) from the forward of x,
// dgamma and dbeta (C,).
template <std::size_t N, class Real>
void check_layer_norm_backward(const xt::xtensor<Real, N>& dy, const xt::xtensor<Real, N>& x,
                               const xt::xtensor<Real, 1>& gamma, const xt::xtensor<Real, 1>& rstd,
                               const xt::xtensor<Real, 1>& dgamma,
                               const xt::xtensor<Real, 1>& dbeta) {
  check_layer_norm_input(x, gamma);
  if (dy.shape() != x.shape()) {
    shape_error(kLayerNormBackward, "dy of the same shape as x " + shape_str(x.shape()),
                "dy " + shape_str(dy.shape()));
  }
  const std::size_t C = x.shape()[N - 1], rows = x.size() / C;
  if (rstd.size() != rows) {
    shape_error(kLayerNormBackward,
                "a cache from the forward of x " + shape_str(x.shape()) + ": rstd (" +
                    std::to_string(rows) + ",)",
                "rstd " + shape_str(rstd.shape()));
  }
  if (dgamma.size() != C || dbeta.size() != C) {
    shape_error(kLayerNormBackward, "dgamma and dbeta of shape (" + std::to_string(C) + ",)",
                shape_str(dgamma.shape()) + " and " + shape_str(dbeta.shape()));
  }
}

}  // namespace attn::detail
