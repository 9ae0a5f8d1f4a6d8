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
template <std::size_t R>
void check_shape(std::string_view function, std::string_view name, const Tensor<R>& t,
                 const std::array<std::size_t, R>& want) {
  if (t.shape() != want) {
    require(false, function, [&] {
      return std::string(name) + " is " + shape_str(t.shape()) + ", expected " + shape_str(want);
    });
  }
}

// w1 (C, F), b1 (F,), w2 (F, C), b2 (C,) for x (B, T, C).
void check_ffn(const char* function, const Tensor<3>& x, const FfnWeights& w) {
  const std::size_t C = x.shape()[2];
  const std::size_t F = w.w1.shape()[1];
  check_shape<2>(function, "w1", w.w1, {C, F});
  check_shape<1>(function, "b1", w.b1, {F});
  check_shape<2>(function, "w2", w.w2, {F, C});
  check_shape<1>(function, "b2", w.b2, {C});
}

}  // namespace

void activate(std::span<float> values, Activation a) {
  for (float& v : values) v = static_cast<float>(activation(a, static_cast<double>(v)));
}

template <std::size_t N>
Tensor<N> activate(const Tensor<N>& x, Activation a) {
  Tensor<N> y = x;  // same shape, contiguous row-major
  activate(std::span<float>(y.data(), y.size()), a);
  return y;
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

Tensor<3> ffn_forward(const Tensor<3>& x, const FfnWeights& w, Activation a) {
  FfnCache cache;
  return ffn_forward(x, w, a, cache);
}

Tensor<3> ffn_forward(const Tensor<3>& x, const FfnWeights& w, Activation a, FfnCache& cache) {
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

// ---- Backward (chapter 08) ----

void activate_backward(std::span<const float> x, std::span<const float> dy, std::span<float> dx,
                       Activation a) {
  require(x.size() == dy.size() && x.size() == dx.size(), "attn::activate_backward", [&] {
    return "x, dy and dx must have the same size, got " + std::to_string(x.size()) + ", " +
           std::to_string(dy.size()) + " and " + std::to_string(dx.size());
  });
  // dx_i = dy_i act'(x_i): the activation acts on each value on its own, so its Jacobian is
  // diagonal.
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double grad = activation_grad(a, static_cast<double>(x[i]));
    dx[i] = static_cast<float>(static_cast<double>(dy[i]) * grad);
  }
}

template <std::size_t N>
Tensor<N> activate_backward(const Tensor<N>& x, const Tensor<N>& dy, Activation a) {
  if (x.shape() != dy.shape()) {
    shape_error("attn::activate_backward", "dy of the same shape as x " + shape_str(x.shape()),
                "dy " + shape_str(dy.shape()));
  }
  Tensor<N> dx(x.shape());
  activate_backward(std::span<const float>(x.data(), x.size()),
                    std::span<const float>(dy.data(), dy.size()),
                    std::span<float>(dx.data(), dx.size()), a);
  return dx;
}

template Tensor<1> activate_backward<1>(const Tensor<1>&, const Tensor<1>&, Activation);
template Tensor<2> activate_backward<2>(const Tensor<2>&, const Tensor<2>&, Activation);
template Tensor<3> activate_backward<3>(const Tensor<3>&, const Tensor<3>&, Activation);

void ffn_backward(const Tensor<3>& dy, const FfnCache& cache, const FfnWeights& w, Activation a,
                  Tensor<3>& dx, FfnWeights& grads) {
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
  // The forward in reverse, one linear layer at a time (attn::linear_backward).
  // 1. Through y = act @ w2 + b2: dact = dy @ w2^T (B, T, F); dw2 += act^T @ dy; db2 += sum dy.
  Tensor<3> dact;
  linear_backward(dy, cache.act, w.w2, dact, grads.w2, &grads.b2);
  // 2. Through the activation, element by element: dpre = dact * act'(pre) (B, T, F).
  const Tensor<3> dpre = activate_backward<3>(cache.pre, dact, a);
  // 3. Through pre = x @ w1 + b1: dx = dpre @ w1^T (B, T, C); dw1 += x^T @ dpre; db1 += sum dpre.
  linear_backward(dpre, cache.x, w.w1, dx, grads.w1, &grads.b1);
}

}  // namespace attn
