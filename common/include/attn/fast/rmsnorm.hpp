// attn/fast/rmsnorm.hpp: RMSNorm on the fast path (chapter 11). The same math as the reference
// attn::rms_norm (attn/ops/rmsnorm.hpp, which defines RmsNormCache), computed the same way
// (sums in double, rounded once), so equal to it bit for bit; here the tokens are spread over the
// library's threads and the output, the cache and the gradients are caller-owned buffers (a
// training loop allocates nothing). Tested in tests/common/test_fast_parts.cpp.
#pragma once

#include "attn/core/xt.hpp"
#include "attn/ops/rmsnorm.hpp"
#include "attn/fast/workspace.hpp"

namespace attn::fast {

// y = x / rms(x) * gamma over the last axis, x (B, T, C), gamma (C,); y resized only when its
// shape differs, cache.rstd (B*T,) filled. y may not be x.
void rms_norm(const Tensor<3>& x, const Vector& gamma, double eps, RmsNormCache<float>& cache,
              Tensor<3>& y);
// The same on raw rows (chapter 10's generation step): x (rows, C) -> y (rows, C); y may be x.
void rms_norm_rows(const float* x, std::size_t rows, std::size_t C, const float* gamma, double eps,
                   float* y);
// dy -> dx (overwritten; dx may be dy); dgamma accumulates (+=), summed in ws.sums.
void rms_norm_backward(const Tensor<3>& dy, const Tensor<3>& x, const Vector& gamma,
                       const RmsNormCache<float>& cache, Tensor<3>& dx, Vector& dgamma,
                       Workspace& ws);
// The same with a workspace of its own (allocated per call).
void rms_norm_backward(const Tensor<3>& dy, const Tensor<3>& x, const Vector& gamma,
                       const RmsNormCache<float>& cache, Tensor<3>& dx, Vector& dgamma);

}  // namespace attn::fast
