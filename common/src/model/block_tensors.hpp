// block_tensors.hpp (private to common/src): the one list of a block's parameter tensors, walked
// by everything that goes over all of them (lm_parameters' order, the shape checks of the
// gradients, block_zeros_like), so a new tensor is added in one place.
#pragma once

#include "attn/model/block.hpp"

namespace attn::detail {

// Calls f(field, a's tensor, b's tensor) for every parameter of two blocks, field by field, in
// lm_parameters' order. a and b may be one block (a walk over one), and either may be const.
template <class A, class B, class F>
void visit_block_pairs(A& a, B& b, F&& f) {
  f("w_q", a.attn.w_q, b.attn.w_q);
  f("w_k", a.attn.w_k, b.attn.w_k);
  f("w_v", a.attn.w_v, b.attn.w_v);
  f("w_o", a.attn.w_o, b.attn.w_o);
  f("ln1_gamma", a.ln1_gamma, b.ln1_gamma);
  f("ln1_beta", a.ln1_beta, b.ln1_beta);
  f("ln2_gamma", a.ln2_gamma, b.ln2_gamma);
  f("ln2_beta", a.ln2_beta, b.ln2_beta);
  f("w1", a.ffn.w1, b.ffn.w1);
  f("b1", a.ffn.b1, b.ffn.b1);
  f("w2", a.ffn.w2, b.ffn.w2);
  f("b2", a.ffn.b2, b.ffn.b2);
  f("w_gate", a.swiglu.w_gate, b.swiglu.w_gate);
  f("w_up", a.swiglu.w_up, b.swiglu.w_up);
  f("w_down", a.swiglu.w_down, b.swiglu.w_down);
}

// Whether two blocks' tensors have the same shapes, tensor for tensor.
inline bool same_block_shapes(const BlockWeights& a, const BlockWeights& b) {
  bool same = true;
  visit_block_pairs(a, b, [&](const char*, const auto& x, const auto& y) {
    same = same && x.shape() == y.shape();
  });
  return same;
}

}  // namespace attn::detail
