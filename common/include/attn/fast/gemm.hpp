// attn/fast/gemm.hpp: matrix products through OpenBLAS (the fast side; chapters 04 on).
// The big products of attention, the FFN and the LM head are GEMMs; OpenBLAS's cblas_sgemm runs
// them near the machine's peak (single-threaded, on fixed blocks of rows shared by the library's
// threads: threads.hpp). attn::matmul (attn/ops/matmul.hpp) stays the plain-loop reference every
// product here is tested against (tests/common/test_linear.cpp).
// The chapters use these products as a tool (one head's scores, a quick product) before and
// beside the layers they teach: attn::fast::gemm, attn::fast::matmul_blas.
#pragma once

#include <cstddef>
#include <span>

#include "attn/core/xt.hpp"

namespace attn::fast {

// out (M, N) = alpha * op(a) @ op(b) + beta * out, on raw row-major buffers (cblas_sgemm).
// op(a) is a (M, K) or, with trans_a, a is stored (K, M); likewise b.
void gemm(std::size_t M, std::size_t N, std::size_t K, float alpha, const float* a, bool trans_a,
          const float* b, bool trans_b, float beta, float* out);

// The same on matrices inside wider buffers: rows of the stored a, b and out are lda, ldb and ldc
// floats apart (BLAS's "leading dimensions"). E.g. q, k and v as column blocks of one (B*T, 3C)
// buffer: ldc = 3C. Big products are split into fixed tiles (blocks of rows, and of columns
// when the rows are few) over the library's threads (attn::num_threads), each a single-threaded
// BLAS call; the result does not depend on the thread count.
void gemm_strided(std::size_t M, std::size_t N, std::size_t K, float alpha, const float* a,
                  std::size_t lda, bool trans_a, const float* b, std::size_t ldb, bool trans_b,
                  float beta, float* out, std::size_t ldc);

// One product of gemm_strided, for gemm_many.
struct GemmJob {
  std::size_t M, N, K;
  float alpha;
  const float* a;
  std::size_t lda;
  bool trans_a;
  const float* b;
  std::size_t ldb;
  bool trans_b;
  float beta;
  float* out;
  std::size_t ldc;
};
// Independent products (no job writes what another reads) in one parallel region: the tiles of
// all of them shared out over the threads together, e.g. a layer's weight gradients. Each
// result equals gemm_strided's for that job alone, bit for bit.
void gemm_many(std::span<const GemmJob> jobs);

// (M, K) @ (K, N) -> (M, N) with BLAS. Throws std::invalid_argument naming both shapes.
Matrix matmul_blas(const Matrix& a, const Matrix& b);

}  // namespace attn::fast
