// attn/fast/ladder.hpp: chapter 12's ladder of kernels for ONE causal attention head,
// out = softmax(mask(q k^T / sqrt(hs))) v, from the naive triple loop to the flash kernel, one
// change per rung. Each rung is a short function in common/src/fast/ladder.cpp, tested equal to
// the reference attn::scaled_dot_product_attention, which sums in double
// (tests/common/test_ladder.cpp: the golden tolerance; rung 1, the reference's steps in float,
// within float rounding).
//   q, k, v: (T, hs) -> out (T, hs)
#pragma once

#include <cstddef>
#include <string_view>

#include "attn/core/xt.hpp"

namespace attn::fast::ladder {

// 1. Three nested loops: the (T, T) scores one dot product at a time, mask, softmax, P v.
Matrix naive(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile);
// 2. The two products by BLAS (attn::fast::gemm); scale, mask and softmax as three passes over (T,
// T).
Matrix gemm_scores(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile);
// 3. The same products; scale, mask and softmax fused into one pass per row.
Matrix fused_softmax(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile);
// 4. By blocks of `tile` queries, each block's products stop at its last query's key: the
//    masked upper triangle is never computed.
Matrix causal_blocks(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile);
// 5. Tiles of queries x keys with the online softmax, plain loops: no (T, T) matrix at all.
Matrix tiled_online(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile);
// 6. Rung 5 with 8 keys' inner products side by side in SIMD lanes (the same sums, the same
//    order: the same bits as rung 5).
Matrix simd_online(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile);
// 7. Rung 6 with the query tiles over the library's threads (the same bits as rung 6).
Matrix threaded_online(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile);

// The online softmax, one query row at a time (the exercises of chapter 12 mirror these two).
// The running state of one query: the largest score seen m, the sum l of exp(s_j - m) over the
// keys seen, and the unnormalised output acc = sum_j exp(s_j - m) v_j (hs floats).
struct OnlineRow {
  float m;     // -inf before any key
  float l;     // 0 before any key
  Vector acc;  // (hs,), zeros before any key
};
OnlineRow online_row_start(std::size_t hs);
// Folds one tile of keys into the row: scores (n,) already scaled and masked (-inf for a masked
// key), values (n, hs). m' = max(m, max_j s_j), a = exp(m - m'), l = a l + sum_j exp(s_j - m'),
// acc = a acc + sum_j exp(s_j - m') v_j. A tile of only -inf scores changes nothing.
// Throws std::invalid_argument when values is not (n, acc.size()).
void online_softmax_update(OnlineRow& row, const Vector& scores, const Matrix& values);
// One tile of the causal forward: the output rows [i0, i0 + rows) (rows = min(tile, T - i0)) of
// softmax(mask(q k^T / sqrt(hs))) v, each row's keys folded in tiles of `tile` keys with
// online_softmax_update, then out = acc / l. q, k, v: (T, hs) -> (rows, hs). Throws
// std::invalid_argument for i0 >= T, tile 0 or shapes that differ.
Matrix attention_tile(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t i0,
                      std::size_t tile);

using Rung = Matrix (*)(const Matrix&, const Matrix&, const Matrix&, std::size_t);

struct RungInfo {
  std::string_view name;  // e.g. "naive loops"
  Rung run;
};
inline constexpr std::size_t kRungs = 7;
// The rungs in order, 1 to 7.
const RungInfo& rung(std::size_t index);

// Floating-point operations rung `index` (0-based) performs at T, hs, tile: the two products
// (2 a multiply-add), counting the masked scores a rung computes and throws away.
double rung_flops(std::size_t index, std::size_t T, std::size_t hs, std::size_t tile);
// Floats of working memory beyond q, k, v and out: the (T, T) scores of rungs 1-4, the tiles of
// rungs 5-7 (per thread: `threads` of them).
double rung_floats(std::size_t index, std::size_t T, std::size_t hs, std::size_t tile,
                   std::size_t threads);

}  // namespace attn::fast::ladder
