// Wrong: with dropout on, the masks come from whatever state.cache.dropout_rng holds, never
// reseeded from attn::dropout_rng_for(config.seed, t): not the step's masks, not resumable.
#include "attn/ops/optim.hpp"
#include "exercises.hpp"

namespace ex09 {

attn::StepResult train_step_on(attn::TrainState& s, const attn::TrainConfig& config,
                               const xt::xtensor<int, 2>& inputs,
                               const xt::xtensor<int, 2>& targets) {
  attn::lm_zero(s.grads);
  const double loss = attn::lm_forward_backward(inputs, targets, s.weights, config.model, s.grads, s.cache);
  std::vector<attn::NamedTensor> p = attn::lm_parameters(s.weights), g = attn::lm_parameters(s.grads),
                                 m = attn::lm_parameters(s.adam_m), v = attn::lm_parameters(s.adam_v);
  std::vector<std::span<float>> spans;
  for (attn::NamedTensor& t : g) spans.push_back(t.values);
  const double norm = attn::clip_grad_norm(spans, config.grad_clip);
  const float lr = attn::learning_rate(config.schedule, s.step + 1);
  for (std::size_t i = 0; i < p.size(); ++i) {
    attn::adamw_update(p[i].values, g[i].values, m[i].values, v[i].values, lr,
                       attn::decays(p[i].rank) ? config.adam.weight_decay : 0.0f, s.step + 1, config.adam);
  }
  ++s.step;
  s.losses.push_back(static_cast<float>(loss));
  return {loss, norm, lr};
}

}  // namespace ex09
