// Wrong: logits multiplied by the temperature instead of divided.
#include <algorithm>
#include <cmath>
#include <vector>

#include "exercises.hpp"

namespace ex01 {

int sample_logits(std::span<const float> logits, float temperature, attn::Rng& rng) {
  const std::size_t V = logits.size();
  std::vector<float> probs(V);
  float m = logits[0] * temperature;
  for (std::size_t j = 1; j < V; ++j) m = std::max(m, logits[j] * temperature);
  double sum = 0.0;
  for (std::size_t j = 0; j < V; ++j) {
    probs[j] = std::exp(logits[j] * temperature - m);
    sum += static_cast<double>(probs[j]);
  }
  for (float& p : probs) p = static_cast<float>(static_cast<double>(p) / sum);
  return static_cast<int>(rng.categorical(probs));
}

}  // namespace ex01
