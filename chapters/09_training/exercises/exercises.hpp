// chapters/09_training/exercises/exercises.hpp: the exercises of chapter 09, training the
// character GPT. Each function mirrors a piece of attn::train_step / attn::estimate_loss
// (train.hpp, optim.hpp, data.hpp) and is written in its own file beside this one. Check them
// with `build/default/bin/attn-check 09`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "attn/model/model.hpp"
#include "attn/ops/optim.hpp"
#include "attn/core/random.hpp"
#include "attn/io/data.hpp"
#include "attn/train/train.hpp"
#include "attn/core/xt.hpp"

namespace ex09 {

// ex09.1, ex09_1_adamw_update.cpp: one AdamW step on one tensor, like attn::adamw_update:
// decoupled weight decay, the two moments, the bias-corrected update. p, g, m, v of equal length
// n; step counts from 1. Throws std::invalid_argument for different lengths or step 0.
void adamw_update(std::span<float> p, std::span<const float> g, std::span<float> m,
                  std::span<float> v, float lr, float weight_decay, std::size_t step,
                  const attn::AdamWConfig& config);

// ex09.2, ex09_2_get_batch.cpp: B random windows of T + 1 tokens, like attn::get_batch: inputs
// data[i : i+T] and targets data[i+1 : i+T+1], each start i = rng.below(n - T). Throws
// std::invalid_argument if B or T is 0 or the data has fewer than T + 1 tokens.
attn::Batch get_batch(std::span<const int> data, std::size_t batch_size, std::size_t block_size,
                      attn::Rng& rng);  // -> x, y (B, T)

// ex09.3, ex09_3_estimate_loss.cpp: the mean loss over `iters` batches of each split, drawn by
// attn::Rng(seed + step, 202) (train split first), like attn::estimate_loss.
attn::EvalRecord estimate_loss(const attn::LmWeights& w, const attn::ModelSpec& config,
                               const attn::Split& split, std::size_t batch_size, std::size_t iters,
                               std::uint64_t seed, std::size_t step);

// ex09.4, ex09_4_train_step.cpp: one optimizer step on a batch, like attn::train_step_on: zero
// the gradients, forward and backward, clip the global norm, AdamW on every tensor (decay only
// where attn::decays(rank)), step + 1, record the loss.
attn::StepResult train_step_on(attn::TrainState& state, const attn::TrainConfig& config,
                               const xt::xtensor<int, 2>& inputs,
                               const xt::xtensor<int, 2>& targets);

// ex09.5, ex09_5_learning_rate.cpp: the learning rate at step t (1-based) of a schedule, like
// attn::learning_rate: constant, or a linear warmup then a half cosine down to min_lr at `total`.
float learning_rate(const attn::LrSchedule& schedule, std::size_t step);

// ex09.6, ex09_6_clip_grad_norm.cpp: clipping by the global norm of every gradient together,
// like attn::clip_grad_norm (torch.nn.utils.clip_grad_norm_); returns the norm before clipping.
double clip_grad_norm(std::span<const std::span<float>> grads, float max_norm);

}  // namespace ex09
