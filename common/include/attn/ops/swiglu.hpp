// attn/ops/swiglu.hpp: the SwiGLU feed-forward network (chapter 11; Shazeer 2020, "GLU Variants
// Improve Transformer"; Llama, Mistral, Qwen), the reference, forward beside backward.
//   a = x @ w_gate,  u = x @ w_up          (B, T, F)
//   h = silu(a) * u                         (B, T, F)   silu(a) = a * sigmoid(a)
//   y = h @ w_down                          (B, T, C)
// No biases. One branch (silu(a)) decides how much of the other (u) passes: a learned gate. With
// three matrices instead of two, F = 2/3 * 4C keeps the parameter count of a 4C GELU FFN.
// Templated on the scalar: float for the model, double for the gradient checks; sums in double.
#pragma once

#include <cstddef>

#include "attn/core/xt.hpp"

namespace attn {

template <class S>
struct SwigluWeights {
  xt::xtensor<S, 2> w_gate;  // (C, F)
  xt::xtensor<S, 2> w_up;    // (C, F)
  xt::xtensor<S, 2> w_down;  // (F, C)
};

// What the forward keeps for the backward.
template <class S>
struct SwigluCache {
  xt::xtensor<S, 3> x;  // (B, T, C) the input
  xt::xtensor<S, 3> a;  // (B, T, F) x @ w_gate, before silu
  xt::xtensor<S, 3> u;  // (B, T, F) x @ w_up
  xt::xtensor<S, 3> h;  // (B, T, F) silu(a) * u, the input of w_down
};

// x (B, T, C) -> y (B, T, C). Throws std::invalid_argument naming a weight of the wrong shape
// ("attn::swiglu_forward: w_up is (8, 16), expected (8, 24)").
template <class S>
xt::xtensor<S, 3> swiglu_forward(const xt::xtensor<S, 3>& x, const SwigluWeights<S>& w);
template <class S>
xt::xtensor<S, 3> swiglu_forward(const xt::xtensor<S, 3>& x, const SwigluWeights<S>& w,
                                 SwigluCache<S>& cache);

// Backward, the forward's steps in reverse. dy (B, T, C) ->
//   dh = dy @ w_down^T,           dw_down += h^T dy
//   da = dh * u * silu'(a),       silu'(a) = sigmoid(a) (1 + a (1 - sigmoid(a)))
//   du = dh * silu(a)
//   dw_gate += x^T da,  dw_up += x^T du,  dx = da @ w_gate^T + du @ w_up^T
// dx is overwritten (resized); grads accumulate (+=) and must be shaped like the weights.
template <class S>
void swiglu_backward(const xt::xtensor<S, 3>& dy, const SwigluCache<S>& cache,
                     const SwigluWeights<S>& w, xt::xtensor<S, 3>& dx, SwigluWeights<S>& grads);

// silu(a) = a sigmoid(a) and its derivative, in double.
double silu(double a);
double silu_derivative(double a);

}  // namespace attn
