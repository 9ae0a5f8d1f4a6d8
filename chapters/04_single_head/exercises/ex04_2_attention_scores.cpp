// Exercise ex04.2: attention scores, how much each query is interested in each key (chapter 04,
// docs/04-single-head.md).
//
// Goal: one scaled dot product per (query, key) pair.
//   q (T, hs), k (S, hs) -> scores (T, S)
//   scores(t, s) = (q[t] . k[s]) / sqrt(hs) = sum_j q(t, j) * k(s, j) / sqrt(hs)
// That is q @ k^T, scaled. Why 1/sqrt(hs): a dot product of hs terms with unit-variance
// components has variance hs; dividing by sqrt(hs) brings it back to 1, so the softmax that
// follows stays soft instead of picking one key.
// Throw std::invalid_argument if q and k do not have the same number of columns.
//
// Check: build/default/bin/attn-check 04
#include <stdexcept>

#include "exercises.hpp"

namespace ex04 {

attn::Matrix attention_scores(const attn::Matrix& q, const attn::Matrix& k) {
  // TODO(ex04.2): return scores (T, S), scores(t, s) = q[t] . k[s] / sqrt(hs);
  // std::invalid_argument if q and k differ in width.
  throw std::logic_error("TODO ex04.2: attention scores");
}

}  // namespace ex04
