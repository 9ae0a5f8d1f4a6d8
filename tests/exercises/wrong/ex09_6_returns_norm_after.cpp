// Wrong: returns the norm after clipping (max_norm when it clipped), not the one before.
#include <cmath>

#include "exercises.hpp"

namespace ex09 {

double clip_grad_norm(std::span<const std::span<float>> grads, float max_norm) {
  double sum = 0.0;
  for (std::span<float> g : grads)
    for (float x : g) sum += static_cast<double>(x) * static_cast<double>(x);
  double norm = std::sqrt(sum);
  if (max_norm > 0.0f && norm > max_norm) {
    const float c = static_cast<float>(max_norm / (norm + 1e-6));
    for (std::span<float> g : grads)
      for (float& x : g) x *= c;
    norm = max_norm;
  }
  return norm;
}

}  // namespace ex09
