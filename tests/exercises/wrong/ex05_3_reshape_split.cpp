// Wrong: splits the projections with a plain reshape (no transpose) and merges the same way.
#include <algorithm>
#include <cstddef>

#include "attn/ops/attention.hpp"
#include "attn/ops/linear.hpp"
#include "exercises.hpp"

namespace ex05 {

attn::Tensor<3> mha_forward(const attn::Tensor<3>& x, const attn::MhaWeights& w,
                            std::size_t n_heads, bool causal) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  const auto reshape = [&](const attn::Tensor<3>& y) {
    attn::Tensor<4> out({B, n_heads, T, C / n_heads});
    std::copy(y.begin(), y.end(), out.begin());
    return out;
  };
  const attn::AttentionResult r = attn::scaled_dot_product_attention(
      reshape(attn::linear(x, w.w_q)), reshape(attn::linear(x, w.w_k)),
      reshape(attn::linear(x, w.w_v)), causal);
  attn::Tensor<3> merged({B, T, C});
  std::copy(r.out.begin(), r.out.end(), merged.begin());
  return attn::linear(merged, w.w_o);
}

}  // namespace ex05
