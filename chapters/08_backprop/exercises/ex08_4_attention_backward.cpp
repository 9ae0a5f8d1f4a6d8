// Exercise ex08.4: the backward of one attention head (chapter 08, docs/08-backprop.md).
//
// Goal: the gradients of q, k and v for one head of chapter 04,
//   S = q k^T / sqrt(hs) (T, S),  P = softmax(S [+ causal mask]) (T, S),  out = P v (T, hs)
// from dout = dL/dout (T, hs). Redo the forward to get P, then the five lines:
//   dv = P^T dout                (S, hs)
//   dP = dout v^T                (T, S)
//   dS = softmax backward of dP  (T, S)    (your ex08.1, or attn::softmax_backward)
//   dq = dS k / sqrt(hs)         (T, hs)
//   dk = dS^T q / sqrt(hs)       (S, hs)
// Causal: P is 0 above the diagonal, so dS is 0 there and the future gets no gradient.
// Throw std::invalid_argument if the shapes do not fit together, or if causal is set and S != T.
//
// Check: build/default/bin/attn-check 08
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

AttentionGrads attention_backward(const attn::Matrix& dout, const attn::Matrix& q,
                                  const attn::Matrix& k, const attn::Matrix& v, bool causal) {
  // TODO(ex08.4): recompute P, then dv, dP, dS, dq, dk (both scaled by 1/sqrt(hs)).
  throw std::logic_error("TODO ex08.4: attention backward");
}

}  // namespace ex08
