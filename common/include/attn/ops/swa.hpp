// attn/ops/swa.hpp: sliding-window attention (chapter 11; Longformer, Mistral 7B), the reference,
// forward beside backward. Causal attention where query t sees only the last W keys:
//   keys max(0, t - W + 1) .. t
// so a layer costs O(T W) instead of O(T^2), and a cache of W positions is exact at generation
// (information from further back still flows in, W positions per layer, through the stack).
// W >= T is plain causal attention. Shapes as chapter 04's:
//   q, k, v (B, H, T, hs) -> out (B, H, T, hs), probs (B, H, T, T) (0 outside the window).
// Templated on the scalar: float for the model, double for the gradient checks; sums in double.
#pragma once

#include <cstddef>

#include "attn/core/xt.hpp"

namespace attn {

template <class S>
struct WindowAttention {
  xt::xtensor<S, 4> out;      // (B, H, T, hs)
  xt::xtensor<S, 4> weights;  // (B, H, T, T) the attention probabilities P (PyTorch's name)
};

template <class S>
struct WindowAttentionGrads {
  xt::xtensor<S, 4> dq, dk, dv;  // (B, H, T, hs) each
};

// Query t attends to keys max(0, t - window + 1) .. t. Throws std::invalid_argument when window
// is 0 ("attn::sliding_window_attention: window must be at least 1 ...") or the shapes disagree.
template <class S>
WindowAttention<S> sliding_window_attention(const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
                                            const xt::xtensor<S, 4>& v, std::size_t window);
// Backward, per (b, h), with P the probs (0 outside the window) and O = P V, as chapter 08's:
//   dV = P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(dP * P)),  dQ = dS K / sqrt(hs),
//   dK = dS^T Q / sqrt(hs).  Masked keys have P = 0, hence dS = 0: the window needs no other care.
template <class S>
WindowAttentionGrads<S> sliding_window_attention_backward(
    const xt::xtensor<S, 4>& dout, const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
    const xt::xtensor<S, 4>& v, const xt::xtensor<S, 4>& probs, std::size_t window);

// The general mask behind both, also what grouped-query attention uses: causal or not, and a
// window (0 = none; a window needs causal). Query t may see key s when
//   (!causal or s <= t) and (window == 0 or s + window > t).
template <class S>
WindowAttention<S> windowed_attention(const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
                                      const xt::xtensor<S, 4>& v, bool causal, std::size_t window);
template <class S>
WindowAttentionGrads<S> windowed_attention_backward(
    const xt::xtensor<S, 4>& dout, const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
    const xt::xtensor<S, 4>& v, const xt::xtensor<S, 4>& probs, bool causal, std::size_t window);

}  // namespace attn
