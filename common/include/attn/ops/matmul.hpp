// attn/matmul.hpp: matrix product, written out (chapter 02 onward).
//   out[i, j] = sum_k a[i, k] * b[k, j]
// The i-k-j loop order walks both `b` and `out` along contiguous rows. This plain version is the
// independent reference that every faster (BLAS) product in later chapters is checked against.
#pragma once

#include "attn/core/xt.hpp"

namespace attn {

// (M, K) @ (K, N) -> (M, N). Throws std::invalid_argument naming both shapes on mismatch.
Matrix matmul(const Matrix& a, const Matrix& b);

}  // namespace attn
