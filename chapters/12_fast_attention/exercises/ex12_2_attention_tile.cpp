// Exercise ex12.2: one tile of the flash-style forward (chapter 12, docs/12-fast-attention.md).
//
// Goal: like attn::attention_tile. Compute rows i0 .. i0 + rows - 1 of causal
// attention for one head, rows = min(tile, T - i0), without ever holding a (T, T) matrix:
//   q, k, v (T, hs);  for each query t of the tile:
//     start a row state (attn::online_row_start(hs));
//     for each tile of keys j0, j0 + tile, ... that t can see (j0 <= t):
//       s_j = q_t . k_j / sqrt(hs) for the tile's keys, -inf for a key j > t (the mask);
//       fold the tile in with your ex12::online_softmax_update (ex12.1; write the namespace:
//       unqualified, the call is ambiguous with the library's attn::online_softmax_update);
//     out[t - i0] = acc / l
// Returns (rows, hs). What must hold besides the numbers (the tests measure both):
//   - the memory held at once stays a few tiles (scores (tile,), values (tile, hs), the row
//     state): no (T, T) matrix, no row of T scores, no copy of k or v;
//   - key tiles after a query's own are never read: every key there is masked.
// Throw std::invalid_argument for i0 >= T, tile 0, or q, k, v of different shapes.
//
// Check: build/default/bin/attn-check 12
#include <stdexcept>

#include "exercises.hpp"

namespace ex12 {

attn::Matrix attention_tile(const attn::Matrix& q, const attn::Matrix& k, const attn::Matrix& v,
                            std::size_t i0, std::size_t tile) {
  // TODO(ex12.2): check the inputs; return the rows i0 .. i0 + rows - 1 of causal attention.
  throw std::logic_error("TODO ex12.2: one tile of the forward");
}

}  // namespace ex12
