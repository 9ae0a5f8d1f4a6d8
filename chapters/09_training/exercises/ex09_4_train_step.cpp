// Exercise ex09.4: the training step's wiring (chapter 09, docs/09-training.md).
//
// Goal: one optimizer step, from a batch to better weights.
//   state (weights, grads, adam_m, adam_v, step, losses, cache), config, inputs and targets (B, T)
//   1. zero the gradients (lm_forward_backward adds into them)
//   2. loss = forward and backward on the batch
//   3. clip the gradients' global norm to config.grad_clip (0 = off)
//   4. AdamW on every tensor at t = step + 1, lr from config.schedule; weight decay only on
//      tensors attn::decays(rank)
//   5. step = t; append the loss to state.losses
// Returns {loss, the norm before clipping, the lr used}.
//
// Check: build/default/bin/attn-check 09
#include <stdexcept>

#include "exercises.hpp"

namespace ex09 {

attn::StepResult train_step_on(attn::TrainState& state, const attn::TrainConfig& config,
                               const xt::xtensor<int, 2>& inputs,
                               const xt::xtensor<int, 2>& targets) {
  // TODO(ex09.4): zero, forward + backward, clip, AdamW on each parameter tensor, count the step.
  throw std::logic_error("TODO ex09.4: the training step");
}

}  // namespace ex09
