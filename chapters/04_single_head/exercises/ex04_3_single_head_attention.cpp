// Exercise ex04.3: one head of scaled dot-product attention (chapter 04, docs/04-single-head.md).
//
// Goal: every query gathers a weighted average of the values, with data-dependent weights.
//   q (T, hs), k (S, hs), v (S, hs) -> weights (T, S), out (T, hs)
//   weights = softmax(q k^T / sqrt(hs))   row by row; with causal, keys s > t are masked first
//   out     = weights @ v
// (weights: the attention probabilities, PyTorch's name and the field's; the library's code calls
// them probs, and keeps "weights" for parameters such as w_q.)
// Self-attention has S = T (q, k and v come from the same tokens). Cross-attention takes keys
// and values from another sequence, S may differ from T, and nothing is masked.
// You may reuse your ex04::attention_scores and the library's attn::causal_mask and
// attn::masked_softmax / attn::softmax (chapter 03).
// Throw std::invalid_argument if q and k differ in width, if k and v differ in length, or if
// causal is set and S != T (the causal rule "s <= t" needs keys and queries at the same places).
//
// Check: build/default/bin/attn-check 04
#include <stdexcept>

#include "exercises.hpp"

namespace ex04 {

AttentionResult single_head_attention(const attn::Matrix& q, const attn::Matrix& k,
                                      const attn::Matrix& v, bool causal) {
  // TODO(ex04.3): return {out (T, hs) = weights @ v, weights (T, S) = rowwise softmax(q k^T /
  // sqrt(hs)), keys s > t excluded when causal}; std::invalid_argument for the three shape errors
  // above.
  throw std::logic_error("TODO ex04.3: single-head attention");
}

}  // namespace ex04
