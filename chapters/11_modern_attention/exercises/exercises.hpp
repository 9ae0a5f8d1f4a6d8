// chapters/11_modern_attention/exercises/exercises.hpp: the exercises of chapter 11, modern
// attention. Each function mirrors a piece of attn/ops/ (rope.hpp, rmsnorm.hpp, gqa.hpp,
// swa.hpp, swiglu.hpp) and is written in its own file beside this one. Check them with
// `build/default/bin/attn-check 11`.
#pragma once

#include <cstddef>
#include <vector>

#include "attn/core/xt.hpp"
#include "attn/ops/rmsnorm.hpp"
#include "attn/ops/swa.hpp"
#include "attn/ops/swiglu.hpp"

namespace ex11 {

// ex11.1, ex11_1_rope.cpp: rotary position embeddings in the paper's interleaved layout, like
// attn::rope: x (B, H, T, hs) -> y (B, H, T, hs), pair (2i, 2i+1) of row t rotated by the angle
// (offset + t) * theta^(-2i / hs). Throws std::invalid_argument for an odd or zero hs, or theta
// not > 0.
attn::Tensor<4> rope(const attn::Tensor<4>& x, double theta, std::size_t offset);

// ex11.2, ex11_2_rms_norm.cpp: RMSNorm, like attn::rms_norm: x (B, T, C), gamma (C,) ->
// y (B, T, C), y = x / sqrt(mean(x^2) + eps) * gamma per token. Throws std::invalid_argument when
// gamma is not (C,).
attn::Tensor<3> rms_norm(const attn::Tensor<3>& x, const attn::Vector& gamma, double eps);

// ex11.5, ex11_5_rms_norm_backward.cpp: RMSNorm's backward, like attn::rms_norm_backward: given
// dy = dL/dy (B, T, C) for y = rms_norm(x, gamma, eps), return dx (B, T, C) and dgamma (C,).
// Throws std::invalid_argument when dy and x differ in shape or gamma is not (C,).
attn::RmsNormGrads<float, 3> rms_norm_backward(const attn::Tensor<3>& dy, const attn::Tensor<3>& x,
                                               const attn::Vector& gamma, double eps);

// ex11.3, ex11_3_repeat_kv.cpp: the head mapping of grouped-query attention, like
// attn::repeat_kv: kv (B, KV, T, hs) -> (B, H, T, hs), each query head a copy of the K/V head
// of its group (groups of neighbouring query heads). Throws std::invalid_argument when KV does
// not divide n_heads.
attn::Tensor<4> repeat_kv(const attn::Tensor<4>& kv, std::size_t n_heads);

// ex11.4, ex11_4_sliding_window.cpp: sliding-window attention, like
// attn::sliding_window_attention: q, k, v (B, H, T, hs) -> out (B, H, T, hs) and weights
// (B, H, T, T); query t attends to keys max(0, t - W + 1) .. t, weight exactly 0 elsewhere.
// Throws std::invalid_argument for window 0 or shapes that disagree.
attn::WindowAttention<float> sliding_window_attention(const attn::Tensor<4>& q,
                                                      const attn::Tensor<4>& k,
                                                      const attn::Tensor<4>& v, std::size_t window);

// ex11.6, ex11_6_sum_kv_groups.cpp: repeat_kv's backward, like attn::sum_kv_groups:
// d (B, H, T, hs), the gradient of the query heads' copies -> dkv (B, KV, T, hs), the gradient
// of the K/V heads. Throws std::invalid_argument when KV is 0 or does not divide H.
attn::Tensor<4> sum_kv_groups(const attn::Tensor<4>& d, std::size_t n_kv_heads);

// ex11.7, ex11_7_alibi_bias.cpp: ALiBi's bias, like attn::alibi_bias: (H, T, T), the score
// penalty -m_h (t - s) of head h, query t, key s, with the paper's slopes m_h. Throws
// std::invalid_argument for n_heads 0.
attn::Tensor<3> alibi_bias(std::size_t n_heads, std::size_t T);

// ex11.8, ex11_8_rolling_slots.cpp: the slots of a rolling cache of `capacity` positions (position
// p in slot p % capacity) that hold the visible positions after `length` were written, oldest
// first. Throws std::invalid_argument for capacity 0.
std::vector<std::size_t> rolling_slots(std::size_t length, std::size_t capacity);

// ex11.9, ex11_9_rope_rotate_half.cpp: RoPE in the rotate-half layout of GPT-NeoX and Hugging
// Face, like attn::rope with attn::RopeLayout::rotate_half: the rotation of ex11.1 on features
// stored evens first, odds after, x (B, H, T, hs) -> y (B, H, T, hs). Throws
// std::invalid_argument for an odd or zero hs, or theta not > 0.
attn::Tensor<4> rope_rotate_half(const attn::Tensor<4>& x, double theta, std::size_t offset);

// ex11.10, ex11_10_swiglu.cpp: the SwiGLU feed-forward network, like attn::swiglu_forward:
// x (B, T, C) -> y (B, T, C) through w_gate, w_up (C, F) and w_down (F, C), no biases. Throws
// std::invalid_argument when a weight's shape disagrees with x and w_gate.
attn::Tensor<3> swiglu(const attn::Tensor<3>& x, const attn::SwigluWeights<float>& w);

}  // namespace ex11
