// gemm.cpp: matrix products through OpenBLAS (the fast side; chapters 04 on). Every projection
// of attention, the FFN and the LM head on the model's fast path runs through gemm:
// cblas_sgemm instead of three loops (on fixed blocks of rows over the library's threads when
// the product is big), tested against the plain attn::matmul.
#include "attn/fast/gemm.hpp"

#include <cblas.h>  // OpenBLAS's; only .cpp files include it (target attn_openblas)

#include <algorithm>
#include <array>
#include <climits>
#include <span>
#include <string>
#include <utility>

#include "attn/core/check.hpp"
#include "attn/core/parallel.hpp"

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

// One cblas_sgemm on row-major buffers with explicit leading dimensions (row lengths). A single
// row (m = 1: a KV-cache step, one token through a weight matrix) is a matrix-vector product:
// cblas_sgemv reads the matrix once, where sgemm would first copy (pack) all of it, which for
// a step of GPT-2 124M doubles the memory traffic that bounds its speed.
void sgemm(int m, int n, int k, float alpha, const float* a, int lda, bool trans_a, const float* b,
           int ldb, bool trans_b, float beta, float* out, int ldc) {
  if (m == 1) {
    // out (1, n) = alpha * x (k,) @ op(b) (k, n) + beta * out, x = row 0 of op(a): a's first k
    // floats, or (trans_a: a stored (k, 1)) every lda-th float.
    if (beta == 0.0f) std::fill(out, out + n, 0.0f);  // never 0 * garbage
    const int incx = trans_a ? lda : 1;
    if (trans_b) {  // b stored (n, k): out = b x
      cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, alpha, b, ldb, a, incx, beta, out, 1);
    } else {  // b stored (k, n): out = b^T x
      cblas_sgemv(CblasRowMajor, CblasTrans, k, n, alpha, b, ldb, a, incx, beta, out, 1);
    }
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, out, ldc);
}

// Below this many multiply-adds a GEMM runs as one BLAS call: handing blocks to other threads
// (and BLAS packing the shared operand again for every block) would cost more than it saves.
// 2^22 multiply-adds take ~0.05 ms on one core.
constexpr double kSplitWork = 4194304.0;
// A big product is computed as tiles, always the same tiles whatever the number of threads:
// BLAS may round a row differently depending on the size of the call it sits in (its kernels work
// in tiles and finish leftovers with other code), so the tiles are fixed by the shapes alone and
// only their distribution over threads varies. The result is then the same, bit for bit, on 1
// thread or 16 (tested in test_linear.cpp), and so are the chapters' printouts. A tile is
// kRowBlock rows (taller tiles, which pack the weight matrix fewer times, measured no faster:
// 256 and 512 rows within 1% at (32, 128, 512, 8) on 1 and 2 threads).
constexpr std::size_t kRowBlock = 128;
// A big product with fewer than kMinRowBlocks row blocks and at least 2 kColBlock columns (the
// FFN's weight gradient x^T @ dpre is (C, 4C) whatever the batch: 4 blocks of 128 rows at C =
// 512) is cut into tiles of kRowBlock rows by kColBlock columns instead, so that many threads
// find pieces to take. Also fixed by the shapes alone. Not narrower: every tile packs its rows
// of op(a) (K long) again, which at 128 columns cost 15-20% of a K = 4096 product on one thread.
constexpr std::size_t kMinRowBlocks = 16;
constexpr std::size_t kColBlock = 512;

}  // namespace

namespace {

// How gemm_many cuts one job: fixed by its shape alone (see kRowBlock).
struct Tiling {
  std::size_t block_rows, block_cols, col_blocks, tiles;
};

Tiling tiling(const GemmJob& j) {
  // Rows of out are independent, and so are its columns: a big product is computed as fixed
  // tiles (kRowBlock rows by all the columns or kColBlock of them), each a single-threaded
  // GEMM; a small one (under kSplitWork) is one single-threaded GEMM.
  const double work =
      static_cast<double>(j.M) * static_cast<double>(j.N) * static_cast<double>(j.K);
  if (work < kSplitWork) return {j.M, j.N, 1, 1};
  const std::size_t row_blocks = (j.M + kRowBlock - 1) / kRowBlock;
  const std::size_t block_cols =
      row_blocks < kMinRowBlocks && j.N >= 2 * kColBlock ? kColBlock : j.N;
  const std::size_t col_blocks = (j.N + block_cols - 1) / block_cols;
  const std::size_t block_rows = kRowBlock;
  return {block_rows, block_cols, col_blocks, row_blocks * col_blocks};
}

// out = beta * out for an empty sum (K = 0). Handled here because BLAS implementations differ
// on K = 0, and a leading dimension of 0 is illegal for them. beta = 0 writes zeros (never
// 0 * garbage, which could be NaN), the same rule BLAS follows.
void scale_only(const GemmJob& j) {
  for (std::size_t i = 0; i < j.M; ++i)
    for (std::size_t c = 0; c < j.N; ++c) {
      float& o = j.out[i * j.ldc + c];
      o = j.beta == 0.0f ? 0.0f : j.beta * o;
    }
}

// Tile `tile` of job j: out's rows r0.. and columns c0.. Rows of op(a) are rows of a, or columns
// of a stored (K, M); columns of op(b) are columns of b, or rows of b stored (N, K).
void run_tile(const GemmJob& j, const Tiling& t, std::size_t tile) {
  const std::size_t r0 = tile / t.col_blocks * t.block_rows;
  const std::size_t c0 = tile % t.col_blocks * t.block_cols;
  const std::size_t rows = std::min(t.block_rows, j.M - r0);
  const std::size_t cols = std::min(t.block_cols, j.N - c0);
  const float* a_rows = j.trans_a ? j.a + r0 : j.a + r0 * j.lda;
  const float* b_cols = j.trans_b ? j.b + c0 * j.ldb : j.b + c0;
  sgemm(static_cast<int>(rows), static_cast<int>(cols), static_cast<int>(j.K), j.alpha, a_rows,
        static_cast<int>(j.lda), j.trans_a, b_cols, static_cast<int>(j.ldb), j.trans_b, j.beta,
        j.out + r0 * j.ldc + c0, static_cast<int>(j.ldc));
}

}  // namespace

void gemm_many(std::span<const GemmJob> jobs) {
  // 1. Check every size here, where an error can still be thrown (BLAS takes ints), and do the
  //    empty products (M or N = 0: nothing to write; K = 0: out = beta * out) at once.
  constexpr std::size_t kMaxJobs = 8;
  require(jobs.size() <= kMaxJobs, "attn::fast::gemm_many", "at most 8 jobs at a time");
  std::array<Tiling, kMaxJobs> cut{};
  std::array<std::size_t, kMaxJobs + 1> first{};  // first tile of each job in the whole list
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const GemmJob& j = jobs[i];
    for (const auto& [value, name] :
         {std::pair{j.M, "M"}, std::pair{j.N, "N"}, std::pair{j.K, "K"}, std::pair{j.lda, "lda"},
          std::pair{j.ldb, "ldb"}, std::pair{j.ldc, "ldc"}})
      blas_int(value, name);
    const bool empty = j.M == 0 || j.N == 0;
    if (!empty && j.K == 0) scale_only(j);
    cut[i] = empty || j.K == 0 ? Tiling{1, 1, 1, 0} : tiling(j);
    first[i + 1] = first[i] + cut[i].tiles;
  }
  // 2. out (M, N) = alpha * op(a) (M, K) @ op(b) (K, N) + beta * out (M, N), every job's tiles
  //    in one list shared out between the threads (parallel.hpp). With beta = 0 BLAS never reads
  //    out, so it may be uninitialised.
  const std::size_t tiles = first[jobs.size()];
  detail::run_parts(tiles, detail::worker_count(tiles),
                    [&](std::size_t begin, std::size_t end, std::size_t) {
                      std::size_t i = 0;
                      for (std::size_t tile = begin; tile < end; ++tile) {
                        while (tile >= first[i + 1]) ++i;
                        run_tile(jobs[i], cut[i], tile - first[i]);
                      }
                    });
}

void gemm_strided(std::size_t M, std::size_t N, std::size_t K, float alpha, const float* a,
                  std::size_t lda, bool trans_a, const float* b, std::size_t ldb, bool trans_b,
                  float beta, float* out, std::size_t ldc) {
  const GemmJob job{M, N, K, alpha, a, lda, trans_a, b, ldb, trans_b, beta, out, ldc};
  gemm_many(std::span<const GemmJob>(&job, 1));
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
    shape_error("attn::fast::matmul_blas", "(M, K) @ (K, N) with the same K",
                shape_str(a.shape()) + " @ " + shape_str(b.shape()));
  }
  Matrix out(Matrix::shape_type{M, N});  // (M, K) @ (K, N) -> (M, N), filled by gemm
  gemm(M, N, K, 1.0f, a.data(), false, b.data(), false, 0.0f, out.data());
  return out;
}

}  // namespace attn::fast
