// Exercise ex09.1: the AdamW update (chapter 09, docs/09-training.md).
//
// Goal: one optimizer step on one tensor, the way torch.optim.AdamW takes it (the update and its
// order of operations are on the page: docs/09-training.md, "The math").
//   in/out: p (parameters), m and v (first and second moments, 0 before step 1): n floats each
//   in:     g (n gradients), lr, weight_decay (0 for tensors that are not decayed), step t >= 1
//           (this update's t), config (beta1, beta2, eps)
// The contract:
//   - every element on its own; the decay is decoupled (it shrinks p, it is not added to g);
//   - the moments start at 0, so the step corrects for that start with t;
//   - throw std::invalid_argument when g, m or v is not as long as p (each of the three), or
//     step is 0; change nothing then.
//
// Check: build/default/bin/attn-check 09
#include <stdexcept>

#include "exercises.hpp"

namespace ex09 {

void adamw_update(std::span<float> p, std::span<const float> g, std::span<float> m,
                  std::span<float> v, float lr, float weight_decay, std::size_t step,
                  const attn::AdamWConfig& config) {
  // TODO(ex09.1): check the lengths and step, then update p, m and v in place, element by
  // element, as torch.optim.AdamW does at step t.
  throw std::logic_error("TODO ex09.1: AdamW update");
}

}  // namespace ex09
