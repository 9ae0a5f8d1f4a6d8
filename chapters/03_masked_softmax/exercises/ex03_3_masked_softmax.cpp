// Exercise ex03.3: masked softmax, the attention weights of a decoder (chapter 03,
// docs/03-masked-softmax.md).
//
// Goal: softmax of every row of scores over the allowed keys only.
//   scores (T, S), allowed (T, S) bool -> weights (T, S)
//   weights(t, s) = exp(scores(t, s) - m_t) / sum_{s' allowed} exp(scores(t, s') - m_t)  if allowed
//                 = 0                                                             otherwise
//   with m_t the maximum allowed score of row t.
// A masked score never matters, however large it is. A row with no allowed key gives zeros.
// Throw std::invalid_argument if the two shapes differ.
//
// Check: build/default/bin/attn-check 03
#include <stdexcept>

#include "exercises.hpp"

namespace ex03 {

attn::Matrix masked_softmax(const attn::Matrix& scores, const attn::Mask& allowed) {
  // TODO(ex03.3): return (T, S), row t = softmax of scores[t] over the allowed keys, 0 elsewhere;
  // zeros for a row with no allowed key; std::invalid_argument if the shapes differ.
  throw std::logic_error("TODO ex03.3: masked softmax");
}

}  // namespace ex03
