// chapters/12_fast_attention/ladder.hpp: chapter 12's ladder of kernels for ONE causal attention
// head, out = softmax(mask(q k^T / sqrt(hs))) v, from the naive triple loop to the flash kernel,
// one change per rung. Each rung is a short function in ladder.cpp beside this file, tested equal
// to the reference attn::scaled_dot_product_attention, which sums in double
// (tests/common/test_ladder.cpp: the golden tolerance; rung 1, the reference's steps in float,
// within float rounding).
//   q, k, v: (T, hs) -> out (T, hs)
#pragma once

#include <cstddef>
#include <string_view>

#include "attn/core/xt.hpp"

namespace ch12::ladder {

using attn::Matrix;

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

// The online softmax that rungs 5-7 run on raw pointers is, written plainly, the library's
// reference attn::online_softmax_update and attn::attention_tile (attn/ops/online_softmax.hpp).

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

}  // namespace ch12::ladder
