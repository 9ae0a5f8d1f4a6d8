// Exercise ex08.4: the backward of one attention head (chapter 08, docs/08-backprop.md).
//
// Goal: the gradients of q, k and v for one head of chapter 04,
//   out = softmax(q k^T / sqrt(hs) [+ causal mask]) @ v
// going back through its three steps (product, softmax, product: docs/08-backprop.md, "The
// math", attention; the softmax step is your ex08.1).
//   in:  dout (T, hs) = dL/dout; the forward's inputs q (T, hs), k (S, hs), v (S, hs); causal
//   out: dq (T, hs), dk (S, hs), dv (S, hs) in an AttentionGrads
// The contract:
//   - the forward's weights are not passed in: recompute them;
//   - the 1/sqrt(hs) scale is part of the forward, so it is part of the gradients it touches;
//   - causal: a query never looked at a later key, so no gradient flows there;
//   - S != T is allowed without a mask (cross-attention);
//   - throw std::invalid_argument if the shapes do not fit together, or if causal is set and
//     S != T.
//
// Check: build/default/bin/attn-check 08
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

AttentionGrads attention_backward(const attn::Matrix& dout, const attn::Matrix& q,
                                  const attn::Matrix& k, const attn::Matrix& v, bool causal) {
  // TODO(ex08.4): dq, dk and dv of one head; throw on shapes that do not fit.
  throw std::logic_error("TODO ex08.4: attention backward");
}

}  // namespace ex08
