// Wrong: divides q by sqrt(hs) again, although the attention call already scales.
#include <cmath>
#include <cstddef>

#include "attn/ops/attention.hpp"
#include "attn/ops/linear.hpp"
#include "exercises.hpp"

namespace ex05 {

attn::Tensor<3> mha_forward(const attn::Tensor<3>& x, const attn::MhaWeights& w,
                            std::size_t n_heads, bool causal) {
  const float hs = static_cast<float>(x.shape()[2] / n_heads);
  const attn::Tensor<3> q_scaled = attn::linear(x, w.w_q) / std::sqrt(hs);
  const attn::Tensor<4> q = split_heads(q_scaled, n_heads);
  const attn::Tensor<4> k = split_heads(attn::linear(x, w.w_k), n_heads);
  const attn::Tensor<4> v = split_heads(attn::linear(x, w.w_v), n_heads);
  return attn::linear(merge_heads(attn::scaled_dot_product_attention(q, k, v, causal).out), w.w_o);
}

}  // namespace ex05
