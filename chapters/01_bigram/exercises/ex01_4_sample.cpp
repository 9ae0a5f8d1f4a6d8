// Exercise ex01.4: sampling with temperature (chapter 01, the bigram model).
//
// Goal: pick the next token at random, in proportion to the model's probabilities. This is how
// the chapter writes new text: sample a character, feed it back, sample the next one.
//   input:  logits (V,), a temperature > 0, the course's random generator
//   output: one token id in [0, V)
// Formula: p = softmax(logits / temperature); return id j with probability p[j].
// A temperature below 1 sharpens p (0.001 nearly always picks the largest logit), above 1 it
// flattens p toward uniform. attn::Rng has uniform() in [0, 1) and categorical(probs), which
// draws an index with probability probs[j] (see attn/core/random.hpp).
// Check: build/default/bin/attn-check 01
#include <stdexcept>

#include "exercises.hpp"

namespace ex01 {

int sample_logits(std::span<const float> logits, float temperature, attn::Rng& rng) {
  // TODO(ex01.4): return an id in [0, V) drawn with probability softmax(logits / temperature)[id],
  // using rng (same seed, same draws); no overflow at temperature 0.001.
  throw std::logic_error("TODO ex01.4: sample a token with temperature");
}

}  // namespace ex01
