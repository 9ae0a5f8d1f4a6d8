// Exercise ex08.2: the backward of a linear layer (chapter 08, docs/08-backprop.md).
//
// Goal: the gradients of y = x @ w + b with respect to x, w and b (derived on the page:
// docs/08-backprop.md, "The math", the linear layer).
//   in:  dy (B, T, out) = dL/dy, x (B, T, in), w (in, out) (b is not needed: why?)
//   out: fresh dx (B, T, in), dw (in, out), db (out,) in an attn::LinearGrads
// The contract:
//   - w and b are used at every position of every sequence: their gradients collect all B * T
//     rows (the loss already took its mean; do not average again);
//   - in != out in general: every shape must come out as stated;
//   - throw std::invalid_argument when dy, x and w do not fit together (dy's B and T must be x's,
//     its width w's out; x's width w's in).
//
// Check: build/default/bin/attn-check 08
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

attn::LinearGrads linear_backward(const attn::Tensor<3>& dy, const attn::Tensor<3>& x,
                                  const attn::Matrix& w) {
  // TODO(ex08.2): dx (B, T, in), dw (in, out), db (out,) from dy, x, w; throw on shapes that do
  // not fit.
  throw std::logic_error("TODO ex08.2: linear backward");
}

}  // namespace ex08
