// attn/model/reference.hpp: the reference transformer block, language model and KV-cache step,
// written as the pages write them and built only from the reference ops of ops/ (chapters 06-11).
// One implementation, templated on the scalar S and instantiated for
//   float:  what the fast block, model and cache (block.cpp, model.cpp, kvcache.cpp) are tested
//           equal to, part by part, within the golden tolerance;
//   double: what the gradient checks run (chapter 08, attn::check_gradients: a float forward
//           rounds L by more than the 0.1% a check must see).
// Every part of BlockConfig: pre- or post-norm; LayerNorm or RMSNorm (or none); the MLP with any
// activation or SwiGLU (or none); residuals on or off; n_kv_heads (grouped-query attention);
// RoPE; a sliding window; biases on or off. Not covered: attn_proj = false (no w_o) and dropout
// in the backward (the reference is the evaluation forward): both throw std::invalid_argument.
// Attention is attn::gqa_forward throughout: with n_kv_heads = H, no RoPE and no window it is
// chapter 05's multi-head attention.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "attn/core/xt.hpp"
#include "attn/model/block.hpp"
#include "attn/model/model.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/ops/gqa.hpp"
#include "attn/ops/swiglu.hpp"

namespace attn::ref {

// The parameters: attn::BlockWeightsOf<S> and attn::LmWeightsOf<S> (one family with the
// model's), in double for the gradient checks; a tensor the parts do not use is empty (size 0).
template <class S>
using BlockWeights = attn::BlockWeightsOf<S>;
template <class S>
using LmWeights = attn::LmWeightsOf<S>;

// The model's float weights in S (exact: float -> double widens), and zeros shaped like them.
template <class S>
BlockWeights<S> cast(const attn::BlockWeights& w);
template <class S>
LmWeights<S> cast(const attn::LmWeights& w);
template <class S>
BlockWeights<S> zeros_like(const BlockWeights<S>& w);
template <class S>
LmWeights<S> zeros_like(const LmWeights<S>& w);

// Every non-empty tensor by name, in the order and with the names of attn::lm_parameters
// ("w_q", ..., "w_down" for a block; "wte", "h0.w_q", ..., "lm_head_bias" for the model).
template <class S>
struct Named {
  std::string name;
  std::span<S> values;
};
template <class S>
std::vector<Named<S>> parameters(BlockWeights<S>& w);
template <class S>
std::vector<Named<S>> parameters(LmWeights<S>& w);

// ---- The block (chapter 06; its backward, chapter 08; its parts, chapter 11) ----------------
//   pre-norm:  h = x + attn(norm1(x));     out = h + ffn(norm2(h))
//   post-norm: h = norm1(x + attn(x));     out = norm2(h + ffn(h))
// x (B, T, C) -> out (B, T, C).
template <class S>
xt::xtensor<S, 3> block_forward(const xt::xtensor<S, 3>& x, const BlockWeights<S>& w,
                                const BlockConfig& config);
// The backward at x (the forward is recomputed): dx (B, T, C) overwritten; grads accumulate (+=)
// and are shaped like w (zeros_like).
template <class S>
void block_backward(const xt::xtensor<S, 3>& dout, const xt::xtensor<S, 3>& x,
                    const BlockWeights<S>& w, const BlockConfig& config, xt::xtensor<S, 3>& dx,
                    BlockWeights<S>& grads);

// ---- The language model (chapter 07; its backward, chapter 08) ------------------------------
//   x = wte[tokens] (+ wpe[0..T) with learned positions)      (B, T, C)
//   x = block_l(x) for l = 0..L-1, lm_block_config(config)    (B, T, C)
//   logits = norm_f(x) @ wte^T  (tied)  or  @ lm_head + b     (B, T, V)
template <class S>
xt::xtensor<S, 3> lm_forward(const xt::xtensor<int, 2>& tokens, const LmWeights<S>& w,
                             const ModelSpec& config);
// The mean cross-entropy of the next-token predictions (tokens, targets (B, T)).
template <class S>
double lm_loss(const xt::xtensor<int, 2>& tokens, const xt::xtensor<int, 2>& targets,
               const LmWeights<S>& w, const ModelSpec& config);
// The loss, and dloss/dparameter ADDED into grads (shaped like w: zeros_like).
template <class S>
double lm_forward_backward(const xt::xtensor<int, 2>& tokens, const xt::xtensor<int, 2>& targets,
                           const LmWeights<S>& w, const ModelSpec& config, LmWeights<S>& grads);

// ---- The KV-cache step (chapter 10; the window and RoPE of chapter 11) ------------------------
// One sequence. Each layer keeps the keys (RoPE applied) and values of every position seen.
template <class S>
struct KvCache {
  std::size_t length = 0;                       // positions seen: the next token's position
  std::vector<xt::xtensor<S, 3>> keys, values;  // L x (KV, length, hs)
};
// The token at position n = cache.length: at every layer its q, k, v; k and v appended; q
// attends to the keys n-W+1..n (all of 0..n without a window). Returns the logits (V,) that
// predict position n + 1: the last row of lm_forward over the n + 1 tokens seen.
template <class S>
xt::xtensor<S, 1> lm_step(KvCache<S>& cache, int token, const LmWeights<S>& w,
                          const ModelSpec& config);

}  // namespace attn::ref
