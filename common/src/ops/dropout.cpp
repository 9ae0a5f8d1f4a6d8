// dropout.cpp: inverted dropout, forward beside backward (chapter 09). The block applies it to
// the output of each sub-layer, before the residual addition (model/block.cpp).
#include "attn/ops/dropout.hpp"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "attn/core/check.hpp"

namespace attn {

void check_dropout_p(float p, const char* function) {
  // (written so that NaN fails too)
  require(p >= 0.0f && p < 1.0f, function,
          [&] { return fmt::format("p = {} is outside [0, 1)", p); });
}

void dropout_mask(Rng& rng, float p, std::span<float> mask) {
  check_dropout_p(p, "attn::dropout_mask");
  if (p == 0.0f) {
    for (float& m : mask) m = 1.0f;
    return;
  }
  // 1. keep = u >= p with u uniform in [0, 1): probability 1 - p.
  // 2. A kept value is scaled by 1 / (1 - p), so E[mask] = (1 - p) / (1 - p) = 1: the expected
  //    output is the input, and evaluation (no dropout) sees activations of the same size.
  const float scale = 1.0f / (1.0f - p);
  for (float& m : mask) m = rng.uniform() >= p ? scale : 0.0f;
}

Tensor<3> dropout_mask(Rng& rng, float p, const std::array<std::size_t, 3>& shape) {
  Tensor<3> mask(shape);
  dropout_mask(rng, p, std::span<float>(mask.data(), mask.size()));
  return mask;
}

namespace {
void check_same(const Tensor<3>& a, const Tensor<3>& mask, const char* function, const char* what) {
  if (a.shape() != mask.shape()) {
    shape_error(function,
                std::string("a mask of the shape of ") + what + " " + shape_str(a.shape()),
                "mask " + shape_str(mask.shape()));
  }
}
}  // namespace

Tensor<3> dropout_forward(const Tensor<3>& x, const Tensor<3>& mask) {
  check_same(x, mask, "attn::dropout_forward", "x");
  Tensor<3> y(x.shape());  // (B, T, C)
  for (std::size_t i = 0; i < x.size(); ++i) y.data()[i] = x.data()[i] * mask.data()[i];
  return y;
}

Tensor<3> dropout_backward(const Tensor<3>& dy, const Tensor<3>& mask) {
  check_same(dy, mask, "attn::dropout_backward", "dy");
  // y_i = x_i * mask_i depends on x_i alone, with slope mask_i.
  Tensor<3> dx(dy.shape());  // (B, T, C)
  for (std::size_t i = 0; i < dy.size(); ++i) dx.data()[i] = dy.data()[i] * mask.data()[i];
  return dx;
}

}  // namespace attn
