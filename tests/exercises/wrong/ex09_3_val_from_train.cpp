// Wrong: both estimates drawn from the training split: the "val" loss never sees unseen text.
#include <stdexcept>

#include "exercises.hpp"

namespace ex09 {

attn::EvalRecord estimate_loss(const attn::LmWeights& w, const attn::ModelSpec& config,
                               const attn::Split& split, std::size_t batch_size, std::size_t iters,
                               std::uint64_t seed, std::size_t step) {
  if (iters == 0) throw std::invalid_argument("estimate_loss: iters must be >= 1");
  attn::Rng rng(seed + step, 202);
  double train = 0.0, val = 0.0;
  for (std::size_t i = 0; i < iters; ++i) {
    const attn::Batch b = attn::get_batch(split.train, batch_size, config.block_size, rng);
    train += attn::lm_loss(b.x, b.y, w, config);
  }
  for (std::size_t i = 0; i < iters; ++i) {
    const attn::Batch b = attn::get_batch(split.train, batch_size, config.block_size, rng);
    val += attn::lm_loss(b.x, b.y, w, config);
  }
  const double n = static_cast<double>(iters);
  return {step, train / n, val / n};
}

}  // namespace ex09
