// attn/ops/averaging.hpp: the mathematical trick behind attention (chapter 02).
// Row t of the output is the mean of rows 0..t of the input x (T, C):
//   xbar[t] = (1 / (t+1)) * sum_{i<=t} x[i]
// computed three ways that must agree to float precision:
//   1. a loop over t (what the formula says);
//   2. one matmul W @ x with W = tril(ones(T, T)) normalised so each row sums to 1;
//   3. W = softmax(masked(zeros(T, T))): -inf above the diagonal, 0 elsewhere, softmax per row.
// Way 3 is attention with every score equal; chapter 04 replaces the zeros by data.
#pragma once

#include <cstddef>

#include "attn/core/xt.hpp"

namespace attn {

Matrix running_mean_loop(const Matrix& x);        // (T, C) -> (T, C)
Matrix averaging_weights_tril(std::size_t T);     // (T, T), row t = 1/(t+1) on 0..t
Matrix averaging_weights_softmax(std::size_t T);  // (T, T), softmax of masked zeros
Matrix running_mean_matmul(const Matrix& x);      // weights_tril(T) @ x
Matrix running_mean_softmax(const Matrix& x);     // weights_softmax(T) @ x

}  // namespace attn
