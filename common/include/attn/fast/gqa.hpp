// attn/fast/gqa.hpp: chapter 11's attention on the fast path: grouped-query attention (H query
// heads sharing KV key/value heads), RoPE on q and k, a sliding window. The same math as the
// reference attn::gqa_forward / gqa_backward (attn/ops/gqa.hpp, which defines GqaConfig), run by
// the fast multi-head attention's machinery (fast/attention.cpp): one projection buffer q | k | v
// of row width C + 2 KV hs, RoPE turning q and k in place (fast/rope.hpp), query head h reading
// K/V head h / (H / KV) in place, the blocks of keys left of a window skipped. KV = H, no RoPE,
// no window is fast::mha_forward, bit for bit. The weights are chapter 05's MhaWeights with w_k
// and w_v (C, KV hs). Tested equal to the reference in tests/common/test_fast_parts.cpp.
#pragma once

#include "attn/core/xt.hpp"
#include "attn/fast/attention.hpp"  // MhaCache
#include "attn/ops/gqa.hpp"         // GqaConfig

namespace attn::fast {

// The evaluation forward: out (B, T, C), and the weights (B, H, T, T) when need_weights (else
// empty). Throws std::invalid_argument with one line naming a mis-shaped weight or a bad config.
MhaResult gqa_forward(const Tensor<3>& x, const MhaWeights& w, const GqaConfig& config,
                      bool need_weights = true);
// The training forward: fills `cache` (qkv is (B, T, C + 2 KV hs), q and k after RoPE), writes
// `out` (resized only when its shape differs). out must not be x; x may be cache.x. Without
// need_weights, from T = kFlashMinT on, one K/V head per query head and no window (RoPE alone):
// the flash kernel, cache.lse (B, H, T) kept in place of cache.weights (as fast::mha_forward).
// Scratch from `ws` (the overload without one makes its own per call).
void gqa_forward(const Tensor<3>& x, const MhaWeights& w, const GqaConfig& config, MhaCache& cache,
                 Tensor<3>& out, bool need_weights, Workspace& ws);
void gqa_forward(const Tensor<3>& x, const MhaWeights& w, const GqaConfig& config, MhaCache& cache,
                 Tensor<3>& out, bool need_weights = true);
// dout (B, T, C) -> dx (B, T, C) (overwritten); grads.w_q, w_k, w_v, w_o accumulate (+=).
void gqa_backward(const Tensor<3>& dout, const MhaCache& cache, const MhaWeights& w,
                  const GqaConfig& config, Tensor<3>& dx, MhaWeights& grads, Workspace& ws);
void gqa_backward(const Tensor<3>& dout, const MhaCache& cache, const MhaWeights& w,
                  const GqaConfig& config, Tensor<3>& dx, MhaWeights& grads);

}  // namespace attn::fast
