// attn/fast/swiglu.hpp: the SwiGLU feed-forward network on the fast path (chapter 11). The same
// contract as the reference (attn/ops/swiglu.hpp, which defines SwigluWeights and SwigluCache):
// BLAS GEMMs for the three matrices, one fused pass for h = silu(a) * u (and its backward), the
// tokens in chunks of 128 spread over the library's threads, caller-owned buffers (a training
// loop allocates nothing). silu uses a float exp (the reference's is in double): equal to it
// within the golden tolerance. Tested in tests/common/test_fast_parts.cpp.
#pragma once

#include "attn/core/xt.hpp"
#include "attn/ops/swiglu.hpp"
#include "attn/fast/workspace.hpp"

namespace attn::fast {

// x (B, T, C) -> y (B, T, C) (resized only when its shape differs), cache.x, a, u, h filled.
// y must not be x; x may be cache.x. Throws std::invalid_argument naming a mis-shaped weight.
void swiglu_forward(const Tensor<3>& x, const SwigluWeights<float>& w, SwigluCache<float>& cache,
                    Tensor<3>& y);
// The evaluation forward (no cache kept by the caller: a, u and h allocated per call, like y).
Tensor<3> swiglu_forward(const Tensor<3>& x, const SwigluWeights<float>& w);
// dy (B, T, C) -> dx (B, T, C) (overwritten); grads.w_gate, w_up, w_down accumulate (+=). The
// gradients of a and u, (B*T, F) each, are computed in ws.buffer.
void swiglu_backward(const Tensor<3>& dy, const SwigluCache<float>& cache,
                     const SwigluWeights<float>& w, Tensor<3>& dx, SwigluWeights<float>& grads,
                     Workspace& ws);
// The same with a workspace of its own (allocated per call).
void swiglu_backward(const Tensor<3>& dy, const SwigluCache<float>& cache,
                     const SwigluWeights<float>& w, Tensor<3>& dx, SwigluWeights<float>& grads);

}  // namespace attn::fast
