// Exercise ex12.1: the online softmax update (chapter 12, docs/12-fast-attention.md).
//
// Goal: like attn::online_softmax_update. A query's keys arrive one tile at a
// time; you never see the whole row of scores, yet the result must be softmax(s) v over all of
// them. The state of the row:
//   row.m    the largest score seen so far (-inf before any key)
//   row.l    sum over the keys seen of exp(s_j - row.m)
//   row.acc  (hs,) sum over the keys seen of exp(s_j - row.m) * v_j
// A new tile: scores (n,), already scaled by 1/sqrt(hs), -inf for a masked key; values (n, hs).
// After the update the state describes every key seen, the new tile included, relative to the
// new maximum. At the end, acc / l is the attention output of the row.
// Edge cases: a tile of only -inf scores (all masked) changes nothing; the first tile starts
// from m = -inf, l = 0, acc = 0 (no NaN from -inf - -inf). Throw std::invalid_argument when
// values is not (n, hs).
//
// Check: build/default/bin/attn-check 12
#include <stdexcept>

#include "exercises.hpp"

namespace ex12 {

void online_softmax_update(attn::OnlineRow& row, const attn::Vector& scores,
                           const attn::Matrix& values) {
  // TODO(ex12.1): check values is (n, hs); then leave row.m, row.l and row.acc describing every
  // key seen so far, this tile's included, as the comment above defines them.
  throw std::logic_error("TODO ex12.1: the online softmax update");
}

}  // namespace ex12
