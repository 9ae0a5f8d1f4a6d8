// attn/fast/optim.hpp: the AdamW step as training runs it (chapter 09), the fast side of
// attn/train/optim.hpp. Same contract and the same bits as the reference attn::adamw_update
// (tests/common/test_optim.cpp proves it); only the schedule of the work differs: eight elements
// at a time in SIMD lanes, and whole tensors shared out over the library's threads.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "attn/train/optim.hpp"

namespace attn::fast {

// attn::adamw_update, eight lanes at a time. Throws std::invalid_argument like it.
void adamw_update(std::span<float> p, std::span<const float> g, std::span<float> m,
                  std::span<float> v, float lr, float weight_decay, std::size_t step,
                  const AdamWConfig& config);

// One AdamW step over every tensor of a model: p[i], g[i], m[i], v[i] side by side (the same
// order, the same lengths), decayed by config.weight_decay where decay[i] is true (else 0).
// Tensors are independent, so they are shared out over the threads; each is updated as above.
void adamw_update_all(std::span<const std::span<float>> p, std::span<const std::span<float>> g,
                      std::span<const std::span<float>> m, std::span<const std::span<float>> v,
                      const std::vector<bool>& decay, float lr, std::size_t step,
                      const AdamWConfig& config);

// Every tensor set to 0 (the gradients before a backward that adds into them), over the threads.
void zero_all(std::span<const std::span<float>> tensors);

}  // namespace attn::fast
