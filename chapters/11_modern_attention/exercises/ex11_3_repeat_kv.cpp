// Exercise ex11.3: the head mapping of grouped-query attention (chapter 11,
// docs/11-modern-attention.md).
//
// Goal: like attn::repeat_kv. H query heads share KV key/value heads in groups of H / KV
// neighbouring query heads, the first group reading K/V head 0, the next K/V head 1, and so on.
//   kv (B, KV, T, hs) -> out (B, H, T, hs),  out[b, h] = kv[b, the K/V head of h's group]
// KV = H is plain multi-head attention (each head its own), KV = 1 multi-query attention.
// Throw std::invalid_argument when KV is 0 or does not divide n_heads.
//
// Check: build/default/bin/attn-check 11
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

attn::Tensor<4> repeat_kv(const attn::Tensor<4>& kv, std::size_t n_heads) {
  // TODO(ex11.3): check that KV divides n_heads, then fill every head h < n_heads of the output
  // from the K/V head of its group.
  throw std::logic_error("TODO ex11.3: repeat K/V heads");
}

}  // namespace ex11
