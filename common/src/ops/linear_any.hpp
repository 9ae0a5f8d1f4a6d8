// linear_any.hpp (private to common/src): the plain linear map y = x @ W and its backward for any
// scalar type, used by the chapter-11 references (swiglu.cpp, gqa.cpp) that run in float for the
// model and in double for the gradient checks. Sums in double. (The float-only attn::linear of
// chapter 04 stays the one the pages teach.)
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "attn/core/check.hpp"
#include "attn/core/xt.hpp"

namespace attn::detail {

// "attn::swiglu_forward: w_up is (8, 16), expected (8, 24)"
template <class S>
void check_weight_shape(const char* fn, const char* name, const xt::xtensor<S, 2>& w,
                        std::size_t rows, std::size_t cols) {
  const std::array<std::size_t, 2> want{rows, cols};
  require(w.shape()[0] == rows && w.shape()[1] == cols, fn, [&] {
    return std::string(name) + " is " + shape_str(w.shape()) + ", expected " + shape_str(want);
  });
}

// x (B, T, in) @ w (in, out) -> (B, T, out). Shapes checked by the caller.
template <class S>
xt::xtensor<S, 3> project(const xt::xtensor<S, 3>& x, const xt::xtensor<S, 2>& w) {
  const std::size_t rows = x.shape()[0] * x.shape()[1], in = w.shape()[0], out = w.shape()[1];
  xt::xtensor<S, 3> y = xt::xtensor<S, 3>::from_shape({x.shape()[0], x.shape()[1], out});
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < out; ++o) {
      double sum = 0.0;
      for (std::size_t i = 0; i < in; ++i)
        sum += static_cast<double>(x.data()[r * in + i]) * static_cast<double>(w(i, o));
      y.data()[r * out + o] = static_cast<S>(sum);
    }
  return y;
}

// Backward of y = x @ W with dy (B, T, out): dx += dy @ W^T (B, T, in), dW += x^T @ dy (in, out).
// Both accumulate: x may feed several maps (q, k and v), W may be used twice.
template <class S>
void project_backward(const xt::xtensor<S, 3>& dy, const xt::xtensor<S, 3>& x,
                      const xt::xtensor<S, 2>& w, xt::xtensor<S, 3>& dx, xt::xtensor<S, 2>& dw) {
  const std::size_t rows = x.shape()[0] * x.shape()[1], in = w.shape()[0], out = w.shape()[1];
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t i = 0; i < in; ++i) {
      double sum = 0.0;
      for (std::size_t o = 0; o < out; ++o)
        sum += static_cast<double>(dy.data()[r * out + o]) * static_cast<double>(w(i, o));
      dx.data()[r * in + i] += static_cast<S>(sum);
    }
  for (std::size_t i = 0; i < in; ++i)
    for (std::size_t o = 0; o < out; ++o) {
      double sum = 0.0;
      for (std::size_t r = 0; r < rows; ++r)
        sum +=
            static_cast<double>(x.data()[r * in + i]) * static_cast<double>(dy.data()[r * out + o]);
      dw(i, o) += static_cast<S>(sum);
    }
}

}  // namespace attn::detail
