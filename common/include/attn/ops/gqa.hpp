// attn/ops/gqa.hpp: grouped-query attention (chapter 11; Ainslie et al. 2023; Llama 2 70B, Llama
// 3, Mistral), the reference, forward beside backward. Multi-head attention where the H query
// heads share n_kv_heads = KV key/value heads: query head h reads K/V head h / (H / KV). The KV
// cache shrinks by H / KV; KV = H is chapter 05's multi-head attention, KV = 1 is multi-query
// attention (Shazeer 2019). Optionally RoPE on q and k, and a sliding window.
//   q = x @ w_q (B, T, C) -> (B, H, T, hs);  k = x @ w_k, v = x @ w_v (B, T, KV*hs) -> (B, KV, T,
//   hs) q, k = rope(q), rope(k)                 (positions 0 .. T-1, when config.rope) head h:
//   attention(q_h, k_g, v_g) with g = h / (H / KV), causal and windowed as configured merge the H
//   heads, @ w_o               (B, T, C)
// Templated on the scalar: float for the model, double for the gradient checks; sums in double.
#pragma once

#include <cstddef>
#include <optional>

#include "attn/core/xt.hpp"
#include "attn/ops/attention.hpp"
#include "attn/ops/attention_ref.hpp"

namespace attn {

// Multi-head attention's four matrices (attn/ops/attention.hpp), with w_k and w_v narrowed to
// the KV heads: w_q, w_o (C, C); w_k, w_v (C, KV * hs).
template <class S>
using GqaWeights = MhaWeightsOf<S>;

struct GqaConfig {
  std::size_t n_heads = 4;     // query heads H; divides C
  std::size_t n_kv_heads = 4;  // key/value heads KV, divides H: 1 (MQA) .. H (MHA, the default)
  bool causal = true;          // query t sees keys 0..t only
  bool rope = false;           // rotate q and k by their positions (attn/ops/rope.hpp)
  double theta = 10000.0;      // RoPE's base, when rope
  std::optional<std::size_t> window;  // sliding window W (needs causal); none: every key
  ScoreParts score;  // the score-level parts (attn/ops/attention_ref.hpp); none by default
};

template <class S>
struct GqaResult {
  xt::xtensor<S, 3> out;      // (B, T, C)
  xt::xtensor<S, 4> weights;  // (B, H, T, T) the attention probabilities P (PyTorch's name)
};

// What the forward keeps for the backward.
template <class S>
struct GqaCache {
  xt::xtensor<S, 3> x;        // (B, T, C)
  xt::xtensor<S, 4> q;        // (B, H, T, hs)  after RoPE
  xt::xtensor<S, 4> k, v;     // (B, KV, T, hs) after RoPE (k)
  xt::xtensor<S, 4> weights;  // (B, H, T, T) the attention probabilities P
  xt::xtensor<S, 3> heads;    // (B, T, C)      merged head outputs, the input of w_o
};

// x (B, T, C) -> out (B, T, C), probs (B, H, T, T). Throws std::invalid_argument with one line
// naming what is wrong: n_heads not dividing C, n_kv_heads not dividing n_heads ("attn::gqa:
// n_kv_heads = 3 does not divide n_heads = 4"), a weight of the wrong shape, an odd head size
// with rope, theta <= 0, a window without causal.
template <class S>
GqaResult<S> gqa_forward(const xt::xtensor<S, 3>& x, const GqaWeights<S>& w,
                         const GqaConfig& config);
template <class S>
xt::xtensor<S, 3> gqa_forward(const xt::xtensor<S, 3>& x, const GqaWeights<S>& w,
                              const GqaConfig& config, GqaCache<S>& cache);

// Backward, the forward's steps in reverse. dout (B, T, C) -> dx (B, T, C) (overwritten);
// grads accumulate (+=). K/V head g was read by the H / KV query heads of its group, so its
// gradient is the sum of theirs; RoPE's backward rotates dq and dk back.
template <class S>
void gqa_backward(const xt::xtensor<S, 3>& dout, const GqaCache<S>& cache, const GqaWeights<S>& w,
                  const GqaConfig& config, xt::xtensor<S, 3>& dx, GqaWeights<S>& grads);

// The two steps that make attention grouped, exposed for the page and the tests:
// (B, KV, T, hs) -> (B, H, T, hs), head h a copy of K/V head h / (H / KV) ...
template <class S>
xt::xtensor<S, 4> repeat_kv(const xt::xtensor<S, 4>& kv, std::size_t n_heads);
// ... and its backward: (B, H, T, hs) -> (B, KV, T, hs), the sum over each group's query heads.
template <class S>
xt::xtensor<S, 4> sum_kv_groups(const xt::xtensor<S, 4>& d, std::size_t n_kv_heads);

}  // namespace attn
