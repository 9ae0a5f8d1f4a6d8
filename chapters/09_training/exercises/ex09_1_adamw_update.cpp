// Exercise ex09.1: the AdamW update (chapter 09, docs/09-training.md).
//
// Goal: one optimizer step on one tensor, the way torch.optim.AdamW takes it.
//   p, g, m, v: n floats each (parameter, gradient, first and second moment); step t >= 1
//   1. p = p (1 - lr wd)                          decoupled weight decay, before anything else
//   2. m = beta1 m + (1 - beta1) g
//   3. v = beta2 v + (1 - beta2) g^2
//   4. p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// The moments start at 0; the divisions by 1 - beta^t correct for that start.
// Throw std::invalid_argument if the four lengths differ or step is 0.
//
// Check: build/default/bin/attn-check 09
#include <stdexcept>

#include "exercises.hpp"

namespace ex09 {

void adamw_update(std::span<float> p, std::span<const float> g, std::span<float> m,
                  std::span<float> v, float lr, float weight_decay, std::size_t step,
                  const attn::AdamWConfig& config) {
  // TODO(ex09.1): the decayed, bias-corrected AdamW step of every element (steps 1-4 above).
  throw std::logic_error("TODO ex09.1: AdamW update");
}

}  // namespace ex09
