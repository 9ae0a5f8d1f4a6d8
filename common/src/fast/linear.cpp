// linear.cpp (fast side): the linear layer y = x @ W (+ b) and its backward as BLAS GEMMs over
// all B*T rows at once (chapters 04-09). The reference, in plain loops, is
// common/src/ops/linear.cpp; tests/common/test_fast_ops.cpp proves the two agree.
#include "attn/fast/linear.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "attn/core/check.hpp"
#include "attn/core/simd.hpp"

namespace attn::fast {

namespace {

// x (B, T, in) and w (in, out) must agree on `in`.
void check_linear(const Tensor<3>& x, const Matrix& w) {
  if (x.shape()[2] != w.shape()[0]) {
    shape_error("attn::fast::linear", "x (B, T, in) @ w (in, out) with the same in",
                "x " + shape_str(x.shape()) + " @ w " + shape_str(w.shape()));
  }
}

}  // namespace

Tensor<3> linear(const Tensor<3>& x, const Matrix& w) {
  check_linear(x, w);
  const std::size_t B = x.shape()[0];
  const std::size_t T = x.shape()[1];
  const std::size_t in = w.shape()[0];
  const std::size_t out_features = w.shape()[1];
  // 1. A linear layer acts on each position independently, so the (B, T) axes are just B * T
  //    rows of one matrix: a row-major (B, T, in) tensor *is* a (B*T, in) matrix in memory.
  //    One big GEMM runs far faster than B (or B*T) small ones.
  Tensor<3> y(Tensor<3>::shape_type{B, T, out_features});
  // 2. (B*T, in) @ (in, out) -> (B*T, out), written straight into y.
  gemm(B * T, out_features, in, 1.0f, x.data(), false, w.data(), false, 0.0f, y.data());
  return y;
}

Tensor<3> linear(const Tensor<3>& x, const Matrix& w, const Vector& b) {
  check_linear(x, w);
  if (b.shape()[0] != w.shape()[1]) {
    shape_error("attn::fast::linear", "bias (out,) matching w (in, out)",
                "w " + shape_str(w.shape()) + " and bias " + shape_str(b.shape()));
  }
  const std::size_t B = x.shape()[0];
  const std::size_t T = x.shape()[1];
  const std::size_t in = w.shape()[0];
  const std::size_t out_features = w.shape()[1];
  Tensor<3> y(Tensor<3>::shape_type{B, T, out_features});
  // 1. Every row of y starts as the bias: (out,) broadcast to (B*T, out).
  for (std::size_t r = 0; r < B * T; ++r)
    std::copy(b.data(), b.data() + out_features, y.data() + r * out_features);
  // 2. y += x @ w: beta = 1 makes BLAS add the product to the bias already there, so the bias
  //    costs no extra pass over y (PyTorch's addmm does the same).
  //    (B*T, in) @ (in, out) + (B*T, out) -> (B*T, out)
  gemm(B * T, out_features, in, 1.0f, x.data(), false, w.data(), false, 1.0f, y.data());
  return y;
}

namespace {

// acc[j] += sum_r dy[r, j] for j < cols, row after row (rows `stride` floats apart), in double.
// Four columns at a time (the inner u loop), which the compiler turns into SIMD instructions;
// every column is still summed in row order.
ATTN_SIMD_CLONES void sum_rows_double(const float* dy, std::size_t rows, std::size_t cols,
                                      std::size_t stride, double* acc) {
  const std::size_t cols4 = cols - cols % 4;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = dy + r * stride;
    for (std::size_t j = 0; j < cols4; j += 4)
      for (std::size_t u = 0; u < 4; ++u) acc[j + u] += static_cast<double>(row[j + u]);
    for (std::size_t j = cols4; j < cols; ++j) acc[j] += static_cast<double>(row[j]);
  }
}

}  // namespace

void bias_backward(const float* dy, std::size_t rows, std::size_t cols, float* db) {
  bias_backward_strided(dy, rows, cols, cols, db);
}

void bias_backward_strided(const float* dy, std::size_t rows, std::size_t cols, std::size_t stride,
                           float* db) {
  // Columns in blocks of kBlock, each summed over all rows into a double accumulator on the
  // stack: no allocation, whichever thread runs this (a weight gradient's bias runs beside its
  // product on the library's threads). Every column is still summed in row order.
  constexpr std::size_t kBlock = 512;
  double acc[kBlock];
  for (std::size_t j0 = 0; j0 < cols; j0 += kBlock) {
    const std::size_t n = std::min(kBlock, cols - j0);
    std::fill(acc, acc + n, 0.0);
    sum_rows_double(dy + j0, rows, n, stride, acc);
    for (std::size_t j = 0; j < n; ++j)
      db[j0 + j] = static_cast<float>(static_cast<double>(db[j0 + j]) + acc[j]);
  }
}

void linear_backward(const Tensor<3>& dy, const Tensor<3>& x, const Matrix& w, Tensor<3>& dx,
                     Matrix& dw, Vector* db) {
  constexpr const char* kFn = "attn::fast::linear_backward";
  const std::size_t B = x.shape()[0], T = x.shape()[1];
  const std::size_t in = w.shape()[0], out_features = w.shape()[1];
  if (x.shape()[2] != in) {
    shape_error(kFn, "x (B, T, in) and w (in, out) with the same in",
                "x " + shape_str(x.shape()) + " and w " + shape_str(w.shape()));
  }
  const std::array<std::size_t, 3> want{B, T, out_features};
  if (!std::equal(want.begin(), want.end(), dy.shape().begin())) {
    shape_error(kFn, "dy of shape " + shape_str(want) + " (like y = x @ w)",
                "dy " + shape_str(dy.shape()));
  }
  if (dw.shape() != w.shape()) {
    shape_error(kFn, "dw shaped like w " + shape_str(w.shape()), "dw " + shape_str(dw.shape()));
  }
  if (db != nullptr && (db->dimension() != 1 || db->shape()[0] != out_features)) {
    shape_error(kFn, "db of shape (" + std::to_string(out_features) + ",)",
                "db " + shape_str(db->shape()));
  }
  const std::size_t rows = B * T;
  if (dx.shape() != x.shape()) dx.resize(x.shape());
  // 1. dx = dy @ W^T: each input feature i received w[i, j] * x_i in every output j.
  //    (B*T, out) @ (out, in) -> (B*T, in), W read transposed in place.
  gemm(rows, in, out_features, 1.0f, dy.data(), false, w.data(), /*trans_b=*/true, 0.0f, dx.data());
  // 2. dW += x^T @ dy: w[i, j] met x_i in every one of the B*T rows, so its gradient sums
  //    x_i dy_j over the rows. (in, B*T) @ (B*T, out) -> (in, out), x read transposed, beta = 1
  //    adds to what dW already holds.
  gemm(in, out_features, rows, 1.0f, x.data(), /*trans_a=*/true, dy.data(), false, 1.0f, dw.data());
  // 3. db += sum_rows dy: the bias was added to every row.
  if (db != nullptr) bias_backward(dy.data(), rows, out_features, db->data());
}

}  // namespace attn::fast
