// Wrong: the cosine's progress is t / total, counted from step 0 instead of from the end of the warmup.
#include <cmath>

#include "exercises.hpp"

namespace ex09 {

float learning_rate(const attn::LrSchedule& s, std::size_t step) {
  if (s.shape == attn::LrShape::constant) return s.lr;
  if (step <= s.warmup) return s.lr * static_cast<float>(step) / static_cast<float>(s.warmup);
  if (step >= s.total) return s.min_lr;
  const float progress = static_cast<float>(step) / static_cast<float>(s.total);
  return s.min_lr + (s.lr - s.min_lr) * 0.5f * (1.0f + std::cos(3.14159265f * progress));
}

}  // namespace ex09
