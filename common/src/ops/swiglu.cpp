// swiglu.cpp: the SwiGLU feed-forward network (chapter 11) and its backward: the reference, the
// page's equations in the page's order.
#include "attn/ops/swiglu.hpp"

#include <cmath>
#include <string>

#include "attn/core/check.hpp"
#include "linear_any.hpp"

namespace attn {

double silu(double a) { return a / (1.0 + std::exp(-a)); }

// d/da [a sigmoid(a)] = sigmoid(a) + a sigmoid(a) (1 - sigmoid(a)).
double silu_derivative(double a) {
  const double s = 1.0 / (1.0 + std::exp(-a));
  return s * (1.0 + a * (1.0 - s));
}

namespace {

// x (B, T, C), w_gate and w_up (C, F), w_down (F, C), F >= 1.
template <class S>
void check_swiglu(const char* fn, const xt::xtensor<S, 3>& x, const SwigluWeights<S>& w) {
  const std::size_t C = x.shape()[2], F = w.w_gate.shape()[1];
  require(C >= 1 && F >= 1, fn, [&] {
    return "x " + shape_str(x.shape()) + " and w_gate " + shape_str(w.w_gate.shape()) +
           ": C and F must be at least 1";
  });
  detail::check_weight_shape(fn, "w_gate", w.w_gate, C, F);
  detail::check_weight_shape(fn, "w_up", w.w_up, C, F);
  detail::check_weight_shape(fn, "w_down", w.w_down, F, C);
}

}  // namespace

template <class S>
xt::xtensor<S, 3> swiglu_forward(const xt::xtensor<S, 3>& x, const SwigluWeights<S>& w,
                                 SwigluCache<S>& cache) {
  check_swiglu<S>("attn::swiglu_forward", x, w);
  cache.x = x;
  // 1. Two projections of the same token: the gate's input and the value that is gated.
  //    (B, T, C) @ (C, F) -> (B, T, F), twice.
  cache.a = detail::project(x, w.w_gate);
  cache.u = detail::project(x, w.w_up);
  // 2. h = silu(a) * u, element by element: silu is a smooth ReLU that lets a little of the
  //    negatives through, and multiplying by u makes the unit's output bilinear in x.
  cache.h = xt::xtensor<S, 3>::from_shape(cache.a.shape());
  for (std::size_t i = 0; i < cache.h.size(); ++i)
    cache.h.data()[i] = static_cast<S>(silu(static_cast<double>(cache.a.data()[i])) *
                                       static_cast<double>(cache.u.data()[i]));
  // 3. Back to the model width: (B, T, F) @ (F, C) -> (B, T, C).
  return detail::project(cache.h, w.w_down);
}

template <class S>
xt::xtensor<S, 3> swiglu_forward(const xt::xtensor<S, 3>& x, const SwigluWeights<S>& w) {
  SwigluCache<S> unused;
  return swiglu_forward<S>(x, w, unused);
}

template <class S>
void swiglu_backward(const xt::xtensor<S, 3>& dy, const SwigluCache<S>& cache,
                     const SwigluWeights<S>& w, xt::xtensor<S, 3>& dx, SwigluWeights<S>& grads) {
  const char* fn = "attn::swiglu_backward";
  check_swiglu<S>(fn, cache.x, w);
  const std::size_t C = cache.x.shape()[2], F = w.w_gate.shape()[1];
  if (dy.shape() != cache.x.shape() || cache.h.shape()[2] != F ||
      cache.a.shape() != cache.h.shape() || cache.u.shape() != cache.h.shape()) {
    shape_error(fn, "dy " + shape_str(cache.x.shape()) + " and a cache from swiglu_forward",
                "dy " + shape_str(dy.shape()) + ", cache.h " + shape_str(cache.h.shape()));
  }
  detail::check_weight_shape(fn, "grads.w_gate", grads.w_gate, C, F);
  detail::check_weight_shape(fn, "grads.w_up", grads.w_up, C, F);
  detail::check_weight_shape(fn, "grads.w_down", grads.w_down, F, C);
  // 3. y = h @ w_down: dh = dy @ w_down^T (B, T, F), dw_down += h^T dy (F, C).
  xt::xtensor<S, 3> dh = xt::zeros<S>(cache.h.shape());
  detail::project_backward(dy, cache.h, w.w_down, dh, grads.w_down);
  // 2. h = silu(a) * u: the product rule sends dh to both factors.
  xt::xtensor<S, 3> da = xt::xtensor<S, 3>::from_shape(dh.shape());
  xt::xtensor<S, 3> du = xt::xtensor<S, 3>::from_shape(dh.shape());
  for (std::size_t i = 0; i < dh.size(); ++i) {
    const double a = static_cast<double>(cache.a.data()[i]);
    const double g = static_cast<double>(dh.data()[i]);
    da.data()[i] = static_cast<S>(g * static_cast<double>(cache.u.data()[i]) * silu_derivative(a));
    du.data()[i] = static_cast<S>(g * silu(a));
  }
  // 1. a = x @ w_gate, u = x @ w_up: x feeds both, so dx collects both paths.
  dx = xt::zeros<S>(cache.x.shape());
  detail::project_backward(da, cache.x, w.w_gate, dx, grads.w_gate);
  detail::project_backward(du, cache.x, w.w_up, dx, grads.w_up);
}

#define ATTN_SWIGLU_INSTANTIATE(S)                                                                 \
  template xt::xtensor<S, 3> swiglu_forward<S>(const xt::xtensor<S, 3>&, const SwigluWeights<S>&); \
  template xt::xtensor<S, 3> swiglu_forward<S>(const xt::xtensor<S, 3>&, const SwigluWeights<S>&,  \
                                               SwigluCache<S>&);                                   \
  template void swiglu_backward<S>(const xt::xtensor<S, 3>&, const SwigluCache<S>&,                \
                                   const SwigluWeights<S>&, xt::xtensor<S, 3>&,                    \
                                   SwigluWeights<S>&);
ATTN_SWIGLU_INSTANTIATE(float)
ATTN_SWIGLU_INSTANTIATE(double)
#undef ATTN_SWIGLU_INSTANTIATE

}  // namespace attn
