// Exercise ex07.3: the whole causal language model, wired from its parts (chapter 07,
// docs/07-causal-lm.md).
//
// Goal: tokens in, next-token logits out, like attn::lm_forward.
//   tokens (B, T) -> logits (B, T, V)
//   1. x = embed(tokens, wte, wpe)                     (B, T, C)   your ex07.1
//   2. for every block l: x = block_forward(x, w.blocks[l], {n_heads, causal, pre-norm, GELU})
//                                                      (B, T, C)   attn::block_forward
//   3. x = layer_norm(x, ln_f_gamma, ln_f_beta)        (B, T, C)   attn::layer_norm, eps 1e-5
//   4. logits = tied_logits(x, wte)                    (B, T, V)   your ex07.2
// logits[b, t] scores the token that comes after tokens[b, 0..t]; the causal blocks make sure
// it never saw tokens[b, t+1..].
// Throw std::invalid_argument for an empty sequence or T > config.block_size (your embed does
// most of the checking).
//
// Check: build/default/bin/attn-check 07
#include <stdexcept>

#include "attn/model/block.hpp"
#include "attn/ops/layernorm.hpp"
#include "exercises.hpp"

namespace ex07 {

attn::Tensor<3> lm_forward(const xt::xtensor<int, 2>& tokens, const attn::LmWeights& w,
                           const attn::ModelSpec& config) {
  // TODO(ex07.3): return logits (B, T, V) = tied(ln_f(blocks(embed(tokens)))), every block causal,
  // pre-norm, GELU with config.n_heads; std::invalid_argument unless 0 < T <= config.block_size.
  throw std::logic_error("TODO ex07.3: the decoder forward pass");
}

}  // namespace ex07
