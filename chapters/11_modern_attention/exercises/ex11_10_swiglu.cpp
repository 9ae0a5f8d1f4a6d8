// Exercise ex11.10: the SwiGLU feed-forward network (chapter 11, docs/11-modern-attention.md).
//
// Goal: like attn::swiglu_forward (Shazeer 2020, "GLU Variants Improve Transformer"; Llama,
// Mistral, Qwen), the FFN that replaces chapter 6's GELU MLP:
//   x (B, T, C), w.w_gate (C, F), w.w_up (C, F), w.w_down (F, C) -> y (B, T, C)
// Every token goes through two projections to F features, the gate's (x @ w_gate) and the
// value's (x @ w_up); the gate, through silu(a) = a * sigmoid(a), decides feature by feature how
// much of the value passes; w_down brings the F features back to C. No biases.
// What must hold (the tests check each):
//   - each token is computed on its own; a gate of 0 lets nothing through;
//   - the output is finite for any finite input: a gate pre-activation of +100 or -100 must give
//     silu(100) = 100 and silu(-100) = about 0, never inf or NaN;
//   - a weight of the wrong shape throws std::invalid_argument (w_gate fixes F; C comes from x).
//
// Check: build/default/bin/attn-check 11
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

attn::Tensor<3> swiglu(const attn::Tensor<3>& x, const attn::SwigluWeights<float>& w) {
  // TODO(ex11.10): check the three weights against x and w_gate; then for each token the two
  // projections, the gated product, and w_down.
  throw std::logic_error("TODO ex11.10: the SwiGLU feed-forward network");
}

}  // namespace ex11
