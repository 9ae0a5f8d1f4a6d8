// attn/train/train.hpp: training the causal language model (chapter 09).
// One step: a batch of B random windows -> forward keeping activations -> mean cross-entropy ->
// backward -> gradient clipping -> AdamW. Every few hundred steps the loss is estimated on both
// splits; a checkpoint keeps everything needed to continue the run bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attn/model/model.hpp"
#include "attn/ops/optim.hpp"
#include "attn/core/random.hpp"
#include "attn/io/text.hpp"
#include "attn/io/data.hpp"
#include "attn/core/xt.hpp"

namespace attn {

// How the weights start. gpt2: every matrix and embedding N(0, 0.02), LayerNorm (1, 0), zero
// biases (lm_init). pytorch: what the lecture's nn.Module defaults give: embeddings N(0, 1),
// a Linear (in, out) weight and bias U(-1/sqrt(in), 1/sqrt(in)), LayerNorm (1, 0).
enum class InitScheme { gpt2, pytorch };
InitScheme parse_init(std::string_view name);  // "gpt2" | "pytorch"
std::string_view init_name(InitScheme s);
LmWeights lm_init_with(Rng& rng, const ModelSpec& config, InitScheme scheme);

// How a step moves the weights. adamw: AdamW (optim.hpp), the lecture's optimizer. sgd: plain
// stochastic gradient descent, p -= lr * g (no momentum, no weight decay), for chapter 09's
// comparison of the two at equal steps.
enum class Optimizer { adamw, sgd };
Optimizer parse_optimizer(std::string_view name);  // "adamw" | "sgd"
std::string_view optimizer_name(Optimizer o);

struct TrainConfig {
  ModelSpec model;  // the architecture (block_size is T)
  InitScheme init = InitScheme::gpt2;
  std::size_t batch_size = 32;  // B, windows per step
  std::size_t steps = 2000;     // the run's last step (counted from its start)
  LrSchedule schedule;          // the learning rate at each step
  AdamWConfig adam;
  Optimizer optimizer = Optimizer::adamw;
  float grad_clip = 0.0f;           // max global gradient norm; 0 = off
  std::size_t eval_interval = 500;  // estimate the losses every this many steps (and at 0, end)
  std::size_t eval_iters = 200;     // batches per split per estimate
  std::uint64_t seed = 1337;        // weights and data
};

// The losses estimated at one step: the mean over eval_iters random batches of each split.
struct EvalRecord {
  std::size_t step;
  double train_loss;
  double val_loss;
};

// Everything a run owns. Weights, gradients and AdamW's two moments are four structs of the same
// shapes, so the optimizer walks them side by side (lm_parameters of each, in the same order).
struct TrainState {
  LmWeights weights;
  LmWeights grads;
  LmWeights adam_m;               // first moments
  LmWeights adam_v;               // second moments
  std::size_t step = 0;           // optimizer steps taken
  Rng data_rng;                   // draws the training batches
  std::vector<float> losses;      // the training loss of every step taken (before its update)
  std::vector<EvalRecord> evals;  // every estimate so far
  // Buffers reused from step to step (sized by the first step; a later step allocates nothing,
  // counted in test_train.cpp).
  LmCache cache;
  Batch batch;
  struct Views {  // spans into weights, grads, adam_m, adam_v (same order)
    std::vector<std::span<float>> p, g, m, v;
    std::vector<bool> decay;  // decays(rank) of each tensor
  } views;  // rebuilt by the step whenever a tensor has moved (a copy, fresh grads or moments)
};

// Fresh weights from config.seed, zero moments, step 0. Throws std::invalid_argument for a config
// that cannot be built (n_heads not dividing n_embd, a size of 0).
TrainState train_init(const TrainConfig& config);

struct StepResult {
  double loss;       // before the update
  double grad_norm;  // before clipping
  float lr;          // the learning rate used
};
// The generator step `step` (counted from 1) draws its dropout masks from: seeded from the run's
// seed and the step alone, so a resumed run drops the same values and the batches (data_rng)
// are the same with or without dropout.
Rng dropout_rng_for(std::uint64_t seed, std::size_t step);

// One optimizer step on the given batch (inputs and targets (B, T)): zero the gradients, forward
// (with config.model.dropout, masks from dropout_rng_for) and backward, clip, AdamW (or SGD).
// state.step goes up by one.
StepResult train_step_on(TrainState& state, const TrainConfig& config,
                         const xt::xtensor<int, 2>& inputs, const xt::xtensor<int, 2>& targets);
// The same on a batch drawn from `train_tokens` with state.data_rng.
StepResult train_step(TrainState& state, const TrainConfig& config,
                      std::span<const int> train_tokens);

// The lecture's estimate_loss: the mean loss over `iters` batches of B windows of T tokens from
// each split, drawn by a generator seeded from (seed, step), so an estimate never disturbs the
// training stream and a resumed run estimates the same numbers.
EvalRecord estimate_loss(const LmWeights& w, const ModelSpec& config, const Split& split,
                         std::size_t batch_size, std::size_t iters, std::uint64_t seed,
                         std::size_t step);
// The same, asked before each batch whether to stop (a Ctrl-C): then std::nullopt, the estimate
// cut short. An estimate of many batches takes long; a run that is told to stop need not wait.
std::optional<EvalRecord> estimate_loss_unless(const LmWeights& w, const ModelSpec& config,
                                               const Split& split, std::size_t batch_size,
                                               std::size_t iters, std::uint64_t seed,
                                               std::size_t step, const std::function<bool()>& stop);

}  // namespace attn

// How a run is saved and resumed: save_checkpoint, load_checkpoint (attn/train/checkpoint.hpp).
#include "attn/train/checkpoint.hpp"
