// Exercise ex09.5: the learning-rate schedule (chapter 09, docs/09-training.md).
//
// Goal: like attn::learning_rate, the lr that step t of a run uses (the curve and why it has
// that shape: docs/09-training.md, "ex09.5 The learning-rate schedule").
//   in:  schedule {lr, shape, warmup, total, min_lr}, step t >= 1 (1 is the first step)
//   out: the learning rate at t
// The contract:
//   - constant: lr at every step;
//   - cosine: a linear warmup that reaches lr exactly at t = warmup (and is above 0 at t = 1),
//     then half a cosine period from lr (t = warmup) down to min_lr (t = total), smooth at both
//     ends; min_lr at every step from `total` on; warmup = 0 means the cosine starts at once.
//
// Check: build/default/bin/attn-check 09
#include <stdexcept>

#include "exercises.hpp"

namespace ex09 {

float learning_rate(const attn::LrSchedule& schedule, std::size_t step) {
  // TODO(ex09.5): the lr at step t: constant, or warmup then half a cosine down to min_lr.
  throw std::logic_error("TODO ex09.5: learning-rate schedule");
}

}  // namespace ex09
