// Wrong: forgets the output projection w_o: returns the merged heads.
#include <cstddef>

#include "attn/ops/attention.hpp"
#include "attn/ops/linear.hpp"
#include "exercises.hpp"

namespace ex05 {

attn::Tensor<3> mha_forward(const attn::Tensor<3>& x, const attn::MhaWeights& w,
                            std::size_t n_heads, bool causal) {
  const attn::Tensor<4> q = split_heads(attn::linear(x, w.w_q), n_heads);
  const attn::Tensor<4> k = split_heads(attn::linear(x, w.w_k), n_heads);
  const attn::Tensor<4> v = split_heads(attn::linear(x, w.w_v), n_heads);
  return merge_heads(attn::scaled_dot_product_attention(q, k, v, causal).out);
}

}  // namespace ex05
