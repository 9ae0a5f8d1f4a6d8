// Wrong: one batch per split instead of the mean over `iters` batches.
#include <stdexcept>

#include "exercises.hpp"

namespace ex09 {

attn::EvalRecord estimate_loss(const attn::LmWeights& w, const attn::ModelSpec& config,
                               const attn::Split& split, std::size_t batch_size, std::size_t iters,
                               std::uint64_t seed, std::size_t step) {
  if (iters == 0) throw std::invalid_argument("estimate_loss: iters must be >= 1");
  attn::Rng rng(seed + step, 202);
  const attn::Batch t = attn::get_batch(split.train, batch_size, config.block_size, rng);
  const attn::Batch v = attn::get_batch(split.val, batch_size, config.block_size, rng);
  return {step, attn::lm_loss(t.x, t.y, w, config), attn::lm_loss(v.x, v.y, w, config)};
}

}  // namespace ex09
