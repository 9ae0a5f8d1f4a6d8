// Exercise ex08.1: the softmax backward (chapter 08, docs/08-backprop.md).
//
// Goal: send the gradient back through a softmax taken over each row.
//   y (N, S) = softmax(x) row by row, dy (N, S) = dL/dy  ->  dx (N, S) = dL/dx
// Each y_j depends on every x_i of its row: dy_j/dx_i = y_j ([i == j] - y_i). Multiplying dy by
// that (S, S) Jacobian collapses to one dot product per row:
//   dx_i = y_i (dy_i - sum_j dy_j y_j)
// so the backward needs only y (not x) and costs O(S) per row. A masked entry has y = 0, so its
// gradient is 0: nothing flows to a position the softmax never looked at.
// Throw std::invalid_argument when y and dy differ in shape.
//
// Check: build/default/bin/attn-check 08
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

attn::Matrix softmax_backward(const attn::Matrix& y, const attn::Matrix& dy) {
  // TODO(ex08.1): per row, dx = y * (dy - dot(dy, y)); same shape as y; throw if shapes differ.
  throw std::logic_error("TODO ex08.1: softmax backward");
}

}  // namespace ex08
