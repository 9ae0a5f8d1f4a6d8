// Exercise ex08.1: the softmax backward (chapter 08, docs/08-backprop.md).
//
// Goal: send the gradient back through a softmax taken over each row.
//   in:  y (N, S) = softmax(x) row by row (the forward's output), dy (N, S) = dL/dy
//   out: dx (N, S) = dL/dx
// The contract:
//   - rows are independent; the result uses only y and dy (x is not passed) and costs O(S) per
//     row: never build the (S, S) Jacobian. Derive what it collapses to from dy_j/dx_i on the
//     page (docs/08-backprop.md, "The math", softmax).
//   - a masked entry (y = 0) gets exactly 0.
//   - y and dy must have the same *shape* (not just as many numbers): otherwise throw
//     std::invalid_argument.
//
// Check: build/default/bin/attn-check 08
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

attn::Matrix softmax_backward(const attn::Matrix& y, const attn::Matrix& dy) {
  // TODO(ex08.1): dx (N, S), the same shape as y, from y and dy alone; masked entries exactly 0;
  // throw std::invalid_argument when y and dy differ in shape.
  throw std::logic_error("TODO ex08.1: softmax backward");
}

}  // namespace ex08
