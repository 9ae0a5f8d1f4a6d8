// head_products.cpp: the hand-written products of one attention head (head_products.hpp says
// why and when they replace BLAS).
//
// The three loops share one shape: a block of 4 output rows by 16 output columns is summed in
// 8 vector registers (4 x 2 registers of 8 floats) while the shared index runs; each step loads
// 16 floats of one operand once and multiplies them by 4 numbers of the other. Eight
// independent sums keep both of the CPU's adders busy; one sum alone would wait for each
// addition to finish before starting the next. A width of 8 mod 16 ends with a block of one
// vector per row.
//
// The 8-float vectors are the GCC/Clang vector extension (as in ffn.cpp): one AVX register, or
// two SSE registers on CPUs without AVX; each function is compiled for both (ATTN_SIMD_CLONES).
// `vector * float` multiplies every lane by the float. No FMA (-ffp-contract=off): every lane
// does the scalar mul-then-add, so both versions give the same bits.
#include "head_products.hpp"

#include <algorithm>
#include <cstring>

#include "attn/core/simd.hpp"

// The vectors never cross a call (everything below is inlined into one cloned function); GCC
// still notes that SSE and AVX code would pass them differently (-Wpsabi).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace attn::detail {

namespace {

using f32x8 = float __attribute__((vector_size(32)));
#define ATTN_KERNEL [[gnu::always_inline]] inline

constexpr std::size_t kBlockRows = 4;   // output rows summed together
constexpr std::size_t kBlockCols = 16;  // output columns summed together: two vectors

ATTN_KERNEL f32x8 load8(const float* p) {
  f32x8 v;
  std::memcpy(&v, p, sizeof v);  // unaligned load
  return v;
}

ATTN_KERNEL void store8(float* p, f32x8 v) { std::memcpy(p, &v, sizeof v); }

// The sums of one block: row r's 16 columns are lo_r (columns 0-7) and hi_r (8-15); with
// kTwo = false only lo_r, 8 columns. Named values rather than an array, so that they live in
// registers (a zero-initialised array was measured to become a memset on the stack).
template <bool kTwo>
struct BlockSums {
  f32x8 lo0{}, lo1{}, lo2{}, lo3{}, hi0{}, hi1{}, hi2{}, hi3{};

  // One step of the shared index: row r += (lo, hi) * s_r.
  ATTN_KERNEL void add(f32x8 lo, f32x8 hi, float s0, float s1, float s2, float s3) {
    lo0 += lo * s0;
    lo1 += lo * s1;
    lo2 += lo * s2;
    lo3 += lo * s3;
    if constexpr (kTwo) {
      hi0 += hi * s0;
      hi1 += hi * s1;
      hi2 += hi * s2;
      hi3 += hi * s3;
    }
  }

  // out[0, cols) = alpha * row r (cols <= 16, or 8 without kTwo).
  ATTN_KERNEL void store(std::size_t r, float alpha, float* out, std::size_t cols) const {
    const f32x8 lo = (r == 0 ? lo0 : r == 1 ? lo1 : r == 2 ? lo2 : lo3) * alpha;
    const f32x8 hi = (r == 0 ? hi0 : r == 1 ? hi1 : r == 2 ? hi2 : hi3) * alpha;
    if (cols == (kTwo ? 16 : 8)) {
      store8(out, lo);
      if constexpr (kTwo) store8(out + 8, hi);
      return;
    }
    float tail[16];
    store8(tail, lo);
    store8(tail + 8, hi);
    std::copy(tail, tail + cols, out);
  }
};

// Rows t0..t0+3 of m (rows `ld` floats apart) for a block of 4 output rows; a short last block
// repeats row rows - 1 (summed, never written).
struct BlockRows {
  const float* r0;
  const float* r1;
  const float* r2;
  const float* r3;
};
ATTN_KERNEL BlockRows block_rows(const float* m, std::size_t ld, std::size_t t0, std::size_t rows) {
  return {m + t0 * ld, m + std::min(t0 + 1, rows - 1) * ld, m + std::min(t0 + 2, rows - 1) * ld,
          m + std::min(t0 + 3, rows - 1) * ld};
}

// weights_times_rows for the columns [c0, c0 + 16) (or + 8) of every row block.
template <bool kTwo>
ATTN_KERNEL void weights_times_rows_cols(std::size_t rows, std::size_t S, std::size_t c0,
                                         float alpha, const float* w, std::size_t ldw,
                                         const float* x, std::size_t ldx, bool causal,
                                         std::size_t first, float* o, std::size_t ldo) {
  for (std::size_t t0 = 0; t0 < rows; t0 += kBlockRows) {
    const std::size_t n_rows = std::min(kBlockRows, rows - t0);
    const BlockRows wr = block_rows(w, ldw, t0, rows);
    const std::size_t keys = causal ? std::min(S, first + t0 + n_rows) : S;
    BlockSums<kTwo> sums;
    for (std::size_t j = 0; j < keys; ++j) {
      const float* xj = x + j * ldx + c0;
      sums.add(load8(xj), kTwo ? load8(xj + 8) : f32x8{}, wr.r0[j], wr.r1[j], wr.r2[j], wr.r3[j]);
    }
    for (std::size_t r = 0; r < n_rows; ++r)
      sums.store(r, alpha, o + (t0 + r) * ldo + c0, kTwo ? 16 : 8);
  }
}

// transposed_weights_times_rows for the columns [c0, c0 + 16) (or + 8) of every key block.
template <bool kTwo>
ATTN_KERNEL void transposed_cols(std::size_t S, std::size_t T, std::size_t c0, float alpha,
                                 const float* w, std::size_t ldw, const float* x, std::size_t ldx,
                                 bool causal, float* o, std::size_t ldo) {
  for (std::size_t j0 = 0; j0 < S; j0 += kBlockRows) {
    const std::size_t n_keys = std::min(kBlockRows, S - j0);
    // The block's keys (columns of w); a short last block repeats its last key.
    const std::size_t k1 = std::min(j0 + 1, S - 1), k2 = std::min(j0 + 2, S - 1);
    const std::size_t k3 = std::min(j0 + 3, S - 1);
    // Queries before j0 saw none of these keys when the mask is on.
    BlockSums<kTwo> sums;
    for (std::size_t t = causal ? j0 : 0; t < T; ++t) {
      const float* xt = x + t * ldx + c0;
      const float* wt = w + t * ldw;
      sums.add(load8(xt), kTwo ? load8(xt + 8) : f32x8{}, wt[j0], wt[k1], wt[k2], wt[k3]);
    }
    for (std::size_t r = 0; r < n_keys; ++r)
      sums.store(r, alpha, o + (j0 + r) * ldo + c0, kTwo ? 16 : 8);
  }
}

}  // namespace

void transpose_padded(const float* b, std::size_t ldb_b, std::size_t S, std::size_t width,
                      float* bt, std::size_t ldb) {
  for (std::size_t d = 0; d < width; ++d) {
    float* row = bt + d * ldb;
    for (std::size_t j = 0; j < S; ++j) row[j] = b[j * ldb_b + d];
    std::fill(row + S, row + ldb, 0.0f);
  }
}

ATTN_SIMD_CLONES void rows_times_transposed(std::size_t rows, std::size_t S, std::size_t depth,
                                            float alpha, const float* a, std::size_t lda,
                                            const float* bt, std::size_t ldb, bool causal,
                                            std::size_t first, float* c, std::size_t ldc) {
  for (std::size_t t0 = 0; t0 < rows; t0 += kBlockRows) {
    const std::size_t n_rows = std::min(kBlockRows, rows - t0);
    const BlockRows ar = block_rows(a, lda, t0, rows);
    // Keys the block needs: all S, or with the mask up to its last row's diagonal.
    const std::size_t keys = causal ? std::min(S, first + t0 + n_rows) : S;
    for (std::size_t j0 = 0; j0 < keys; j0 += kBlockCols) {
      // Columns j0..j0+15 (bt is padded to whole blocks of 16).
      BlockSums<true> sums;
      for (std::size_t d = 0; d < depth; ++d) {
        const float* b = bt + d * ldb + j0;
        sums.add(load8(b), load8(b + 8), ar.r0[d], ar.r1[d], ar.r2[d], ar.r3[d]);
      }
      // Written up to column S - 1 only: beyond it is the next row of c.
      const std::size_t cols = std::min(kBlockCols, S - j0);
      for (std::size_t r = 0; r < n_rows; ++r) sums.store(r, alpha, c + (t0 + r) * ldc + j0, cols);
    }
  }
}

ATTN_SIMD_CLONES void weights_times_rows(std::size_t rows, std::size_t S, std::size_t width,
                                         float alpha, const float* w, std::size_t ldw,
                                         const float* x, std::size_t ldx, bool causal,
                                         std::size_t first, float* o, std::size_t ldo) {
  std::size_t c0 = 0;
  for (; c0 + kBlockCols <= width; c0 += kBlockCols)
    weights_times_rows_cols<true>(rows, S, c0, alpha, w, ldw, x, ldx, causal, first, o, ldo);
  if (c0 < width)  // the last 8 columns
    weights_times_rows_cols<false>(rows, S, c0, alpha, w, ldw, x, ldx, causal, first, o, ldo);
}

ATTN_SIMD_CLONES void transposed_weights_times_rows(std::size_t S, std::size_t T, std::size_t width,
                                                    float alpha, const float* w, std::size_t ldw,
                                                    const float* x, std::size_t ldx, bool causal,
                                                    float* o, std::size_t ldo) {
  std::size_t c0 = 0;
  for (; c0 + kBlockCols <= width; c0 += kBlockCols)
    transposed_cols<true>(S, T, c0, alpha, w, ldw, x, ldx, causal, o, ldo);
  if (c0 < width)  // the last 8 columns
    transposed_cols<false>(S, T, c0, alpha, w, ldw, x, ldx, causal, o, ldo);
}

}  // namespace attn::detail
