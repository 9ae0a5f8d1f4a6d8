// Wrong: each tensor is clipped by its own norm, not by the global norm of all of them.
#include <cmath>

#include "exercises.hpp"

namespace ex09 {

double clip_grad_norm(std::span<const std::span<float>> grads, float max_norm) {
  double total = 0.0;
  for (std::span<float> g : grads) {
    double sum = 0.0;
    for (float x : g) sum += static_cast<double>(x) * static_cast<double>(x);
    total += sum;
    const double norm = std::sqrt(sum);
    if (max_norm > 0.0f && norm > max_norm) {
      const float c = static_cast<float>(max_norm / (norm + 1e-6));
      for (float& x : g) x *= c;
    }
  }
  return std::sqrt(total);
}

}  // namespace ex09
