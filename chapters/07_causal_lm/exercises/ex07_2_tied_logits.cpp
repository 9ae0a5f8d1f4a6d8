// Exercise ex07.2: the output projection, tied to the token embedding (chapter 07,
// docs/07-causal-lm.md).
//
// Goal: one score (logit) per vocabulary entry at every position, reusing the embedding matrix.
//   x (B, T, C), wte (V, C) -> logits (B, T, V)
//   logits[b, t, v] = sum_c x[b, t, c] * wte[v, c]        i.e. logits = x @ wte^T
// Tying: the matrix that turned token v into a vector now scores how much the final vector
// looks like token v. No separate (C, V) output matrix, so V * C fewer parameters.
// Throw std::invalid_argument when x and wte do not have the same number of columns C.
//
// Check: build/default/bin/attn-check 07
#include <stdexcept>

#include "exercises.hpp"

namespace ex07 {

attn::Tensor<3> tied_logits(const attn::Tensor<3>& x, const attn::Matrix& wte) {
  // TODO(ex07.2): return logits (B, T, V), logits[b, t, v] = x[b, t] . wte[v];
  // std::invalid_argument when x and wte differ in width.
  throw std::logic_error("TODO ex07.2: tied output projection");
}

}  // namespace ex07
