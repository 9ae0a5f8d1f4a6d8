// attn/ops/ffn.hpp: the position-wise feed-forward network and its activations (chapter 06).
//   FFN(x) = act(x @ w1 + b1) @ w2 + b2,   w1 (C, F), b1 (F,), w2 (F, C), b2 (C,), F = 4C usually
// These are the reference versions (plain loops, the activations as double-precision formulas);
// the model's fast path uses attn::fast:: (attn/fast/ffn.hpp), tested equal to these.
// Activations: ReLU max(0, x); GELU exact x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) (the default,
// like PyTorch's nn.GELU()); GELU tanh approximation
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (nn.GELU(approximate="tanh")).
#pragma once

#include <concepts>
#include <cstddef>
#include <span>
#include <string_view>

#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"

namespace attn {

enum class Activation { relu, gelu, gelu_tanh };

// "relu", "gelu", "gelu_tanh" <-> Activation. parse throws std::invalid_argument listing the
// accepted names.
Activation parse_activation(std::string_view name);
std::string_view activation_name(Activation a);

// In place over a buffer, and as a new tensor.
void activate(std::span<float> values, Activation a);
template <std::size_t N>
Tensor<N> activate(const Tensor<N>& x, Activation a);
extern template Tensor<1> activate<1>(const Tensor<1>&, Activation);
extern template Tensor<2> activate<2>(const Tensor<2>&, Activation);
extern template Tensor<3> activate<3>(const Tensor<3>&, Activation);

template <class Real>
struct FfnWeightsOf {
  xt::xtensor<Real, 2> w1;  // (C, F)
  xt::xtensor<Real, 1> b1;  // (F,)
  xt::xtensor<Real, 2> w2;  // (F, C)
  xt::xtensor<Real, 1> b2;  // (C,)
};
using FfnWeights = FfnWeightsOf<float>;
using FfnWeights64 = FfnWeightsOf<double>;
// Normal(0, std) matrices, zero biases.
FfnWeights ffn_init(Rng& rng, std::size_t C, std::size_t F, float std = 0.02f);

// x (B, T, C) -> (B, T, C). Throws std::invalid_argument naming mismatched shapes.
Tensor<3> ffn_forward(const Tensor<3>& x, const FfnWeights& w, Activation a = Activation::gelu);

// ---- Backward (chapter 08) ----
// dx = dy * act'(x), x the pre-activation: ReLU' = [x > 0]; exact GELU' = Phi(x) + x phi(x);
// tanh GELU' from u = sqrt(2/pi) (x + 0.044715 x^3): 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) u'.
void activate_backward(std::span<const float> x, std::span<const float> dy, std::span<float> dx,
                       Activation a);
template <std::size_t N>
Tensor<N> activate_backward(const Tensor<N>& x, const Tensor<N>& dy, Activation a);

// What ffn_forward keeps for its backward (the fast side, attn/fast/ffn.hpp, fills the same).
template <class Real>
struct FfnCacheOf {
  xt::xtensor<Real, 3> x;    // (B, T, C) the input
  xt::xtensor<Real, 3> pre;  // (B, T, F) x @ w1 + b1, before the activation
  xt::xtensor<Real, 3> act;  // (B, T, F) act(pre)
};
using FfnCache = FfnCacheOf<float>;
using FfnCache64 = FfnCacheOf<double>;
// The forward that fills `cache` (same output as ffn_forward).
Tensor<3> ffn_forward(const Tensor<3>& x, const FfnWeights& w, Activation a, FfnCache& cache);
// dy (B, T, C) -> dx (B, T, C) (overwritten); grads.w1, b1, w2, b2 accumulate (+=).
void ffn_backward(const Tensor<3>& dy, const FfnCache& cache, const FfnWeights& w, Activation a,
                  Tensor<3>& dx, FfnWeights& grads);

// The float64 twins, for the gradient checks of chapter 08 (attn::check_gradients): the same
// code instantiated on double. (Constrained to double, so a float call never picks them.)
void activate(std::span<double> values, Activation a);
void activate_backward(std::span<const double> x, std::span<const double> dy, std::span<double> dx,
                       Activation a);
template <std::size_t N, std::same_as<double> Real>
xt::xtensor<Real, N> activate(const xt::xtensor<Real, N>& x, Activation a);
template <std::size_t N, std::same_as<double> Real>
xt::xtensor<Real, N> activate_backward(const xt::xtensor<Real, N>& x,
                                       const xt::xtensor<Real, N>& dy, Activation a);
template <std::same_as<double> Real>
xt::xtensor<Real, 3> ffn_forward(const xt::xtensor<Real, 3>& x, const FfnWeightsOf<Real>& w,
                                 Activation a = Activation::gelu);
template <std::same_as<double> Real>
xt::xtensor<Real, 3> ffn_forward(const xt::xtensor<Real, 3>& x, const FfnWeightsOf<Real>& w,
                                 Activation a, FfnCacheOf<Real>& cache);
template <std::same_as<double> Real>
void ffn_backward(const xt::xtensor<Real, 3>& dy, const FfnCacheOf<Real>& cache,
                  const FfnWeightsOf<Real>& w, Activation a, xt::xtensor<Real, 3>& dx,
                  FfnWeightsOf<Real>& grads);
extern template Tensor64<3> activate<3, double>(const Tensor64<3>&, Activation);
extern template Tensor64<3> activate_backward<3, double>(const Tensor64<3>&, const Tensor64<3>&,
                                                         Activation);
extern template Tensor64<3> ffn_forward<double>(const Tensor64<3>&, const FfnWeights64&,
                                                Activation);
extern template Tensor64<3> ffn_forward<double>(const Tensor64<3>&, const FfnWeights64&, Activation,
                                                FfnCache64&);
extern template void ffn_backward<double>(const Tensor64<3>&, const FfnCache64&,
                                          const FfnWeights64&, Activation, Tensor64<3>&,
                                          FfnWeights64&);

}  // namespace attn
