// Wrong: the running mass added up in float, not double: over thousands of small probabilities
// its rounding errors pile up and the cut lands one id off.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "exercises.hpp"

namespace ex10 {

std::vector<float> top_p_filter(std::span<const float> probs, float top_p) {
  if (probs.empty() || !(top_p > 0.0f && top_p <= 1.0f)) throw std::invalid_argument("top_p_filter");
  const std::size_t V = probs.size();
  std::vector<std::size_t> order(V);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) {
    if (probs[i] != probs[j]) return probs[i] > probs[j];
    return i < j;
  });
  float mass = 0.0f;
  std::size_t keep = 0;
  while (keep < V && mass < top_p) mass += probs[order[keep++]];
  std::vector<float> out(V, 0.0f);
  for (std::size_t r = 0; r < keep; ++r) out[order[r]] = probs[order[r]] / mass;
  return out;
}

}  // namespace ex10
