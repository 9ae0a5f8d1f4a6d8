// attn/ops/optim.hpp: how a gradient becomes a better model (chapter 09): AdamW, gradient
// clipping by the global norm, and the learning-rate schedule.
//   AdamW, per element, at step t = 1, 2, ... (torch.optim.AdamW's order of operations):
//     p -= lr * wd * p                                  decoupled weight decay, before Adam
//     m  = beta1 m + (1 - beta1) g                      first moment: a running mean of g
//     v  = beta2 v + (1 - beta2) g^2                    second moment: a running mean of g^2
//     p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// Dividing by sqrt(v) gives every parameter its own step size: about lr, whatever the scale of
// its gradient. The bias corrections 1 - beta^t undo the moments' start at zero.
// This is the reference (common/src/ops/optim.cpp, a plain loop); training runs
// attn::fast::adamw_update (attn/fast/optim.hpp), the same bits eight elements at a time.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace attn {

struct AdamWConfig {
  float beta1 = 0.9f;          // first-moment decay, e.g. 0.9
  float beta2 = 0.999f;        // second-moment decay, e.g. 0.999
  float eps = 1e-8f;           // added to sqrt(v): keeps the step finite where g was always 0
  float weight_decay = 0.01f;  // decoupled decay per unit of lr (torch's default 0.01)
};

// One AdamW step on one tensor: p, g, m, v of the same length n; `step` counts from 1 (this
// update's t); `weight_decay` is the config's or 0 for tensors that are not decayed. Throws
// std::invalid_argument when the lengths differ or step is 0.
void adamw_update(std::span<float> p, std::span<const float> g, std::span<float> m,
                  std::span<float> v, float lr, float weight_decay, std::size_t step,
                  const AdamWConfig& config);

// Whether a tensor of this rank is decayed: matrices and embeddings (rank >= 2) are, vectors
// (LayerNorm gains and biases, FFN biases) are not, like nanoGPT's two parameter groups.
bool decays(std::size_t rank);

// sqrt(sum over the tensors of each tensor's sum of g^2), accumulated in double: each tensor's
// sum element by element, then the tensors' sums in their order (attn::fast::global_norm gives
// the same bits with the tensors summed side by side).
double global_norm(std::span<const std::span<float>> grads);
// Gradient clipping by the global norm, like torch.nn.utils.clip_grad_norm_: when the norm is
// above max_norm every gradient is scaled by max_norm / (norm + 1e-6). max_norm = 0 turns it off.
// Returns the norm before clipping.
double clip_grad_norm(std::span<const std::span<float>> grads, float max_norm);

// The learning rate at step t (1-based). Constant: lr. Cosine: a linear warmup from lr / warmup
// to lr over the first `warmup` steps, then a half cosine from lr down to min_lr at `total`.
enum class LrShape { constant, cosine };
struct LrSchedule {
  float lr = 1e-3f;
  LrShape shape = LrShape::constant;
  std::size_t warmup = 0;  // cosine only
  std::size_t total = 0;   // cosine only: the last step
  float min_lr = 0.0f;     // cosine only
};
float learning_rate(const LrSchedule& schedule, std::size_t step);
LrShape parse_lr_shape(std::string_view name);  // "constant" | "cosine"

}  // namespace attn
