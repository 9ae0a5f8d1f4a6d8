// attn/fast/layernorm.hpp: LayerNorm on the model's fast path (chapters 06-10). Same math as the
// reference attn::layer_norm and attn::layer_norm_backward (attn/ops/layernorm.hpp, the page's
// equations), written for speed: row sums in four interleaved double lanes, SIMD clones for
// AVX2, rows in fixed chunks over the library's threads (the result does not depend on the thread
// count), outputs written into caller-owned buffers. Tested equal to the reference
// (tests/common/test_fast_layernorm_attention.cpp).
#pragma once

#include <cstddef>

#include "attn/core/xt.hpp"
#include "attn/ops/layernorm.hpp"  // LayerNormCache: the mean and rstd are part of the math
#include "attn/fast/workspace.hpp"

namespace attn::fast {

// The kernel on raw rows: y[r] = LayerNorm(x[r]) for `rows` contiguous rows of C floats (C >= 1;
// x and y may be the same buffer). No checks, no allocation (chapter 10's generation loop).
void layer_norm_rows(const float* x, std::size_t rows, std::size_t C, const float* gamma,
                     const float* beta, float eps, float* y);

// x (..., C), gamma (C,), beta (C,) -> (..., C), like attn::layer_norm (same checks, same
// messages).
template <std::size_t N>
Tensor<N> layer_norm(const Tensor<N>& x, const Vector& gamma, const Vector& beta,
                     float eps = 1e-5f);
// The forward that fills `cache` (mean and rstd per row), written into `out` (resized only when
// its shape differs, so a training loop that passes the same buffer every step allocates
// nothing). `out` must not be `x`.
template <std::size_t N>
void layer_norm(const Tensor<N>& x, const Vector& gamma, const Vector& beta, float eps,
                LayerNormCache& cache, Tensor<N>& out);

// The backward of attn::layer_norm_backward: dx overwritten (resized if needed; it may be dy
// itself), dgamma and dbeta accumulated (+=). The mean is recomputed from x in double, rstd
// taken from the cache.
// Each chunk of rows sums its dgamma, dbeta terms in ws.sums.
template <std::size_t N>
void layer_norm_backward(const Tensor<N>& dy, const Tensor<N>& x, const Vector& gamma,
                         const LayerNormCache& cache, Tensor<N>& dx, Vector& dgamma, Vector& dbeta,
                         Workspace& ws);
// The same with a workspace of its own (allocated per call).
template <std::size_t N>
void layer_norm_backward(const Tensor<N>& dy, const Tensor<N>& x, const Vector& gamma,
                         const LayerNormCache& cache, Tensor<N>& dx, Vector& dgamma, Vector& dbeta);

extern template Tensor<2> layer_norm<2>(const Tensor<2>&, const Vector&, const Vector&, float);
extern template Tensor<3> layer_norm<3>(const Tensor<3>&, const Vector&, const Vector&, float);

}  // namespace attn::fast
