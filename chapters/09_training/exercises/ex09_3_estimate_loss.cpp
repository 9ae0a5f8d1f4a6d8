// Exercise ex09.3: estimating the loss (chapter 09, docs/09-training.md).
//
// Goal: a less noisy loss than one batch's, on both splits.
//   weights, config, split, B, iters, seed, step -> {step, train_loss, val_loss}
//   rng = attn::Rng(seed + step, 202), shared by both splits, train first;
//   loss of a split = mean over `iters` batches (attn::get_batch with T = config.block_size) of
//   attn::lm_loss on that batch.
// The validation loss is the one that matters: the model never trains on that text.
// Throw std::invalid_argument if iters is 0.
//
// Check: build/default/bin/attn-check 09
#include <stdexcept>

#include "exercises.hpp"

namespace ex09 {

attn::EvalRecord estimate_loss(const attn::LmWeights& w, const attn::ModelSpec& config,
                               const attn::Split& split, std::size_t batch_size, std::size_t iters,
                               std::uint64_t seed, std::size_t step) {
  // TODO(ex09.3): the mean lm_loss over `iters` batches of the train split, then of the val split.
  throw std::logic_error("TODO ex09.3: estimate_loss");
}

}  // namespace ex09
