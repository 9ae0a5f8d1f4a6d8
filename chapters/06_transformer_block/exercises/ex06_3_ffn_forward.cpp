// Exercise ex06.3: the position-wise feed-forward network (chapter 06,
// docs/06-transformer-block.md).
//
// Goal: after attention has mixed the positions, every token is transformed on its own by the
// same two-layer network: widen to F features, bend with the activation, project back to C.
//   x (B, T, C), w1 (C, F), b1 (F,), w2 (F, C), b2 (C,) -> y (B, T, C)
//   h = x @ w1 + b1       (B, T, F)
//   a = act(h)            (B, T, F)    relu, gelu (exact) or gelu_tanh
//   y = a @ w2 + b2       (B, T, C)
// You may use attn::linear (attn/fast/linear.hpp) for the two products and attn::activate
// (attn/fast/ffn.hpp) or your own ex06::gelu for the activation.
// Throw std::invalid_argument if the weights do not fit x (attn::linear already does).
//
// Check: build/default/bin/attn-check 06
#include <stdexcept>

#include "attn/ops/linear.hpp"
#include "exercises.hpp"

namespace ex06 {

attn::Tensor<3> ffn_forward(const attn::Tensor<3>& x, const attn::FfnWeights& w,
                            attn::Activation activation) {
  // TODO(ex06.3): return (B, T, C) = act(x @ w1 + b1) @ w2 + b2, act named by activation;
  // std::invalid_argument for weights that do not fit x.
  throw std::logic_error("TODO ex06.3: feed-forward network");
}

}  // namespace ex06
