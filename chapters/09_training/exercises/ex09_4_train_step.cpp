// Exercise ex09.4: the training step's wiring (chapter 09, docs/09-training.md).
//
// Goal: one optimizer step, from a batch to better weights, wired from the library's pieces
// (attn::lm_forward_backward, attn::clip_grad_norm, attn::learning_rate, attn::adamw_update,
// attn::decays; the order is on the page, docs/09-training.md, "The math").
//   in/out: state (weights, grads, adam_m, adam_v, step = steps already taken, losses, cache)
//   in:     config (model, schedule, adam, grad_clip; 0 = no clipping), inputs, targets (B, T)
//   out:    {the loss before the update, the gradient norm before clipping, the lr used}
// The contract:
//   - state.grads may hold anything when the step starts (lm_forward_backward adds into them):
//     the update uses this batch's gradients only;
//   - this is step state.step + 1, for the schedule and for AdamW's bias corrections; afterwards
//     state.step has gone up by one and state.losses ends with this step's loss;
//   - weight decay only on the tensors attn::decays(rank) names;
//   - with config.model.dropout > 0 the forward drops values: step t draws its masks from
//     attn::dropout_rng_for(config.seed, t), put in state.cache.dropout_rng before the forward
//     (state.cache.fixed_dropout_masks false), so a resumed run drops the same values.
//
// Check: build/default/bin/attn-check 09
#include <stdexcept>

#include "exercises.hpp"

namespace ex09 {

attn::StepResult train_step_on(attn::TrainState& state, const attn::TrainConfig& config,
                               const xt::xtensor<int, 2>& inputs,
                               const xt::xtensor<int, 2>& targets) {
  // TODO(ex09.4): one step on this batch: the weights, moments, step and losses updated; return
  // {loss, norm before clipping, lr used}.
  throw std::logic_error("TODO ex09.4: the training step");
}

}  // namespace ex09
