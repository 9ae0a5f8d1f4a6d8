// Exercise ex12.4: one tile of the flash backward (chapter 12, docs/12-fast-attention.md).
//
// Goal: like one step of attn::fast::flash_attention_backward. The forward (ex12.2) kept no
// weights: per query t only its output out_t and its log-sum-exp lse_t (ex12.3). The backward
// gets dout = dL/dout and, computed once per query, d_t = dout_t . out_t (the sum over the
// row's features of dout * out). From these it works tile by tile: one tile of queries
// i0 .. i0 + rows - 1 against one tile of keys j0 .. j0 + cols - 1, with rows = min(tile, T - i0)
// and cols = min(tile, T - j0), returns what the pairs (t, j) of the two tiles add to dq (at the
// query rows), dk and dv (at the key rows), for one causal head,
// out = softmax(mask(q k^T / sqrt(hs))) v:
//   q, k, v, dout (T, hs), lse (T,), d (T,) -> dq (rows, hs), dk (cols, hs), dv (cols, hs)
// What must hold (the tests check each):
//   - summed over every pair of tiles, the contributions are the exact gradients dL/dq, dL/dk,
//     dL/dv of causal attention;
//   - nothing is recomputed that the forward kept: a weight is the forward's weight, whatever
//     the tile (the tests give an lse of their own and check that you used it);
//   - causal: query t sees keys j <= t; a key tile entirely after the query tile adds nothing
//     (zeros of the right shapes);
//   - only the two tiles are read (rows i0.. of q, dout, lse, d; rows j0.. of k, v), and the
//     memory held stays a few tiles: no (T, T) matrix, no row of T scores.
// Throw std::invalid_argument for tile 0, i0 or j0 >= T, or shapes that disagree.
//
// Check: build/default/bin/attn-check 12
#include <stdexcept>

#include "exercises.hpp"

namespace ex12 {

TileGrads flash_backward_tile(const attn::Matrix& q, const attn::Matrix& k, const attn::Matrix& v,
                              const attn::Matrix& dout, const attn::Vector& lse,
                              const attn::Vector& d, std::size_t i0, std::size_t j0,
                              std::size_t tile) {
  // TODO(ex12.4): check the inputs; return the tile pair's contributions to dq, dk and dv.
  throw std::logic_error("TODO ex12.4: one tile of the flash backward");
}

}  // namespace ex12
