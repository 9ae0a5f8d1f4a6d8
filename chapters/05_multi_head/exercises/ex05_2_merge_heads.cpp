// Exercise ex05.2: merge the heads back into channels (chapter 05, docs/05-multi-head.md).
//
// Goal: undo split_heads. After attention every head holds a (T, hs) block of outputs; put the H
// blocks of each position side by side again, head 0 first: Concat(head_1, ..., head_H).
//   x (B, H, T, hs) -> (B, T, C),  C = H * hs
//   out(b, t, h * hs + i) = x(b, h, t, i)
// In NumPy: x.transpose(0, 2, 1, 3).reshape(B, T, H * hs) (PyTorch needs .contiguous() before
// .view: the transpose alone only changes the strides). Example, B = 1, H = 2, T = 2, hs = 2:
//   head 0: [[1, 2],    head 1: [[5, 6],            [[1, 2, 5, 6],
//            [3, 4]]             [7, 8]]     ->      [3, 4, 7, 8]]
//
// Check: build/default/bin/attn-check 05
#include <stdexcept>

#include "exercises.hpp"

namespace ex05 {

attn::Tensor<3> merge_heads(const attn::Tensor<4>& x) {
  // TODO(ex05.2): return (B, T, H * hs), out(b, t, h * hs + i) = x(b, h, t, i).
  throw std::logic_error("TODO ex05.2: merge heads");
}

}  // namespace ex05
