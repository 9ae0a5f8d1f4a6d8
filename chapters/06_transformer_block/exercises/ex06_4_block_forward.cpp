// Exercise ex06.4: one pre-norm transformer block (chapter 06, docs/06-transformer-block.md).
//
// Goal: wire the pieces together with two residual connections, the GPT-2 way (pre-norm):
//   x (B, T, C) -> y (B, T, C)
//   r = x + mha(ln1(x))          attention reads the normalised stream, adds to the raw one
//   y = r + ffn(ln2(r))          the FFN likewise, on the result of the first step
//   ln1 uses w.ln1_gamma, w.ln1_beta; ln2 uses w.ln2_gamma, w.ln2_beta; eps = 1e-5.
//   mha: w.attn with n_heads heads, causal or not; ffn: w.ffn with the given activation.
// The sublayers come from the library: attn::layer_norm<3> (attn/fast/layernorm.hpp),
// attn::mha_forward (attn/fast/attention.hpp, take .out) and attn::ffn_forward (attn/fast/ffn.hpp).
// Your job is the wiring: what each sublayer reads, and what it is added to.
//
// Check: build/default/bin/attn-check 06
#include <stdexcept>

#include "attn/ops/attention.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/ops/layernorm.hpp"
#include "exercises.hpp"

namespace ex06 {

attn::Tensor<3> block_forward_pre_norm(const attn::Tensor<3>& x, const attn::BlockWeights& w,
                                       std::size_t n_heads, bool causal,
                                       attn::Activation activation) {
  // TODO(ex06.4): return (B, T, C) y = r + ffn(ln2(r)), where r = x + mha(ln1(x)).
  throw std::logic_error("TODO ex06.4: pre-norm transformer block");
}

}  // namespace ex06
