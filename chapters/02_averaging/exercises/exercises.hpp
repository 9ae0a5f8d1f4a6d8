// Chapter 02 exercises: the running mean of the past, three ways (see docs/02-averaging.md).
// Each function mirrors one in attn/ops/averaging.hpp; `02_averaging --mine` runs the walkthrough
// on yours, and `build/default/bin/attn-check 02` tells you which ones are done.
#pragma once

#include <cstddef>

#include "attn/core/xt.hpp"

namespace ex02 {

// ex02.1 (ex02_1_running_mean_loop.cpp): row t of the result is the mean of rows 0..t of x.
attn::Matrix running_mean_loop(const attn::Matrix& x);  // (T, C) -> (T, C)

// ex02.2 (ex02_2_averaging_weights_tril.cpp): the (T, T) matrix W with W[t, i] = 1 / (t + 1)
// for i <= t and 0 above the diagonal, so that W @ x is the running mean.
attn::Matrix averaging_weights_tril(std::size_t T);  // (T, T)

// ex02.3 (ex02_3_averaging_weights_softmax.cpp): the same W, built as the row softmax of a
// matrix that is 0 on and below the diagonal and -inf above it.
attn::Matrix averaging_weights_softmax(std::size_t T);  // (T, T)

}  // namespace ex02
