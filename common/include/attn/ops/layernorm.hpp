// attn/layernorm.hpp: layer normalisation over the last axis (chapter 06).
//   y = (x - mean) / sqrt(var + eps) * gamma + beta
// mean and var over the C features of each token; var is the biased variance (divide by C), as
// in PyTorch's nn.LayerNorm; eps = 1e-5 by default.
#pragma once

#include "attn/core/xt.hpp"

namespace attn {

// x (..., C), gamma (C,), beta (C,) -> (..., C). Throws std::invalid_argument naming the shapes.
template <std::size_t N>
Tensor<N> layer_norm(const Tensor<N>& x, const Vector& gamma, const Vector& beta,
                     float eps = 1e-5f);

// The kernel on raw rows: y[r] = LayerNorm(x[r]) for `rows` contiguous rows of C floats (C >= 1;
// x and y may be the same buffer). No checks, no allocation (chapter 10's generation loop).
void layer_norm_rows(const float* x, std::size_t rows, std::size_t C, const float* gamma,
                     const float* beta, float eps, float* y);

extern template Tensor<2> layer_norm<2>(const Tensor<2>&, const Vector&, const Vector&, float);
extern template Tensor<3> layer_norm<3>(const Tensor<3>&, const Vector&, const Vector&, float);

// What the forward keeps for the backward: per row (token) the mean and 1/sqrt(var + eps).
struct LayerNormCache {
  Vector mean;  // (rows,)
  Vector rstd;  // (rows,)
};
// The forward that also fills `cache` (same output as layer_norm).
template <std::size_t N>
Tensor<N> layer_norm(const Tensor<N>& x, const Vector& gamma, const Vector& beta, float eps,
                     LayerNormCache& cache);
// The same, written into `out` (resized only when its shape differs, so a training loop that
// passes the same buffer every step allocates nothing). `out` must not be `x`.
template <std::size_t N>
void layer_norm(const Tensor<N>& x, const Vector& gamma, const Vector& beta, float eps,
                LayerNormCache& cache, Tensor<N>& out);

// Backward (chapter 08). With xhat = (x - mean) * rstd and g = gamma * dy, per row of C:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))     (the three terms)
//   dgamma += sum_rows dy * xhat,   dbeta += sum_rows dy   (accumulated)
// Row sums in double, like the forward. dx is overwritten (resized if needed); it may be dy
// itself (each row is read before it is written). The mean is recomputed from x in double (a
// float mean near 1e4 is off by up to 5e-4); rstd is taken from the cache.
template <std::size_t N>
void layer_norm_backward(const Tensor<N>& dy, const Tensor<N>& x, const Vector& gamma,
                         const LayerNormCache& cache, Tensor<N>& dx, Vector& dgamma,
                         Vector& dbeta);
// The same recomputing mean and rstd from x, returning fresh gradients (chapters, tests).
template <std::size_t N>
struct LayerNormGrads {
  Tensor<N> dx;   // like x
  Vector dgamma;  // (C,)
  Vector dbeta;   // (C,)
};
template <std::size_t N>
LayerNormGrads<N> layer_norm_backward(const Tensor<N>& dy, const Tensor<N>& x, const Vector& gamma,
                                      float eps = 1e-5f);

}  // namespace attn
