// attn/layernorm.hpp: layer normalisation over the last axis (chapter 06).
//   y = (x - mean) / sqrt(var + eps) * gamma + beta
// mean and var over the C features of each token; var is the biased variance (divide by C), as
// in PyTorch's nn.LayerNorm; eps = 1e-5 by default.
#pragma once

#include "attn/xt.hpp"

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

}  // namespace attn
