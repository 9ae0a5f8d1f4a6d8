// attn/linear.hpp: matrix products through BLAS, and the linear layer (chapters 04-07).
// Convention (PyTorch-compatible): a linear map is y = x @ W (+ b) with W of shape (in, out).
// The big products of attention are GEMMs; OpenBLAS's cblas_sgemm runs them near the machine's
// peak (single-threaded, on fixed blocks of rows shared by the library's threads: threads.hpp).
// attn::matmul (matmul.hpp) stays the plain-loop reference every product here is tested against.
#pragma once

#include <cstddef>

#include "attn/core/xt.hpp"

namespace attn {

// out (M, N) = alpha * op(a) @ op(b) + beta * out, on raw row-major buffers (cblas_sgemm).
// op(a) is a (M, K) or, with trans_a, a is stored (K, M); likewise b.
void gemm(std::size_t M, std::size_t N, std::size_t K, float alpha, const float* a, bool trans_a,
          const float* b, bool trans_b, float beta, float* out);

// The same on matrices inside wider buffers: rows of the stored a, b and out are lda, ldb and ldc
// floats apart (BLAS's "leading dimensions"). E.g. q, k and v as column blocks of one (B*T, 3C)
// buffer: ldc = 3C. Big products are split into fixed blocks of rows over the library's threads
// (attn::num_threads), each a single-threaded BLAS call; the result does not depend on the
// thread count.
void gemm_strided(std::size_t M, std::size_t N, std::size_t K, float alpha, const float* a,
                  std::size_t lda, bool trans_a, const float* b, std::size_t ldb, bool trans_b,
                  float beta, float* out, std::size_t ldc);

// (M, K) @ (K, N) -> (M, N) with BLAS. Throws std::invalid_argument naming both shapes.
Matrix matmul_blas(const Matrix& a, const Matrix& b);

// x (B, T, in) @ w (in, out) [+ b (out,)] -> (B, T, out). One attn::gemm over all B*T rows.
Tensor<3> linear(const Tensor<3>& x, const Matrix& w);
Tensor<3> linear(const Tensor<3>& x, const Matrix& w, const Vector& b);

// Backward of y = x @ W + b (chapter 08). With dy = dL/dy (B, T, out):
//   dx = dy @ W^T      (B, T, in)     overwritten (resized if needed)
//   dW += x^T @ dy     (in, out)      accumulated over all B*T rows
//   db += sum_rows dy  (out,)         accumulated; skipped when db is null
// Gradients of parameters accumulate (+=), so a weight used twice collects both uses; zero them
// before a step. Throws std::invalid_argument naming mismatched shapes.
void linear_backward(const Tensor<3>& dy, const Tensor<3>& x, const Matrix& w, Tensor<3>& dx,
                     Matrix& dw, Vector* db = nullptr);
// The same, returning fresh gradients (for the chapters and tests).
struct LinearGrads {
  Tensor<3> dx;  // (B, T, in)
  Matrix dw;     // (in, out)
  Vector db;     // (out,)
};
LinearGrads linear_backward(const Tensor<3>& dy, const Tensor<3>& x, const Matrix& w);
// The bias part alone, on raw buffers: db (cols,) += sum over the rows of dy (rows, cols),
// accumulated in double per column (4096 rows summed in float would lose ~3 digits).
void bias_backward(const float* dy, std::size_t rows, std::size_t cols, float* db);

}  // namespace attn
