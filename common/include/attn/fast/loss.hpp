// attn/fast/loss.hpp: cross-entropy on the fast side (chapters 07-09's training step). The same
// numbers as the reference (attn/ops/loss.hpp), with the rows split in fixed chunks over the
// library's threads and the training step's buffers passed in (a Workspace); tested equal to the
// reference in tests/common/test_fast_ops.cpp.
#pragma once

#include <cstddef>
#include <span>

#include "attn/core/xt.hpp"
#include "attn/ops/loss.hpp"
#include "attn/fast/workspace.hpp"

namespace attn::fast {

// The mean loss over the N rows of logits (N, V). Throws std::invalid_argument like
// attn::cross_entropy.
double cross_entropy(const Matrix& logits, std::span<const int> targets);

// Both at once, sharing the softmax.
LossGrad cross_entropy_with_grad(const Matrix& logits, std::span<const int> targets);

// In place, for the training loop's reused buffers: returns the mean loss and overwrites logits
// (N, V) with dloss/dlogits.
double cross_entropy_backward_inplace(Matrix& logits, std::span<const int> targets);

// The same with the sums divided by `denominator` (>= N) instead of N: for one shard of a batch
// of `denominator` rows (lm_forward_backward), whose shards' losses and gradients then add up
// to the whole batch's mean and its gradient. The chunks' sums are kept in ws.sums.
double cross_entropy_backward_inplace(Matrix& logits, std::span<const int> targets,
                                      std::size_t denominator, Workspace& ws);

}  // namespace attn::fast
