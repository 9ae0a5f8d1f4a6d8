// attn/ops/online_softmax.hpp: the online softmax, one query row at a time (chapter 12), the
// readable reference of the flash kernel (attn/fast/flash.hpp) and what exercises 12.1 and 12.2
// mirror. A row's keys arrive in tiles; the softmax over all of them is never stored. The running
// state of one query: the largest score seen m, the sum l of exp(s_j - m) over the keys seen, and
// the unnormalised output acc = sum_j exp(s_j - m) v_j. When a tile raises the max to m', what
// was summed so far is rescaled by exp(m - m'); at the end out = acc / l, the two-pass softmax's
// sum_j p_j v_j up to rounding.
//   q, k, v: (T, hs) for one causal head; scores of a tile (n,), its values (n, hs)
#pragma once

#include <cstddef>

#include "attn/core/xt.hpp"

namespace attn {

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

// The inputs one causal head's kernels take (attention_tile, chapter 12's ladder): q, k, v of one
// shape (T, hs) with T, hs >= 1, and a tile of at least 1. Throws std::invalid_argument naming
// `fn` otherwise.
void check_head_and_tile(const char* fn, const Matrix& q, const Matrix& k, const Matrix& v,
                         std::size_t tile);

// One tile of the causal forward: the output rows [i0, i0 + rows) (rows = min(tile, T - i0)) of
// softmax(mask(q k^T / sqrt(hs))) v, each row's keys folded in tiles of `tile` keys with
// online_softmax_update, then out = acc / l. q, k, v: (T, hs) -> (rows, hs). Throws
// std::invalid_argument for i0 >= T, tile 0 or shapes that differ.
Matrix attention_tile(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t i0,
                      std::size_t tile);

}  // namespace attn
