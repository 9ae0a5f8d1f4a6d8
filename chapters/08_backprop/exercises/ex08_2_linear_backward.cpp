// Exercise ex08.2: the backward of a linear layer (chapter 08, docs/08-backprop.md).
//
// Goal: the gradients of y = x @ w + b with respect to x, w and b.
//   dy (B, T, out) = dL/dy, x (B, T, in), w (in, out)
//   dx = dy @ w^T               (B, T, in)     each input feeds every output through w
//   dw = sum over all B*T rows of x^T @ dy    (in, out)
//   db = sum over all B*T rows of dy          (out,)
// The same w is used at every position and in every sequence, so its gradient is the SUM of the
// contributions of all B * T rows (not their mean: the loss already took the mean).
// Throw std::invalid_argument when dy, x and w do not fit together.
//
// Check: build/default/bin/attn-check 08
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

attn::LinearGrads linear_backward(const attn::Tensor<3>& dy, const attn::Tensor<3>& x,
                                  const attn::Matrix& w) {
  // TODO(ex08.2): dx = dy @ w^T; dw = x^T @ dy and db = column sums of dy, over all B*T rows.
  throw std::logic_error("TODO ex08.2: linear backward");
}

}  // namespace ex08
