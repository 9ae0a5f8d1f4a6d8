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
template <std::size_t N>
void check_layer_norm(const Tensor<N>& x, const Vector& gamma, const Vector& beta, float eps) {
  const std::size_t C = x.shape()[N - 1];
  if (C == 0 || gamma.size() != C || beta.size() != C) {
    shape_error("attn::layer_norm", "x (..., C) with C > 0, gamma (C,) and beta (C,)",
                "x " + shape_str(x.shape()) + ", gamma " + shape_str(gamma.shape()) + ", beta " +
                    shape_str(beta.shape()));
  }
  require(eps >= 0.0f, "attn::layer_norm",
          [&] { return "eps must be >= 0, got " + std::to_string(eps); });
}

inline constexpr const char* kLayerNormBackward = "attn::layer_norm_backward";

// x (..., C) with C > 0 and gamma (C,).
template <std::size_t N>
void check_layer_norm_input(const Tensor<N>& x, const Vector& gamma) {
  const std::size_t C = x.shape()[N - 1];
  if (C == 0 || gamma.size() != C) {
    shape_error(kLayerNormBackward, "x (..., C) with C > 0 and gamma (C,)",
                "x " + shape_str(x.shape()) + ", gamma " + shape_str(gamma.shape()));
  }
}

// Everything the backward with a cache reads: dy like x, rstd (rows,) from the forward of x,
// dgamma and dbeta (C,).
template <std::size_t N>
void check_layer_norm_backward(const Tensor<N>& dy, const Tensor<N>& x, const Vector& gamma,
                               const Vector& rstd, const Vector& dgamma, const Vector& dbeta) {
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
