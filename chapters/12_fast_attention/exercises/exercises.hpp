// chapters/12_fast_attention/exercises/exercises.hpp: the exercises of chapter 12, making
// attention fast and long. Each function mirrors one of attn/ops/online_softmax.hpp (ex12.4 a
// step of attn/fast/flash.hpp's backward) and is written in its own file beside this one. Check
// them with `build/default/bin/attn-check 12`.
#pragma once

#include <cstddef>

#include "attn/core/xt.hpp"
#include "attn/ops/online_softmax.hpp"

namespace ex12 {

// ex12.1, ex12_1_online_softmax_update.cpp: fold one tile of keys into a query's running state,
// like attn::online_softmax_update. scores (n,) scaled and masked (-inf for a
// masked key), values (n, hs); row.m, row.l, row.acc (hs,) updated. Throws
// std::invalid_argument when values is not (n, hs).
void online_softmax_update(attn::OnlineRow& row, const attn::Vector& scores,
                           const attn::Matrix& values);

// ex12.2, ex12_2_attention_tile.cpp: the output rows [i0, i0 + rows) of causal attention for
// one head, like attn::attention_tile: rows = min(tile, T - i0), each row's keys
// folded in tiles of `tile` with online_softmax_update. q, k, v (T, hs) -> (rows, hs). Throws
// std::invalid_argument for i0 >= T, tile 0 or q, k, v of different shapes.
attn::Matrix attention_tile(const attn::Matrix& q, const attn::Matrix& k, const attn::Matrix& v,
                            std::size_t i0, std::size_t tile);

// ex12.3, ex12_3_row_lse.cpp: the log-sum-exp of a row's scaled visible scores, from its state
// after every key was folded in (row.m, row.l), as a flash forward keeps it for its backward.
// A row that saw no key gives -inf.
float row_lse(const attn::OnlineRow& row);

// What one (query tile, key tile) pair adds to the gradients of one causal head (ex12.4).
struct TileGrads {
  attn::Matrix dq;  // (rows, hs): added to dq's rows i0 .. i0 + rows - 1
  attn::Matrix dk;  // (cols, hs): added to dk's rows j0 .. j0 + cols - 1
  attn::Matrix dv;  // (cols, hs): added to dv's rows j0 .. j0 + cols - 1
};

// ex12.4, ex12_4_flash_backward_tile.cpp: one tile of the flash backward, like a step of
// attn::fast::flash_attention_backward: queries [i0, i0 + rows) against keys [j0, j0 + cols),
// rows = min(tile, T - i0), cols = min(tile, T - j0), from q, k, v, dout (T, hs), the forward's
// lse (T,) and d (T,), d_t = dout_t . out_t. Summed over every tile pair: dL/dq, dL/dk, dL/dv.
// Throws std::invalid_argument for tile 0, i0 or j0 >= T, or shapes that disagree.
TileGrads flash_backward_tile(const attn::Matrix& q, const attn::Matrix& k, const attn::Matrix& v,
                              const attn::Matrix& dout, const attn::Vector& lse,
                              const attn::Vector& d, std::size_t i0, std::size_t j0,
                              std::size_t tile);

}  // namespace ex12
