// Wrong: the squares are summed in float, which overflows to infinity for gradients near 1e20.
#include <cmath>

#include "exercises.hpp"

namespace ex09 {

double clip_grad_norm(std::span<const std::span<float>> grads, float max_norm) {
  float sum = 0.0f;
  for (std::span<float> g : grads)
    for (float x : g) sum += x * x;
  const float norm = std::sqrt(sum);
  if (max_norm > 0.0f && norm > max_norm) {
    const float c = max_norm / (norm + 1e-6f);
    for (std::span<float> g : grads)
      for (float& x : g) x *= c;
  }
  return norm;
}

}  // namespace ex09
