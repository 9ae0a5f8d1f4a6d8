// linear.cpp: matrix products through OpenBLAS, and the linear layer y = x @ W (+ b)
// (chapters 04-07). Every projection of attention, the FFN and the LM head runs through gemm:
// cblas_sgemm instead of three loops (on fixed blocks of rows over the library's threads when
// the product is big), tested against the plain attn::matmul.
#include "attn/ops/linear.hpp"

#include <cblas.h>  // OpenBLAS's; only .cpp files include it (target attn_openblas)

#include <algorithm>
#include <array>
#include <climits>
#include <string>
#include <vector>

#include "attn/core/check.hpp"
#include "../core/parallel.hpp"
#include "../core/simd.hpp"

namespace attn {

namespace {

// BLAS takes its sizes as int; a larger dimension would wrap around silently.
int blas_int(std::size_t n, const char* what) {
  // The message is built only on failure: this runs for every GEMM, and chapter 10's generation
  // loop must not allocate per token.
  if (n > static_cast<std::size_t>(INT_MAX)) {
    require(false, "attn::gemm", [&] {
      return std::string(what) + " = " + std::to_string(n) + " is too large for BLAS (int)";
    });
  }
  return static_cast<int>(n);
}

// One cblas_sgemm on row-major buffers with explicit leading dimensions (row lengths).
void sgemm(int m, int n, int k, float alpha, const float* a, int lda, bool trans_a, const float* b,
           int ldb, bool trans_b, float beta, float* out, int ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, out, ldc);
}

// Below this many multiply-adds a GEMM runs as one BLAS call: handing blocks to other threads
// (and BLAS packing the shared operand again for every block) would cost more than it saves.
// 2^22 multiply-adds take ~0.05 ms on one core.
constexpr double kSplitWork = 4194304.0;
// A big product is computed as row blocks of this many rows, always the same blocks whatever
// the number of threads: BLAS may round a row differently depending on the size of the call it
// sits in (its kernels work in tiles and finish leftovers with other code), so the blocks are
// fixed and only their distribution over threads varies. The result is then the same, bit for
// bit, on 1 thread or 8 (tested in test_linear.cpp), and so are the chapters' printouts.
constexpr std::size_t kRowBlock = 128;

}  // namespace

void gemm_strided(std::size_t M, std::size_t N, std::size_t K, float alpha, const float* a,
                  std::size_t lda, bool trans_a, const float* b, std::size_t ldb, bool trans_b,
                  float beta, float* out, std::size_t ldc) {
  // Nothing to write.
  if (M == 0 || N == 0) return;
  // 1. An empty sum (K = 0): out = beta * out. Handled here because BLAS implementations differ
  //    on K = 0, and a leading dimension of 0 is illegal for them. beta = 0 writes zeros (never
  //    0 * garbage, which could be NaN), the same rule BLAS follows.
  if (K == 0) {
    for (std::size_t i = 0; i < M; ++i)
      for (std::size_t j = 0; j < N; ++j) {
        float& o = out[i * ldc + j];
        o = beta == 0.0f ? 0.0f : beta * o;
      }
    return;
  }
  // 2. BLAS takes int sizes: check them all here, where an error can still be thrown.
  blas_int(M, "M");
  const int n = blas_int(N, "N");
  const int k = blas_int(K, "K");
  const int lda_i = blas_int(lda, "lda");
  const int ldb_i = blas_int(ldb, "ldb");
  const int ldc_i = blas_int(ldc, "ldc");
  // 3. out (M, N) = alpha * op(a) (M, K) @ op(b) (K, N) + beta * out (M, N). With beta = 0 BLAS
  //    never reads out, so it may be uninitialised.
  //    Rows of out are independent, so a big product is computed as fixed row blocks
  //    (kRowBlock), shared out between the threads (parallel.hpp), each block a single-threaded
  //    GEMM; a small one (under kSplitWork) is one single-threaded GEMM.
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  const std::size_t block_rows = work < kSplitWork ? M : kRowBlock;
  const std::size_t blocks = (M + block_rows - 1) / block_rows;
  detail::run_parts(blocks, detail::worker_count(blocks),
                    [&](std::size_t first, std::size_t last, std::size_t) {
                      for (std::size_t block = first; block < last; ++block) {
                        // Rows r0..r0+rows-1 of op(a): rows of a, or columns of a stored (K, M).
                        const std::size_t r0 = block * block_rows;
                        const std::size_t rows = std::min(block_rows, M - r0);
                        const float* a_rows = trans_a ? a + r0 : a + r0 * lda;
                        sgemm(static_cast<int>(rows), n, k, alpha, a_rows, lda_i, trans_a, b,
                              ldb_i, trans_b, beta, out + r0 * ldc, ldc_i);
                      }
                    });
}

void gemm(std::size_t M, std::size_t N, std::size_t K, float alpha, const float* a, bool trans_a,
          const float* b, bool trans_b, float beta, float* out) {
  // Row-major storage: a stored (M, K) has leading dimension (row length) K; a stored (K, M)
  // read transposed has M. Same for b. out (M, N) has N.
  gemm_strided(M, N, K, alpha, a, trans_a ? M : K, trans_a, b, trans_b ? K : N, trans_b, beta, out,
               N);
}

Matrix matmul_blas(const Matrix& a, const Matrix& b) {
  const std::size_t M = a.shape()[0];
  const std::size_t K = a.shape()[1];
  const std::size_t N = b.shape()[1];
  if (b.shape()[0] != K) {
    shape_error("attn::matmul_blas", "(M, K) @ (K, N) with the same K",
                shape_str(a.shape()) + " @ " + shape_str(b.shape()));
  }
  Matrix out(Matrix::shape_type{M, N});  // (M, K) @ (K, N) -> (M, N), filled by gemm
  gemm(M, N, K, 1.0f, a.data(), false, b.data(), false, 0.0f, out.data());
  return out;
}

namespace {

// x (B, T, in) and w (in, out) must agree on `in`.
void check_linear(const Tensor<3>& x, const Matrix& w) {
  if (x.shape()[2] != w.shape()[0]) {
    shape_error("attn::linear", "x (B, T, in) @ w (in, out) with the same in",
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
    shape_error("attn::linear", "bias (out,) matching w (in, out)",
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

}  // namespace attn

// ---------------------------------------------------------------------------------------------
// Backward (chapter 08)

namespace attn {

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
  // Columns in blocks of kBlock, each summed over all rows into a double accumulator on the
  // stack: no allocation, whichever thread runs this (a weight gradient's bias runs beside its
  // product on the library's threads). Every column is still summed in row order.
  constexpr std::size_t kBlock = 512;
  double acc[kBlock];
  for (std::size_t j0 = 0; j0 < cols; j0 += kBlock) {
    const std::size_t n = std::min(kBlock, cols - j0);
    std::fill(acc, acc + n, 0.0);
    sum_rows_double(dy + j0, rows, n, cols, acc);
    for (std::size_t j = 0; j < n; ++j)
      db[j0 + j] = static_cast<float>(static_cast<double>(db[j0 + j]) + acc[j]);
  }
}

void linear_backward(const Tensor<3>& dy, const Tensor<3>& x, const Matrix& w, Tensor<3>& dx,
                     Matrix& dw, Vector* db) {
  constexpr const char* kFn = "attn::linear_backward";
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
  gemm(rows, in, out_features, 1.0f, dy.data(), false, w.data(), /*trans_b=*/true, 0.0f,
       dx.data());
  // 2. dW += x^T @ dy: w[i, j] met x_i in every one of the B*T rows, so its gradient sums
  //    x_i dy_j over the rows. (in, B*T) @ (B*T, out) -> (in, out), x read transposed, beta = 1
  //    adds to what dW already holds.
  gemm(in, out_features, rows, 1.0f, x.data(), /*trans_a=*/true, dy.data(), false, 1.0f,
       dw.data());
  // 3. db += sum_rows dy: the bias was added to every row.
  if (db != nullptr) bias_backward(dy.data(), rows, out_features, db->data());
}

LinearGrads linear_backward(const Tensor<3>& dy, const Tensor<3>& x, const Matrix& w) {
  LinearGrads g;
  g.dw = xt::zeros<float>(w.shape());
  g.db = xt::zeros<float>({w.shape()[1]});
  linear_backward(dy, x, w, g.dx, g.dw, &g.db);
  return g;
}

}  // namespace attn
