// Wrong: on a tie the higher id is kept instead of the lower.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "exercises.hpp"

namespace ex07 {

int sample_top_k(std::span<const float> logits, float temperature, std::size_t top_k,
                 attn::Rng& rng) {
  const std::size_t V = logits.size();
  if (top_k == 0 || top_k > V || !(temperature > 0.0f) || !std::isfinite(temperature))
    throw std::invalid_argument("top_k in [1, V], temperature > 0");
  std::vector<std::size_t> ids(V);
  std::iota(ids.begin(), ids.end(), std::size_t{0});
  std::stable_sort(ids.begin(), ids.end(), [&](std::size_t a, std::size_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a > b);
  });
  const std::size_t keep = top_k;
  const float t = temperature;
  std::vector<float> probs(V, 0.0f);
  const float m = logits[ids[0]] / t;
  double sum = 0.0;
  for (std::size_t r = 0; r < keep; ++r) {
    probs[ids[r]] = std::exp(logits[ids[r]] / t - m);
    sum += static_cast<double>(probs[ids[r]]);
  }
  for (float& p : probs) p = static_cast<float>(static_cast<double>(p) / sum);
  return static_cast<int>(rng.categorical(probs));
}

}  // namespace ex07
