// sample.cpp: from logits to one token id, with temperature (chapters 01 and 07).
// softmax(logits / temperature) gives the distribution; Rng::categorical draws from it, the same
// way torch.multinomial does in the lecture.
#include "attn/sample.hpp"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "attn/check.hpp"
#include "attn/softmax.hpp"

namespace attn {

namespace {

// A temperature divides the logits, so it must be a finite positive number; 0 would divide by
// zero and a negative one would turn the ranking upside down.
void check_sampling_inputs(std::span<const float> logits, float temperature,
                           const char* function) {
  require(std::isfinite(temperature) && temperature > 0.0f, function,
          fmt::format("temperature must be > 0, got {}", temperature));
  require(!logits.empty(), function, "logits must not be empty");
}

Vector probs_unchecked(std::span<const float> logits, float temperature) {
  const std::size_t V = logits.size();
  Vector probs(Vector::shape_type{V});  // (V,)
  // 1. Scale: logits / temperature. Below 1 the gaps between logits grow (sharper), above 1
  //    they shrink (flatter, toward uniform).
  for (std::size_t v = 0; v < V; ++v) probs(v) = logits[v] / temperature;
  // 2. The stable softmax turns the scaled scores into probabilities.
  softmax_rows(probs.data(), 1, V);
  return probs;
}

}  // namespace

Vector probs_with_temperature(std::span<const float> logits, float temperature) {
  check_sampling_inputs(logits, temperature, "attn::probs_with_temperature");
  return probs_unchecked(logits, temperature);
}

int sample_logits(std::span<const float> logits, float temperature, Rng& rng) {
  check_sampling_inputs(logits, temperature, "attn::sample_logits");
  const Vector probs = probs_unchecked(logits, temperature);  // (V,)
  // 3. One uniform draw, walked along the cumulative sum of the probabilities.
  return static_cast<int>(rng.categorical(std::span<const float>(probs.data(), probs.size())));
}

}  // namespace attn
