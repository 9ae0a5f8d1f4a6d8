// attn/ops/rope.hpp: rotary position embeddings, RoPE (chapter 11): the reference, forward beside
// backward. Instead of adding a position vector to the token, RoPE rotates q and k inside each
// head by an angle that grows with the position, so q . k depends on the two positions only
// through their difference (RoFormer, Su et al. 2021; used by Llama, Mistral, Qwen, Gemma).
//   x (B, H, T, hs), hs even. For each pair i = 0 .. hs/2 - 1 of a head and position p = offset +
//   t:
//     angle = p * theta^(-2i / hs)
//     (y[2i], y[2i+1]) = (x[2i] cos(angle) - x[2i+1] sin(angle), x[2i] sin(angle) + x[2i+1]
//     cos(angle))
// That is the paper's "interleaved" layout (pairs of neighbours). GPT-NeoX and Hugging Face pair
// feature i with feature i + hs/2 instead ("rotate-half"); the two are the same rotation after
// the permutation rope_to_half_layout. Templated on the scalar: float for the model, double for
// the gradient checks. Angles are computed in double and rounded once.
#pragma once

#include <cstddef>
#include <vector>

#include "attn/core/xt.hpp"

namespace attn {

enum class RopeLayout {
  interleaved,  // pairs (x[2i], x[2i+1]): the paper, Meta's Llama
  rotate_half,  // pairs (x[i], x[i + hs/2]): GPT-NeoX, Hugging Face
};

// x (B, H, T, hs) -> y (B, H, T, hs), position of row t = offset + t. Throws std::invalid_argument
// when hs is odd or 0 ("attn::rope: head size hs = 5 is odd, ...") or theta is not a finite number
// > 0.
template <class S>
xt::xtensor<S, 4> rope(const xt::xtensor<S, 4>& x, double theta = 10000.0, std::size_t offset = 0,
                       RopeLayout layout = RopeLayout::interleaved);

// Backward: y = R x with R a rotation (orthogonal), so dx = R^T dy, the rotation by -angle.
// dy (B, H, T, hs) -> dx (B, H, T, hs).
template <class S>
xt::xtensor<S, 4> rope_backward(const xt::xtensor<S, 4>& dy, double theta = 10000.0,
                                std::size_t offset = 0,
                                RopeLayout layout = RopeLayout::interleaved);

// The angle step of pair i: theta^(-2i / hs), i = 0 .. hs/2 - 1 (pair 0 turns fastest, 1 radian
// per position; the last pair slowest).
std::vector<double> rope_frequencies(std::size_t hs, double theta);

// The permutation from the interleaved layout to the rotate-half one: feature perm[j] of the
// interleaved head goes to place j, perm = (0, 2, 4, ..., hs - 2, 1, 3, ..., hs - 1). With P
// this permutation, rope(P x, rotate_half) = P rope(x, interleaved): the same model, weights
// with their columns reordered (how Llama checkpoints are converted for Hugging Face).
std::vector<std::size_t> rope_half_permutation(std::size_t hs);
// x (B, H, T, hs) in the interleaved layout -> the same features in the rotate-half layout, and
// back.
template <class S>
xt::xtensor<S, 4> rope_to_half_layout(const xt::xtensor<S, 4>& x);
template <class S>
xt::xtensor<S, 4> rope_from_half_layout(const xt::xtensor<S, 4>& x);

}  // namespace attn
