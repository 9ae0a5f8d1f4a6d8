// ffn.cpp: the position-wise feed-forward network and its activations, the reference (chapters
// 06 and 08). FFN(x) = act(x @ w1 + b1) @ w2 + b2: two linear layers around an element-wise
// activation, applied to every token on its own. The activations are their formulas evaluated in
// double; the model's fast path (common/src/fast/ffn.cpp) uses vector kernels tested against them.
#include "attn/ops/ffn.hpp"

#include <array>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "attn/core/check.hpp"
#include "attn/ops/linear.hpp"

namespace attn {

Activation parse_activation(std::string_view name) {
  if (name == "relu") return Activation::relu;
  if (name == "gelu") return Activation::gelu;
  if (name == "gelu_tanh") return Activation::gelu_tanh;
  throw std::invalid_argument("unknown activation '" + std::string(name) +
                              "': expected relu, gelu or gelu_tanh");
}

std::string_view activation_name(Activation a) {
  switch (a) {
    case Activation::relu:
      return "relu";
    case Activation::gelu:
      return "gelu";
    case Activation::gelu_tanh:
      return "gelu_tanh";
  }
  return "unknown";
}

namespace {

// sqrt(2 / pi), the scale of the tanh approximation's argument.
constexpr double kSqrt2OverPi = 0.79788456080286535588;

// act(x) in double. The infinities are taken as limits (GELU(-inf) = 0, not -inf * 0 = NaN);
// NaN stays NaN.
double activation(Activation a, double x) {
  switch (a) {
    case Activation::relu:
      return x < 0.0 ? 0.0 : x;  // max(0, x), written so that NaN stays NaN
    case Activation::gelu:
      if (std::isinf(x)) return x > 0.0 ? x : 0.0;
      // x Phi(x), Phi the standard normal CDF = 0.5 (1 + erf(x / sqrt 2)). Written with
      // erfc(-x / sqrt 2) = 1 + erf(x / sqrt 2) so the negative tail keeps its relative accuracy.
      return 0.5 * x * std::erfc(-x / std::numbers::sqrt2);
    case Activation::gelu_tanh: {
      if (std::isinf(x)) return x > 0.0 ? x : 0.0;
      // 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
      const double u = kSqrt2OverPi * (x + 0.044715 * x * x * x);
      return 0.5 * x * (1.0 + std::tanh(u));
    }
  }
  throw std::invalid_argument("attn::activate: unknown activation");
}

// act'(x) in double (chapter 08), the limits at the infinities, NaN for NaN.
double activation_grad(Activation a, double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return x > 0.0 ? 1.0 : 0.0;
  switch (a) {
    case Activation::relu:
      return x > 0.0 ? 1.0 : 0.0;  // 0 at x = 0, like PyTorch
    case Activation::gelu: {
      // d/dx [x Phi(x)] = Phi(x) + x phi(x),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
      const double cdf = 0.5 * std::erfc(-x / std::numbers::sqrt2);
      const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
      return cdf + x * pdf;
    }
    case Activation::gelu_tanh: {
      // d/dx [0.5 x (1 + tanh u)] = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) u',
      // u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
      const double th = std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x));
      const double du = kSqrt2OverPi * (1.0 + 3.0 * 0.044715 * x * x);
      return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * du;
    }
  }
  throw std::invalid_argument("attn::activate_backward: unknown activation");
}

// "w2 is (32, 7), expected (32, 8)" when a weight does not have its shape.
template <std::size_t R, class Real>
void check_shape(std::string_view function, std::string_view name, const xt::xtensor<Real, R>& t,
                 const std::array<std::size_t, R>& want) {
  if (t.shape() != want) {
    require(false, function, [&] {
      return std::string(name) + " is " + shape_str(t.shape()) + ", expected " + shape_str(want);
    });
  }
}

// w1 (C, F), b1 (F,), w2 (F, C), b2 (C,) for x (B, T, C).
template <class Real>
void check_ffn(const char* function, const xt::xtensor<Real, 3>& x, const FfnWeightsOf<Real>& w) {
  const std::size_t C = x.shape()[2];
  const std::size_t F = w.w1.shape()[1];
  check_shape<2>(function, "w1", w.w1, {C, F});
  check_shape<1>(function, "b1", w.b1, {F});
  check_shape<2>(function, "w2", w.w2, {F, C});
  check_shape<1>(function, "b2", w.b2, {C});
}

// The bodies below are on float or double (Real): the float64 twins, the same code on double,
// serve the gradient checks of chapter 08.
template <class Real>
void activate_of(std::span<Real> values, Activation a) {
  for (Real& v : values) v = static_cast<Real>(activation(a, static_cast<double>(v)));
}

template <std::size_t N, class Real>
xt::xtensor<Real, N> activate_of(const xt::xtensor<Real, N>& x, Activation a) {
  xt::xtensor<Real, N> y = x;  // same shape, contiguous row-major
  activate_of(std::span<Real>(y.data(), y.size()), a);
  return y;
}

}  // namespace

void activate(std::span<float> values, Activation a) { activate_of(values, a); }
void activate(std::span<double> values, Activation a) { activate_of(values, a); }

template <std::size_t N>
Tensor<N> activate(const Tensor<N>& x, Activation a) {
  return activate_of<N>(x, a);
}
template <std::size_t N, std::same_as<double> Real>
xt::xtensor<Real, N> activate(const xt::xtensor<Real, N>& x, Activation a) {
  return activate_of<N>(x, a);
}

template Tensor<1> activate<1>(const Tensor<1>&, Activation);
template Tensor<2> activate<2>(const Tensor<2>&, Activation);
template Tensor<3> activate<3>(const Tensor<3>&, Activation);

FfnWeights ffn_init(Rng& rng, std::size_t C, std::size_t F, float std_dev) {
  FfnWeights w;
  w.w1 = randn(rng, C, F, std_dev);  // (C, F)
  w.b1 = xt::zeros<float>({F});      // (F,)
  w.w2 = randn(rng, F, C, std_dev);  // (F, C)
  w.b2 = xt::zeros<float>({C});      // (C,)
  return w;
}

namespace {

template <class Real>
xt::xtensor<Real, 3> ffn_forward_of(const xt::xtensor<Real, 3>& x, const FfnWeightsOf<Real>& w,
                                    Activation a, FfnCacheOf<Real>& cache) {
  check_ffn("attn::ffn_forward", x, w);
  cache.x = x;  // (B, T, C), kept for dW1
  // 1. Expand every token to F (usually 4C) features: (B, T, C) @ (C, F) + (F,) -> (B, T, F)
  cache.pre = linear(x, w.w1, w.b1);
  // 2. The non-linearity, element by element. Without it the two products would collapse into
  //    a single (C, C) matrix and the FFN could only compute linear maps. (B, T, F)
  cache.act = activate<3>(cache.pre, a);
  // 3. Project back to the model width: (B, T, F) @ (F, C) + (C,) -> (B, T, C)
  return linear(cache.act, w.w2, w.b2);
}

}  // namespace

Tensor<3> ffn_forward(const Tensor<3>& x, const FfnWeights& w, Activation a) {
  FfnCache cache;
  return ffn_forward_of(x, w, a, cache);
}
Tensor<3> ffn_forward(const Tensor<3>& x, const FfnWeights& w, Activation a, FfnCache& cache) {
  return ffn_forward_of(x, w, a, cache);
}
template <std::same_as<double> Real>
xt::xtensor<Real, 3> ffn_forward(const xt::xtensor<Real, 3>& x, const FfnWeightsOf<Real>& w,
                                 Activation a) {
  FfnCacheOf<Real> cache;
  return ffn_forward_of(x, w, a, cache);
}
template <std::same_as<double> Real>
xt::xtensor<Real, 3> ffn_forward(const xt::xtensor<Real, 3>& x, const FfnWeightsOf<Real>& w,
                                 Activation a, FfnCacheOf<Real>& cache) {
  return ffn_forward_of(x, w, a, cache);
}

// ---- Backward (chapter 08) ----

namespace {

template <class Real>
void activate_backward_of(std::span<const Real> x, std::span<const Real> dy, std::span<Real> dx,
                          Activation a) {
  require(x.size() == dy.size() && x.size() == dx.size(), "attn::activate_backward", [&] {
    return "x, dy and dx must have the same size, got " + std::to_string(x.size()) + ", " +
           std::to_string(dy.size()) + " and " + std::to_string(dx.size());
  });
  // dx_i = dy_i act'(x_i): the activation acts on each value on its own, so its Jacobian is
  // diagonal.
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double grad = activation_grad(a, static_cast<double>(x[i]));
    dx[i] = static_cast<Real>(static_cast<double>(dy[i]) * grad);
  }
}

template <std::size_t N, class Real>
xt::xtensor<Real, N> activate_backward_of(const xt::xtensor<Real, N>& x,
                                          const xt::xtensor<Real, N>& dy, Activation a) {
  if (x.shape() != dy.shape()) {
    shape_error("attn::activate_backward", "dy of the same shape as x " + shape_str(x.shape()),
                "dy " + shape_str(dy.shape()));
  }
  xt::xtensor<Real, N> dx(x.shape());
  activate_backward_of(std::span<const Real>(x.data(), x.size()),
                       std::span<const Real>(dy.data(), dy.size()),
                       std::span<Real>(dx.data(), dx.size()), a);
  return dx;
}

}  // namespace

void activate_backward(std::span<const float> x, std::span<const float> dy, std::span<float> dx,
                       Activation a) {
  activate_backward_of(x, dy, dx, a);
}
void activate_backward(std::span<const double> x, std::span<const double> dy, std::span<double> dx,
                       Activation a) {
  activate_backward_of(x, dy, dx, a);
}
template <std::size_t N>
Tensor<N> activate_backward(const Tensor<N>& x, const Tensor<N>& dy, Activation a) {
  return activate_backward_of<N>(x, dy, a);
}
template <std::size_t N, std::same_as<double> Real>
xt::xtensor<Real, N> activate_backward(const xt::xtensor<Real, N>& x,
                                       const xt::xtensor<Real, N>& dy, Activation a) {
  return activate_backward_of<N>(x, dy, a);
}

template Tensor<1> activate_backward<1>(const Tensor<1>&, const Tensor<1>&, Activation);
template Tensor<2> activate_backward<2>(const Tensor<2>&, const Tensor<2>&, Activation);
template Tensor<3> activate_backward<3>(const Tensor<3>&, const Tensor<3>&, Activation);

namespace {

template <class Real>
void ffn_backward_of(const xt::xtensor<Real, 3>& dy, const FfnCacheOf<Real>& cache,
                     const FfnWeightsOf<Real>& w, Activation a, xt::xtensor<Real, 3>& dx,
                     FfnWeightsOf<Real>& grads) {
  constexpr const char* kFn = "attn::ffn_backward";
  check_ffn(kFn, cache.x, w);
  if (dy.shape() != cache.x.shape()) {
    shape_error(kFn, "dy of shape " + shape_str(cache.x.shape()) + " (like the forward's input)",
                "dy " + shape_str(dy.shape()));
  }
  check_shape<2>(kFn, "grads.w1", grads.w1, {w.w1.shape()[0], w.w1.shape()[1]});
  check_shape<1>(kFn, "grads.b1", grads.b1, {w.b1.shape()[0]});
  check_shape<2>(kFn, "grads.w2", grads.w2, {w.w2.shape()[0], w.w2.shape()[1]});
  check_shape<1>(kFn, "grads.b2", grads.b2, {w.b2.shape()[0]});
  // The cache must be this FFN's (read at w's width F), checked before anything is added.
  const std::size_t B = cache.x.shape()[0], T = cache.x.shape()[1], F = w.w1.shape()[1];
  check_shape<3>(kFn, "cache.pre", cache.pre, {B, T, F});
  check_shape<3>(kFn, "cache.act", cache.act, {B, T, F});
  // The forward in reverse, one linear layer at a time (attn::linear_backward).
  // 1. Through y = act @ w2 + b2: dact = dy @ w2^T (B, T, F); dw2 += act^T @ dy; db2 += sum dy.
  xt::xtensor<Real, 3> dact;
  linear_backward(dy, cache.act, w.w2, dact, grads.w2, &grads.b2);
  // 2. Through the activation, element by element: dpre = dact * act'(pre) (B, T, F).
  const xt::xtensor<Real, 3> dpre = activate_backward<3>(cache.pre, dact, a);
  // 3. Through pre = x @ w1 + b1: dx = dpre @ w1^T (B, T, C); dw1 += x^T @ dpre; db1 += sum dpre.
  linear_backward(dpre, cache.x, w.w1, dx, grads.w1, &grads.b1);
}

}  // namespace

void ffn_backward(const Tensor<3>& dy, const FfnCache& cache, const FfnWeights& w, Activation a,
                  Tensor<3>& dx, FfnWeights& grads) {
  ffn_backward_of(dy, cache, w, a, dx, grads);
}
template <std::same_as<double> Real>
void ffn_backward(const xt::xtensor<Real, 3>& dy, const FfnCacheOf<Real>& cache,
                  const FfnWeightsOf<Real>& w, Activation a, xt::xtensor<Real, 3>& dx,
                  FfnWeightsOf<Real>& grads) {
  ffn_backward_of(dy, cache, w, a, dx, grads);
}

template Tensor64<3> activate<3, double>(const Tensor64<3>&, Activation);
template Tensor64<3> activate_backward<3, double>(const Tensor64<3>&, const Tensor64<3>&,
                                                  Activation);
template Tensor64<3> ffn_forward<double>(const Tensor64<3>&, const FfnWeights64&, Activation);
template Tensor64<3> ffn_forward<double>(const Tensor64<3>&, const FfnWeights64&, Activation,
                                         FfnCache64&);
template void ffn_backward<double>(const Tensor64<3>&, const FfnCache64&, const FfnWeights64&,
                                   Activation, Tensor64<3>&, FfnWeights64&);

}  // namespace attn
