// Exercise ex11.6: the backward of grouped-query attention's head mapping (chapter 11,
// docs/11-modern-attention.md).
//
// Goal: like attn::sum_kv_groups. The forward (ex11.3, repeat_kv) copied each K/V head into every
// query head of its group. Given d = dL/d(the copies), (B, H, T, hs), return dL/dkv:
//   d (B, H, T, hs) -> dkv (B, KV, T, hs)
// What must hold (the tests check each):
//   - it is repeat_kv's adjoint: for any x (B, KV, T, hs),
//       sum(repeat_kv(x, H) * d) == sum(x * sum_kv_groups(d, KV));
//   - KV = H gives d back unchanged; KV = 1 gives one head that every query head fed.
// Throw std::invalid_argument when KV is 0 or does not divide H.
//
// Check: build/default/bin/attn-check 11
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

attn::Tensor<4> sum_kv_groups(const attn::Tensor<4>& d, std::size_t n_kv_heads) {
  // TODO(ex11.6): check KV; return dL/dkv, each K/V head's share of d.
  throw std::logic_error("TODO ex11.6: the K/V heads' gradient");
}

}  // namespace ex11
