// attn/fast/linear.hpp: the linear layer y = x @ W (+ b) on the fast side (chapters 04-09).
// The same contract as the reference (attn/ops/linear.hpp), computed with one BLAS GEMM over all
// B*T rows (attn/fast/gemm.hpp) and allocation-free gradient buffers; tested equal to the
// reference within the golden tolerance in tests/common/test_fast_ops.cpp.
#pragma once

#include <cstddef>

#include "attn/core/xt.hpp"
#include "attn/fast/gemm.hpp"

namespace attn::fast {

// x (B, T, in) @ w (in, out) [+ b (out,)] -> (B, T, out). One gemm over all B*T rows.
Tensor<3> linear(const Tensor<3>& x, const Matrix& w);
Tensor<3> linear(const Tensor<3>& x, const Matrix& w, const Vector& b);

// dx = dy @ W^T (overwritten, resized if needed); dW += x^T @ dy; db += sum_rows dy (skipped when
// db is null). Throws std::invalid_argument naming mismatched shapes.
void linear_backward(const Tensor<3>& dy, const Tensor<3>& x, const Matrix& w, Tensor<3>& dx,
                     Matrix& dw, Vector* db = nullptr);

// db (cols,) += sum over the rows of dy (rows, cols), on raw buffers, accumulated in double per
// column (4096 rows summed in float would lose ~3 digits), four columns at a time.
void bias_backward(const float* dy, std::size_t rows, std::size_t cols, float* db);
// The same for the columns [0, cols) of a wider dy whose rows are `stride` floats apart: a few
// columns of a bias, so that one bias's columns can be shared out over threads (each column is
// summed the same way, so the result is bias_backward's, bit for bit).
void bias_backward_strided(const float* dy, std::size_t rows, std::size_t cols, std::size_t stride,
                           float* db);

}  // namespace attn::fast
