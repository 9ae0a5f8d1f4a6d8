// Wrong: the warmup starts at 0 (lr * (t - 1) / warmup): step 1 learns nothing and lr is reached one step late.
#include <cmath>

#include "exercises.hpp"

namespace ex09 {

float learning_rate(const attn::LrSchedule& s, std::size_t step) {
  if (s.shape == attn::LrShape::constant) return s.lr;
  if (step <= s.warmup) return s.lr * static_cast<float>(step - 1) / static_cast<float>(s.warmup);
  if (step >= s.total) return s.min_lr;
  const float progress = static_cast<float>(step - s.warmup) / static_cast<float>(s.total - s.warmup);
  return s.min_lr + (s.lr - s.min_lr) * 0.5f * (1.0f + std::cos(3.14159265f * progress));
}

}  // namespace ex09
