// Exercise ex11.1: rotary position embeddings, RoPE (chapter 11, docs/11-modern-attention.md).
//
// Goal: like attn::rope in the paper's interleaved layout. Each head's hs features form hs / 2
// pairs of neighbours; pair i of the row at position p = offset + t turns by its own angle.
//   x (B, H, T, hs) -> y (B, H, T, hs), hs even
//   angle(p, i) = p * theta^(-2i / hs)                       i = 0 .. hs/2 - 1
//   (y[2i], y[2i+1]) = (x[2i], x[2i+1]) rotated by +angle    (counter-clockwise)
// Compute the angle in double. Throw std::invalid_argument when hs is odd or 0, or theta is not
// a finite number > 0.
//
// Check: build/default/bin/attn-check 11
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

attn::Tensor<4> rope(const attn::Tensor<4>& x, double theta, std::size_t offset) {
  // TODO(ex11.1): check hs and theta, then rotate every pair (2i, 2i+1) of every row t by
  // (offset + t) * theta^(-2i / hs).
  throw std::logic_error("TODO ex11.1: rotary position embeddings");
}

}  // namespace ex11
