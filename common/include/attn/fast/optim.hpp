// attn/fast/optim.hpp: the AdamW step as training runs it (chapter 09), the fast side of
// attn/ops/optim.hpp. Same contract and the same bits as the reference attn::adamw_update
// (tests/common/test_optim.cpp proves it); only the schedule of the work differs: eight elements
// at a time in SIMD lanes, and the elements shared out over the library's threads. The same for
// the global norm and clipping (attn::global_norm, attn::clip_grad_norm).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "attn/ops/optim.hpp"
#include "attn/fast/workspace.hpp"

namespace attn::fast {

// attn::adamw_update, eight lanes at a time. Throws std::invalid_argument like it.
void adamw_update(std::span<float> p, std::span<const float> g, std::span<float> m,
                  std::span<float> v, float lr, float weight_decay, std::size_t step,
                  const AdamWConfig& config);

// One AdamW step over every tensor of a model: p[i], g[i], m[i], v[i] side by side (the same
// order, the same lengths), decayed by config.weight_decay where decay[i] is true (else 0).
// Every element is independent: the elements of all the tensors are cut into equal runs, one to
// a thread, each element updated as above. Every length is checked before any is updated.
void adamw_update_all(std::span<const std::span<float>> p, std::span<const std::span<float>> g,
                      std::span<const std::span<float>> m, std::span<const std::span<float>> v,
                      const std::vector<bool>& decay, float lr, std::size_t step,
                      const AdamWConfig& config);

// Every tensor set to 0 (the gradients before a backward that adds into them), over the threads.
void zero_all(std::span<const std::span<float>> tensors);

// attn::global_norm's bits: each tensor's sum of squares on one thread (tensors side by side over
// the threads, their sums kept in ws.sums), then the sums added in tensor order.
double global_norm(std::span<const std::span<float>> grads, Workspace& ws);
double global_norm(std::span<const std::span<float>> grads);  // a workspace of its own
// attn::clip_grad_norm's bits and contract, with this global_norm and the scaling over the
// threads.
double clip_grad_norm(std::span<const std::span<float>> grads, float max_norm, Workspace& ws);
double clip_grad_norm(std::span<const std::span<float>> grads, float max_norm);

}  // namespace attn::fast
