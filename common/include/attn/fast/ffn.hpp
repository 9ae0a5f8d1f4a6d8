// attn/fast/ffn.hpp: the feed-forward network and its activations on the fast side (chapters
// 06-09). The same contract as the reference (attn/ops/ffn.hpp, which defines Activation,
// FfnWeights and FfnCache); here GELU is an 8-lane vector kernel, the tokens go through in chunks
// of 128 spread over the library's threads, and the cache overloads allocate nothing once their
// buffers have the right shape. Tested equal to the reference in tests/common/test_fast_ops.cpp.
#pragma once

#include <span>

#include "attn/core/xt.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/fast/workspace.hpp"

namespace attn::fast {

// In place over a buffer.
void activate(std::span<float> values, Activation a);
// dx = dy * act'(x), element by element; dx may be dy. Throws std::invalid_argument when the
// sizes differ.
void activate_backward(std::span<const float> x, std::span<const float> dy, std::span<float> dx,
                       Activation a);

// x (B, T, C) -> (B, T, C). Throws std::invalid_argument naming mismatched shapes.
Tensor<3> ffn_forward(const Tensor<3>& x, const FfnWeights& w, Activation a = Activation::gelu);
// The forward that fills `cache` (same output, bit for bit, as the one above).
Tensor<3> ffn_forward(const Tensor<3>& x, const FfnWeights& w, Activation a, FfnCache& cache);
// The same, written into `y` (resized only when its shape differs: a training loop passing the
// same buffer every step allocates nothing). `y` must not be `x`; x may be cache.x.
void ffn_forward(const Tensor<3>& x, const FfnWeights& w, Activation a, FfnCache& cache,
                 Tensor<3>& y);
// dy (B, T, C) -> dx (B, T, C) (overwritten); grads.w1, b1, w2, b2 accumulate (+=). The hidden
// layer's gradient (B*T, F) is computed in ws.buffer.
void ffn_backward(const Tensor<3>& dy, const FfnCache& cache, const FfnWeights& w, Activation a,
                  Tensor<3>& dx, FfnWeights& grads, Workspace& ws);
// The same with a workspace of its own (allocated per call).
void ffn_backward(const Tensor<3>& dy, const FfnCache& cache, const FfnWeights& w, Activation a,
                  Tensor<3>& dx, FfnWeights& grads);

}  // namespace attn::fast
