// Exercise ex11.9: RoPE in the rotate-half layout (chapter 11, docs/11-modern-attention.md).
//
// Goal: like attn::rope with attn::RopeLayout::rotate_half, the layout of GPT-NeoX and Hugging
// Face's Llama. It is the same rotation as your ex11.1, with the head's features stored in
// another order: the features that ex11.1 keeps at even places (0, 2, 4, ...) come first, the odd
// ones after them. With P that reordering (attn::rope_half_permutation(hs) lists it), what must
// hold is
//   rope_rotate_half(P x, theta, offset) = P rope(x, theta, offset)    for every x
//   x (B, H, T, hs) -> y (B, H, T, hs), row t at position offset + t
// Work out from it which features form a pair, which way each pair turns and at what speed; the
// tests check each. Other properties you can test yourself: position 0 changes nothing; each pair
// keeps its length; q . k after the rotation depends only on the two positions' difference.
// Edge cases: throw std::invalid_argument when hs is odd or 0 (no layout pairs an odd feature
// count), or theta is not a finite number > 0. Compute the angles in double.
//
// Check: build/default/bin/attn-check 11
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

attn::Tensor<4> rope_rotate_half(const attn::Tensor<4>& x, double theta, std::size_t offset) {
  // TODO(ex11.9): check hs and theta, then rotate every pair of the rotate-half layout.
  throw std::logic_error("TODO ex11.9: RoPE in the rotate-half layout");
}

}  // namespace ex11
