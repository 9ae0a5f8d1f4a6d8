// Exercise ex07.4: top-k sampling with temperature (chapter 07, docs/07-causal-lm.md).
//
// Goal: draw the next token, but only among the k most likely ones.
//   logits (V,), temperature > 0, top_k in [1, V], rng -> one id in [0, V)
//   1. keep the k largest logits; on a tie the lower id wins (logits [1, 1, 0], k = 1 keeps id 0)
//   2. p_i = exp(l_i / temperature) / sum_{j kept} exp(l_j / temperature)   for the kept ids,
//      0 for the others
//   3. draw one id from p (rng.categorical does it)
// Temperature below 1 sharpens the distribution, above 1 flattens it; k = 1 is greedy decoding,
// k = V is plain sampling. Top-k cuts off the long tail of unlikely tokens that, drawn once in a
// while, derail a generated text.
// Throw std::invalid_argument if top_k is 0 or above V, or if the temperature is not a finite
// number > 0.
//
// Check: build/default/bin/attn-check 07
#include <stdexcept>

#include "exercises.hpp"

namespace ex07 {

int sample_top_k(std::span<const float> logits, float temperature, std::size_t top_k,
                 attn::Rng& rng) {
  // TODO(ex07.4): return an id drawn with p = softmax(logits / temperature) over the top_k largest
  // logits (ties: lower id), 0 elsewhere; std::invalid_argument for top_k = 0 or > V, and for a
  // temperature that is not a finite number > 0.
  throw std::logic_error("TODO ex07.4: top-k sampling");
}

}  // namespace ex07
