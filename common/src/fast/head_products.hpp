// head_products.hpp (private to common/src): the matrix products of attention for one small
// head, written by hand.
//
// Why not BLAS, like every other product? Because at the sizes of the course's trained models
// (T = 64 positions, hs = 16) one head's product is ~130 thousand FLOPs, about a microsecond of
// work, and a BLAS call spends time of that order copying ("packing") its operands before it
// starts; it also cannot skip the masked half of a causal product. These loops read the
// operands in place and stop at the diagonal. attention.cpp uses them when every head width is
// a multiple of 8 and at most kMaxHeadProductWidth, and S is at most kMaxHeadProductKeys; other
// shapes keep BLAS.
//
// Every output element is one sum taken in a fixed order (the shared index ascending, mul then
// add, no FMA), whatever the shape of the call, the block it falls in, or the CPU: so the same
// scores come out of a whole sequence at once (training) and of one query at a time (chapter
// 10's cache), bit for bit.
#pragma once

#include <cstddef>

namespace attn::detail {

inline constexpr std::size_t kMaxHeadProductWidth = 64;
inline constexpr std::size_t kMaxHeadProductKeys = 256;

// bt (width, ldb) = b^T for b (S, width) with rows ldb_b floats apart; columns S..ldb-1 of bt
// are set to 0. ldb = padded_columns(S).
void transpose_padded(const float* b, std::size_t ldb_b, std::size_t S, std::size_t width,
                      float* bt, std::size_t ldb);
// S rounded up to the 16 columns the products below work on.
constexpr std::size_t padded_columns(std::size_t S) { return (S + 15) / 16 * 16; }

// c[t][j] = alpha * sum_d a[t][d] * bt[d][j] for rows t < rows and keys j < S, or with
// `causal` only j <= first + t (row t is query first + t; the entries after the diagonal that
// the 16-column blocks produce may be written too, never beyond S). bt from transpose_padded.
//   scores = q k^T / sqrt(hs):  a = q, bt = k^T;   dP = dO v^T:  a = dO, bt = v^T
void rows_times_transposed(std::size_t rows, std::size_t S, std::size_t depth, float alpha,
                           const float* a, std::size_t lda, const float* bt, std::size_t ldb,
                           bool causal, std::size_t first, float* c, std::size_t ldc);

// o[t][:] = alpha * sum_j w[t][j] * x[j][:] for rows t < rows, width a multiple of 8; with
// `causal` the sum stops after key first + t of the last row of each 4-row block, so w must be 0
// past each row's diagonal (as softmax weights and their gradients are).
//   out = P v:  w = P, x = v;   dQ = dS k / sqrt(hs):  w = dS, x = k
void weights_times_rows(std::size_t rows, std::size_t S, std::size_t width, float alpha,
                        const float* w, std::size_t ldw, const float* x, std::size_t ldx,
                        bool causal, std::size_t first, float* o, std::size_t ldo);

// o[j][:] = alpha * sum_t w[t][j] * x[t][:] for keys j < S over rows t < T, width a multiple of
// 8; with `causal` (S == T) the sum for the 4-key block starting at j0 starts at t = j0, so w
// must be 0 before each key's diagonal (row t < j).
//   dV = P^T dO:  w = P, x = dO;   dK = dS^T q / sqrt(hs):  w = dS, x = q
void transposed_weights_times_rows(std::size_t S, std::size_t T, std::size_t width, float alpha,
                                   const float* w, std::size_t ldw, const float* x, std::size_t ldx,
                                   bool causal, float* o, std::size_t ldo);

}  // namespace attn::detail
