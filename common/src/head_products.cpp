// head_products.cpp: the hand-written products of one attention head (head_products.hpp says
// why and when they replace BLAS).
//
// The three loops share one shape: a block of 4 output rows by 16 output columns is summed in
// 8 vector registers (4 x 2 registers of 8 floats) while the shared index runs; each step loads
// 16 floats of one operand once and multiplies them by 4 numbers of the other. Eight
// independent sums keep both of the CPU's adders busy; one sum alone would wait for each
// addition to finish before starting the next.
//
// The 8-float vectors are the GCC/Clang vector extension (as in ffn.cpp): one AVX register, or
// two SSE registers on CPUs without AVX; each function is compiled for both (ATTN_SIMD_CLONES).
// `vector * float` multiplies every lane by the float. No FMA (-ffp-contract=off): every lane
// does the scalar mul-then-add, so both versions give the same bits.
#include "head_products.hpp"

#include <algorithm>
#include <cstring>

#include "simd.hpp"

// The vectors never cross a call (everything below is inside one cloned function); GCC still
// notes that SSE and AVX code would pass them differently (-Wpsabi).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace attn::detail {

namespace {

using f32x8 = float __attribute__((vector_size(32)));

constexpr std::size_t kBlockRows = 4;  // output rows summed together
constexpr std::size_t kBlockCols = 16; // output columns summed together: two vectors

[[gnu::always_inline]] inline f32x8 load8(const float* p) {
  f32x8 v;
  std::memcpy(&v, p, sizeof v);  // unaligned load
  return v;
}

[[gnu::always_inline]] inline void store8(float* p, f32x8 v) { std::memcpy(p, &v, sizeof v); }

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
    // The block's rows; a short last block repeats its last row (computed, never written).
    const float* ar[kBlockRows];
    for (std::size_t r = 0; r < kBlockRows; ++r) ar[r] = a + std::min(t0 + r, rows - 1) * lda;
    // Keys the block needs: all S, or with the mask up to its last row's diagonal.
    const std::size_t keys = causal ? std::min(S, first + t0 + n_rows) : S;
    for (std::size_t j0 = 0; j0 < keys; j0 += kBlockCols) {
      // acc[r] = the 16 sums of row t0 + r, columns j0..j0+15 (bt is padded to whole blocks).
      f32x8 acc[kBlockRows][2] = {};
      for (std::size_t d = 0; d < depth; ++d) {
        const f32x8 b0 = load8(bt + d * ldb + j0);
        const f32x8 b1 = load8(bt + d * ldb + j0 + 8);
#pragma GCC unroll 4
        for (std::size_t r = 0; r < kBlockRows; ++r) {
          const float x = ar[r][d];
          acc[r][0] += b0 * x;
          acc[r][1] += b1 * x;
        }
      }
      // Written up to column S - 1 only: beyond it is the next row of c.
      const std::size_t cols = std::min(kBlockCols, S - j0);
      for (std::size_t r = 0; r < n_rows; ++r) {
        float* out = c + (t0 + r) * ldc + j0;
        if (cols == kBlockCols) {
          store8(out, acc[r][0] * alpha);
          store8(out + 8, acc[r][1] * alpha);
        } else {
          float tail[kBlockCols];
          store8(tail, acc[r][0] * alpha);
          store8(tail + 8, acc[r][1] * alpha);
          std::copy(tail, tail + cols, out);
        }
      }
    }
  }
}

ATTN_SIMD_CLONES void weights_times_rows(std::size_t rows, std::size_t S, std::size_t width,
                                         float alpha, const float* w, std::size_t ldw,
                                         const float* x, std::size_t ldx, bool causal,
                                         std::size_t first, float* o, std::size_t ldo) {
  for (std::size_t t0 = 0; t0 < rows; t0 += kBlockRows) {
    const std::size_t n_rows = std::min(kBlockRows, rows - t0);
    const float* wr[kBlockRows];
    for (std::size_t r = 0; r < kBlockRows; ++r) wr[r] = w + std::min(t0 + r, rows - 1) * ldw;
    const std::size_t keys = causal ? std::min(S, first + t0 + n_rows) : S;
    for (std::size_t c0 = 0; c0 < width; c0 += kBlockCols) {
      const bool two = c0 + kBlockCols <= width;  // else the last 8 columns
      f32x8 acc[kBlockRows][2] = {};
      for (std::size_t j = 0; j < keys; ++j) {
        const f32x8 x0 = load8(x + j * ldx + c0);
        const f32x8 x1 = two ? load8(x + j * ldx + c0 + 8) : f32x8{};
#pragma GCC unroll 4
        for (std::size_t r = 0; r < kBlockRows; ++r) {
          const float s = wr[r][j];
          acc[r][0] += x0 * s;
          acc[r][1] += x1 * s;
        }
      }
      for (std::size_t r = 0; r < n_rows; ++r) {
        store8(o + (t0 + r) * ldo + c0, acc[r][0] * alpha);
        if (two) store8(o + (t0 + r) * ldo + c0 + 8, acc[r][1] * alpha);
      }
    }
  }
}

ATTN_SIMD_CLONES void transposed_weights_times_rows(std::size_t S, std::size_t T,
                                                    std::size_t width, float alpha,
                                                    const float* w, std::size_t ldw,
                                                    const float* x, std::size_t ldx, bool causal,
                                                    float* o, std::size_t ldo) {
  for (std::size_t j0 = 0; j0 < S; j0 += kBlockRows) {
    const std::size_t n_keys = std::min(kBlockRows, S - j0);
    // Queries before j0 saw none of these keys when the mask is on.
    const std::size_t t_begin = causal ? j0 : 0;
    for (std::size_t c0 = 0; c0 < width; c0 += kBlockCols) {
      const bool two = c0 + kBlockCols <= width;
      f32x8 acc[kBlockRows][2] = {};
      for (std::size_t t = t_begin; t < T; ++t) {
        const f32x8 x0 = load8(x + t * ldx + c0);
        const f32x8 x1 = two ? load8(x + t * ldx + c0 + 8) : f32x8{};
        const float* wt = w + t * ldw + j0;  // w[t][j0..j0+3]
#pragma GCC unroll 4
        for (std::size_t r = 0; r < kBlockRows; ++r) {
          const float s = r < n_keys ? wt[r] : 0.0f;
          acc[r][0] += x0 * s;
          acc[r][1] += x1 * s;
        }
      }
      for (std::size_t r = 0; r < n_keys; ++r) {
        store8(o + (j0 + r) * ldo + c0, acc[r][0] * alpha);
        if (two) store8(o + (j0 + r) * ldo + c0 + 8, acc[r][1] * alpha);
      }
    }
  }
}

}  // namespace attn::detail
