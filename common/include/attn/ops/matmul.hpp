// attn/ops/matmul.hpp: matrix product, written out (chapter 02 onward).
//   out[i, j] = sum_k a[i, k] * b[k, j]
// The i-k-j loop order walks both `b` and `out` along contiguous rows. This plain version is the
// independent reference that every faster (BLAS) product in later chapters is checked against.
#pragma once

#include <concepts>

#include "attn/core/xt.hpp"

namespace attn {

// (M, K) @ (K, N) -> (M, N). Throws std::invalid_argument naming both shapes on mismatch.
Matrix matmul(const Matrix& a, const Matrix& b);
// The float64 twin, for the gradient checks of chapter 08: the same loops on double.
template <std::same_as<double> Real>
xt::xtensor<Real, 2> matmul(const xt::xtensor<Real, 2>& a, const xt::xtensor<Real, 2>& b);
extern template Tensor64<2> matmul<double>(const Tensor64<2>&, const Tensor64<2>&);

}  // namespace attn
