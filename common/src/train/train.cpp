// train.cpp: the initial weights, the training step and the loss estimates of chapter 09 (see
// train.hpp). Checkpoints are in checkpoint.cpp, AdamW in optim.cpp, the batches in data.cpp.
#include "attn/train/train.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <cmath>
#include <stdexcept>
#include <string>

#include "attn/core/check.hpp"
#include "attn/fast/optim.hpp"
#include "../model/model_internal.hpp"

namespace attn {

// ---------------------------------------------------------------------------------------------
// Initialisation.

InitScheme parse_init(std::string_view name) {
  if (name == "gpt2") return InitScheme::gpt2;
  if (name == "pytorch") return InitScheme::pytorch;
  throw std::invalid_argument("unknown init '" + std::string(name) + "': expected gpt2 or pytorch");
}

std::string_view init_name(InitScheme s) { return s == InitScheme::gpt2 ? "gpt2" : "pytorch"; }

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

LmWeights lm_init_with(Rng& rng, const ModelSpec& config, InitScheme scheme) {
  LmWeights w = lm_init(rng, config);
  if (scheme == InitScheme::gpt2) return w;
  // PyTorch's defaults, refilled tensor by tensor in lm_parameters' fixed order. nn.Embedding:
  // N(0, 1). nn.Linear(in, out): weight and bias U(-1/sqrt(in), 1/sqrt(in)). LayerNorm: (1, 0).
  const double C = static_cast<double>(config.n_embd);
  const double F = static_cast<double>(config.ffn_hidden);
  for (NamedTensor& t : lm_parameters(w)) {
    const std::string_view name = t.name;
    if (name == "wte" || name == "wpe") {
      for (float& x : t.values) x = rng.normal();
    } else if (ends_with(name, "gamma")) {
      std::fill(t.values.begin(), t.values.end(), 1.0f);
    } else if (ends_with(name, "beta")) {
      std::fill(t.values.begin(), t.values.end(), 0.0f);
    } else {
      // The input width of the Linear this tensor belongs to: F for the FFN's second layer.
      const bool from_hidden =
          ends_with(name, "w2") || ends_with(name, "b2") || ends_with(name, "w_down");
      const auto bound = static_cast<float>(1.0 / std::sqrt(from_hidden ? F : C));
      for (float& x : t.values) x = rng.uniform(-bound, bound);
    }
  }
  return w;
}

Optimizer parse_optimizer(std::string_view name) {
  if (name == "adamw") return Optimizer::adamw;
  if (name == "sgd") return Optimizer::sgd;
  throw std::invalid_argument("unknown optimizer '" + std::string(name) +
                              "': expected adamw or sgd");
}

std::string_view optimizer_name(Optimizer o) { return o == Optimizer::adamw ? "adamw" : "sgd"; }

// ---------------------------------------------------------------------------------------------
// The step.

Rng dropout_rng_for(std::uint64_t seed, std::size_t step) { return Rng(seed + step, 303); }

TrainState train_init(const TrainConfig& config) {
  require(config.batch_size >= 1, "attn::train_init", "batch_size must be at least 1");
  TrainState s;
  Rng init_rng(config.seed);
  s.weights = lm_init_with(init_rng, config.model, config.init);
  s.grads = lm_zeros_like(s.weights);
  s.adam_m = lm_zeros_like(s.weights);
  s.adam_v = lm_zeros_like(s.weights);
  s.data_rng = Rng(config.seed, 101);  // its own stream: the batches do not depend on the init
  s.losses.reserve(config.steps);
  return s;
}

namespace {

// The spans the step walks, rebuilt only when they are not the views of the state's tensors any
// more: lm_parameters allocates names, the step itself must not. Any tensor that has moved to
// another buffer makes them stale: a copied state, but also fresh gradients or moments assigned
// to this one (an optimizer reset, moments loaded), which keep the weights where they were. The
// step would then write through the old spans into freed buffers, so every span is checked
// against its tensor (pointers and sizes, nothing allocated).
void refresh_views(TrainState& s) {
  TrainState::Views& v = s.views;
  if (!v.p.empty() && detail::are_views_of(s.weights, v.p) && detail::are_views_of(s.grads, v.g) &&
      detail::are_views_of(s.adam_m, v.m) && detail::are_views_of(s.adam_v, v.v)) {
    return;
  }
  v = {};
  for (NamedTensor& t : lm_parameters(s.weights)) {
    v.p.push_back(t.values);
    v.decay.push_back(decays(t.rank));
  }
  for (NamedTensor& t : lm_parameters(s.grads)) v.g.push_back(t.values);
  for (NamedTensor& t : lm_parameters(s.adam_m)) v.m.push_back(t.values);
  for (NamedTensor& t : lm_parameters(s.adam_v)) v.v.push_back(t.values);
}

}  // namespace

StepResult train_step_on(TrainState& s, const TrainConfig& config,
                         const xt::xtensor<int, 2>& inputs, const xt::xtensor<int, 2>& targets) {
  refresh_views(s);
  const TrainState::Views& v = s.views;
  const std::size_t t = s.step + 1;
  // 1. Zero the gradients: lm_forward_backward adds into them.
  fast::zero_all(v.g);
  // (Dropout, when on, draws this step's masks from a generator of its own.)
  if (config.model.dropout > 0.0f) {
    s.cache.dropout_rng = dropout_rng_for(config.seed, t);
    s.cache.fixed_dropout_masks = false;
  }
  // 2. Forward (keeping what the backward needs) and backward: the loss, and every gradient.
  const double loss =
      lm_forward_backward(inputs, targets, s.weights, config.model, s.grads, s.cache);
  // 3. Clip the gradient's global norm (a rare huge gradient cannot throw the model far).
  //    (attn::fast: the reference clip_grad_norm's bits, the tensors summed side by side.)
  const double norm = fast::clip_grad_norm(v.g, config.grad_clip, s.cache.work.scratch);
  // 4. AdamW on every tensor at the schedule's lr; weight decay only on matrices and embeddings.
  //    (attn::fast: the reference adamw_update's bits, the elements shared out over the threads.)
  //    SGD instead: p -= lr * g, the same step size for every weight whatever its gradient's
  //    scale (AdamW divides by each weight's running gradient size).
  const float lr = learning_rate(config.schedule, t);
  if (config.optimizer == Optimizer::sgd) {
    for (std::size_t i = 0; i < v.p.size(); ++i)
      for (std::size_t j = 0; j < v.p[i].size(); ++j) v.p[i][j] -= lr * v.g[i][j];
  } else {
    fast::adamw_update_all(v.p, v.g, v.m, v.v, v.decay, lr, t, config.adam);
  }
  s.step = t;
  s.losses.push_back(static_cast<float>(loss));
  return {loss, norm, lr};
}

StepResult train_step(TrainState& s, const TrainConfig& config, std::span<const int> train_tokens) {
  get_batch(train_tokens, config.batch_size, config.model.block_size, s.data_rng, s.batch);
  return train_step_on(s, config, s.batch.x, s.batch.y);
}

std::optional<EvalRecord> estimate_loss_unless(const LmWeights& w, const ModelSpec& config,
                                               const Split& split, std::size_t batch_size,
                                               std::size_t iters, std::uint64_t seed,
                                               std::size_t step,
                                               const std::function<bool()>& stop) {
  require(iters >= 1, "attn::estimate_loss", "eval_iters must be at least 1");
  Rng rng(seed + step, 202);
  bool stopped = false;
  const auto mean_loss = [&](std::span<const int> data) {
    double sum = 0.0;
    for (std::size_t i = 0; i < iters && !stopped; ++i) {
      if (stop()) {
        stopped = true;
        break;
      }
      const Batch b = get_batch(data, batch_size, config.block_size, rng);
      sum += lm_loss(b.x, b.y, w, config);
    }
    return sum / static_cast<double>(iters);
  };
  const double train = mean_loss(split.train);
  const double val = mean_loss(split.val);
  if (stopped) return std::nullopt;
  return EvalRecord{step, train, val};
}

EvalRecord estimate_loss(const LmWeights& w, const ModelSpec& config, const Split& split,
                         std::size_t batch_size, std::size_t iters, std::uint64_t seed,
                         std::size_t step) {
  return *estimate_loss_unless(w, config, split, batch_size, iters, seed, step,
                               [] { return false; });
}

}  // namespace attn
