// Exercise ex11.3: the head mapping of grouped-query attention (chapter 11,
// docs/11-modern-attention.md).
//
// Goal: like attn::repeat_kv. H query heads share KV key/value heads in groups of H / KV
// neighbours: heads 0 .. H/KV - 1 read K/V head 0, the next H/KV read K/V head 1, and so on.
//   kv (B, KV, T, hs) -> out (B, H, T, hs),  out[b, h] = kv[b, g(h)]
// Throw std::invalid_argument when KV is 0 or does not divide n_heads.
//
// Check: build/default/bin/attn-check 11
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

attn::Tensor<4> repeat_kv(const attn::Tensor<4>& kv, std::size_t n_heads) {
  // TODO(ex11.3): check that KV divides n_heads, then copy K/V head g(h) into head h of the
  // output for every h < n_heads, with g(h) the group that query head h belongs to.
  throw std::logic_error("TODO ex11.3: repeat K/V heads");
}

}  // namespace ex11
