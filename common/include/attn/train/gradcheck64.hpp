// attn/train/gradcheck64.hpp: the transformer block and the language model in float64, forward
// and backward, built from the float64 twins of the reference ops (chapter 08). They exist for
// one purpose: the gradient checks of chapter 08 and of the tests run in double (see
// check_gradients in gradcheck.hpp: a float forward rounds L by more than the 0.1% a check must
// see). The float block and model (attn/model/) are checked against them: their gradients must
// equal these to float rounding.
// Only the default configuration of each is covered: LayerNorm, residuals, FFN and w_o in the
// block (pre- or post-norm, any activation, causal or not); a tied head in the model. Anything
// else throws std::invalid_argument naming the setting.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "attn/core/xt.hpp"
#include "attn/model/block.hpp"
#include "attn/model/model.hpp"
#include "attn/ops/attention.hpp"
#include "attn/ops/ffn.hpp"

namespace attn {

// A tensor of a float64 model by name, its numbers a span into the weights.
struct NamedTensor64 {
  std::string name;
  std::span<double> values;
};

struct BlockWeights64 {
  MhaWeights64 attn;
  Tensor64<1> ln1_gamma, ln1_beta;  // (C,)
  Tensor64<1> ln2_gamma, ln2_beta;  // (C,)
  FfnWeights64 ffn;
};
BlockWeights64 to_float64(const BlockWeights& w);
BlockWeights64 block_zeros_like(const BlockWeights64& w);
// The 12 tensors in the order and with the names of the float model's ("w_q", ..., "b2").
std::vector<NamedTensor64> block_parameters(BlockWeights64& w);

// x (B, T, C) -> (B, T, C), as block_forward.
Tensor64<3> block_forward(const Tensor64<3>& x, const BlockWeights64& w, const BlockConfig& config);
// The backward of block_forward at x (the forward is recomputed): dx (B, T, C) overwritten;
// grads accumulate (+=), like the float block_backward.
void block_backward(const Tensor64<3>& dout, const Tensor64<3>& x, const BlockWeights64& w,
                    const BlockConfig& config, Tensor64<3>& dx, BlockWeights64& grads);

struct LmWeights64 {
  Tensor64<2> wte;  // (V, C), also the output projection
  Tensor64<2> wpe;  // (T_max, C)
  std::vector<BlockWeights64> blocks;
  Tensor64<1> ln_f_gamma, ln_f_beta;  // (C,)
};
LmWeights64 to_float64(const LmWeights& w);
LmWeights64 lm_zeros_like(const LmWeights64& w);
// Every tensor, in the order and with the names of lm_parameters ("wte", "h0.w_q", ...).
std::vector<NamedTensor64> lm_parameters(LmWeights64& w);

// Mean cross-entropy of the next-token predictions, as lm_loss.
double lm_loss(const xt::xtensor<int, 2>& tokens, const xt::xtensor<int, 2>& targets,
               const LmWeights64& w, const LmConfig& config);
// The loss, and dloss/dparameter ADDED into grads (shaped like w: lm_zeros_like).
double lm_forward_backward(const xt::xtensor<int, 2>& tokens, const xt::xtensor<int, 2>& targets,
                           const LmWeights64& w, const LmConfig& config, LmWeights64& grads);

}  // namespace attn
