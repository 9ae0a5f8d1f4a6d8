// Exercise ex05.3: multi-head self-attention, wired together (chapter 05, docs/05-multi-head.md).
//
// Goal: the forward pass of one multi-head attention layer, from the pieces you have:
//   q = x @ w_q,  k = x @ w_k,  v = x @ w_v              (B, T, C) each, one GEMM per projection
//   split q, k, v into n_heads heads                     (B, H, T, hs), hs = C / H
//   per head: softmax(q k^T / sqrt(hs) + mask) v         (B, H, T, hs)
//   merge the heads                                      (B, T, C)
//   out = merged @ w_o                                   (B, T, C)
// i.e. MultiHead(x) = Concat(head_1, ..., head_H) W_o, where head h only sees column block h of
// the projections. With causal, query t attends to keys 0..t only.
// Use attn::linear (attn/fast/linear.hpp) for the projections and
// attn::scaled_dot_product_attention (attn/fast/attention.hpp) for the attention of all heads at
// once; the splitting, merging and the order of the steps are yours (your ex05::split_heads and
// ex05::merge_heads are in scope).
//
// Check: build/default/bin/attn-check 05
#include <cstddef>
#include <stdexcept>

#include "attn/ops/attention.hpp"
#include "attn/ops/linear.hpp"
#include "exercises.hpp"

namespace ex05 {

attn::Tensor<3> mha_forward(const attn::Tensor<3>& x, const attn::MhaWeights& w,
                            std::size_t n_heads, bool causal) {
  // TODO(ex05.3): return (B, T, C) = Concat(head_1..head_H) @ w_o, head h = attention of column
  // block h of x @ w_q, x @ w_k, x @ w_v (causal: keys 0..t only).
  throw std::logic_error("TODO ex05.3: multi-head forward");
}

}  // namespace ex05
