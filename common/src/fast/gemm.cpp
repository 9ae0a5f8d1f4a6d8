// gemm.cpp: matrix products through OpenBLAS (the fast side; chapters 04 on). Every projection
// of attention, the FFN and the LM head on the model's fast path runs through gemm:
// cblas_sgemm instead of three loops (on fixed blocks of rows over the library's threads when
// the product is big), tested against the plain attn::matmul.
#include "attn/fast/gemm.hpp"

#include <cblas.h>  // OpenBLAS's; only .cpp files include it (target attn_openblas)

#include <algorithm>
#include <climits>
#include <string>

#include "attn/core/check.hpp"
#include "../core/parallel.hpp"

namespace attn::fast {

namespace {

// BLAS takes its sizes as int; a larger dimension would wrap around silently.
int blas_int(std::size_t n, const char* what) {
  // The message is built only on failure: this runs for every GEMM, and chapter 10's generation
  // loop must not allocate per token.
  if (n > static_cast<std::size_t>(INT_MAX)) {
    require(false, "attn::fast::gemm", [&] {
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
                        sgemm(static_cast<int>(rows), n, k, alpha, a_rows, lda_i, trans_a, b, ldb_i,
                              trans_b, beta, out + r0 * ldc, ldc_i);
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

}  // namespace attn::fast
