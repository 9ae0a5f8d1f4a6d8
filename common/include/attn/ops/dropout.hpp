// attn/ops/dropout.hpp: dropout (chapter 09), the regulariser the lecture adds to its scaled-up
// model.
// In training each value is kept with probability 1 - p and then scaled by 1 / (1 - p)
// ("inverted" dropout), or set to 0; the expected value of every output equals its input, so the
// model needs no change at evaluation time, where dropout is simply off:
//   mask[i] = 1 / (1 - p) with probability 1 - p, else 0       (the same shape as x)
//   y = x * mask            dy/dx = mask, so dx = dy * mask
// The mask is drawn from the course's generator (attn::Rng), so a run is the same on any machine.
#pragma once

#include <cstddef>
#include <span>

#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"

namespace attn {

// Throws std::invalid_argument unless 0 <= p < 1 (p = 1 would drop everything and divide by 0):
// "attn::dropout: p = 1 is outside [0, 1)". `function` names the caller in the message.
void check_dropout_p(float p, const char* function = "attn::dropout");

// mask.size() draws, in order: mask[i] = 1 / (1 - p) when rng.uniform() >= p, else 0. p = 0
// fills with ones and draws nothing.
void dropout_mask(Rng& rng, float p, std::span<float> mask);
// A fresh mask shaped like `shape`.
Tensor<3> dropout_mask(Rng& rng, float p, const std::array<std::size_t, 3>& shape);

// y = x * mask, element by element (the forward). x and mask the same shape.
Tensor<3> dropout_forward(const Tensor<3>& x, const Tensor<3>& mask);
// dx = dy * mask (the backward: a dropped value passes no gradient, a kept one its dy scaled).
Tensor<3> dropout_backward(const Tensor<3>& dy, const Tensor<3>& mask);

}  // namespace attn
