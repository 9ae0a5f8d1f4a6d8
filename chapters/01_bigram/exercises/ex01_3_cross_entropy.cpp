// Exercise ex01.3: cross-entropy and its gradient (chapter 01, the bigram model).
//
// Goal: measure how surprised the model is by the true next characters, and how to change the
// logits to make it less surprised. This is the loss every chapter of the course trains with.
//   input:  logits (N, V), one row of scores per prediction; targets (N,), ids in [0, V)
//   output: cross_entropy      -> the mean loss, one number (accumulate it in double)
//           cross_entropy_grad -> d loss / d logits, (N, V)
// Formula, with p_n = softmax(logits[n]), p_n[j] = exp(logits[n, j]) / sum_k exp(logits[n, k]):
//   loss = -(1/N) * sum_n log p_n[targets[n]]
//   grad[n, j] = (p_n[j] - (j == targets[n] ? 1 : 0)) / N
// Edge case: logits like 1000 must give a finite loss and gradient, though exp(1000) overflows.
// The derivation of the gradient is in docs/01-bigram.md, "The math".
// Check: build/default/bin/attn-check 01
#include <stdexcept>

#include "exercises.hpp"

namespace ex01 {

double cross_entropy(const attn::Matrix& logits, std::span<const int> targets) {
  // TODO(ex01.3): return -(1/N) sum_n log softmax(logits[n])[targets[n]], finite for logits like
  // 1000.
  throw std::logic_error("TODO ex01.3: cross-entropy loss");
}

attn::Matrix cross_entropy_grad(const attn::Matrix& logits, std::span<const int> targets) {
  // TODO(ex01.3): return grad (N, V), grad[n, j] = (softmax(logits[n])[j] - [j == targets[n]]) / N.
  throw std::logic_error("TODO ex01.3: gradient of the cross-entropy");
}

}  // namespace ex01
