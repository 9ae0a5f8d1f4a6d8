// tests/exercises/ch09_solution.cpp: the reference solution of chapter 09's exercises. Every
// ex09:: function forwards to the attn:: function it mirrors (the library is the solution).
#include "attn/ops/optim.hpp"
#include "attn/io/text.hpp"
#include "attn/train/train.hpp"
#include "exercises.hpp"
#include "reference.hpp"

namespace ex09 {

ATTN_REFERENCE void adamw_update(std::span<float> p, std::span<const float> g, std::span<float> m,
                                 std::span<float> v, float lr, float weight_decay, std::size_t step,
                                 const attn::AdamWConfig& config) {
  attn::adamw_update(p, g, m, v, lr, weight_decay, step, config);
}

ATTN_REFERENCE attn::Batch get_batch(std::span<const int> data, std::size_t batch_size,
                                     std::size_t block_size, attn::Rng& rng) {
  return attn::get_batch(data, batch_size, block_size, rng);
}

ATTN_REFERENCE attn::EvalRecord estimate_loss(const attn::LmWeights& w,
                                              const attn::ModelSpec& config,
                                              const attn::Split& split, std::size_t batch_size,
                                              std::size_t iters, std::uint64_t seed,
                                              std::size_t step) {
  return attn::estimate_loss(w, config, split, batch_size, iters, seed, step);
}

ATTN_REFERENCE attn::StepResult train_step_on(attn::TrainState& state,
                                              const attn::TrainConfig& config,
                                              const xt::xtensor<int, 2>& inputs,
                                              const xt::xtensor<int, 2>& targets) {
  return attn::train_step_on(state, config, inputs, targets);
}

ATTN_REFERENCE float learning_rate(const attn::LrSchedule& schedule, std::size_t step) {
  return attn::learning_rate(schedule, step);
}

ATTN_REFERENCE double clip_grad_norm(std::span<const std::span<float>> grads, float max_norm) {
  return attn::clip_grad_norm(grads, max_norm);
}

}  // namespace ex09
