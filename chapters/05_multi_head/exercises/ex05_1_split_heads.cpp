// Exercise ex05.1: split the channels into heads (chapter 05, docs/05-multi-head.md).
//
// Goal: give every head its own slice of the C channels, and make heads a batch axis so that one
// call of attention handles all of them.
//   x (B, T, C) -> (B, H, T, hs),  hs = C / H
//   out(b, h, t, i) = x(b, t, h * hs + i)       head h = columns [h * hs, (h + 1) * hs) of x
// In NumPy: x.reshape(B, T, H, hs).transpose(0, 2, 1, 3). The reshape is free (the numbers do
// not move); the transpose is the part that moves them, so that each head's (T, hs) block is
// contiguous. Example, B = 1, T = 2, C = 4, H = 2:
//   [[1, 2, 3, 4],          head 0: [[1, 2],    head 1: [[3, 4],
//    [5, 6, 7, 8]]   ->              [5, 6]]             [7, 8]]
// Throw std::invalid_argument when n_heads is 0 or does not divide C.
//
// Check: build/default/bin/attn-check 05
#include <cstddef>
#include <stdexcept>

#include "exercises.hpp"

namespace ex05 {

attn::Tensor<4> split_heads(const attn::Tensor<3>& x, std::size_t n_heads) {
  // TODO(ex05.1): return (B, H, T, hs), out(b, h, t, i) = x(b, t, h * hs + i), hs = C / H;
  // std::invalid_argument when n_heads is 0 or does not divide C.
  throw std::logic_error("TODO ex05.1: split heads");
}

}  // namespace ex05
