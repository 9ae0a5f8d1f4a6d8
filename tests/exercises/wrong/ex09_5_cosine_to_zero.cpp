// Wrong: the cosine falls to 0 instead of min_lr.
#include <cmath>

#include "exercises.hpp"

namespace ex09 {

float learning_rate(const attn::LrSchedule& s, std::size_t step) {
  if (s.shape == attn::LrShape::constant) return s.lr;
  if (step <= s.warmup) return s.lr * static_cast<float>(step) / static_cast<float>(s.warmup);
  if (step >= s.total) return 0.0f;
  const float progress = static_cast<float>(step - s.warmup) / static_cast<float>(s.total - s.warmup);
  return s.lr * 0.5f * (1.0f + std::cos(3.14159265f * progress));
}

}  // namespace ex09
