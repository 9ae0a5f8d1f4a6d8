// chapters/08_backprop/exercises/exercises.hpp: the exercises of chapter 08.
// Backward passes, each the mirror of a forward of an earlier chapter: it takes the upstream
// gradient dL/d(output) and returns the gradients of the inputs (and parameters); and the
// central differences every one of them is checked against.
// Each function is written in its own file beside this one. Check them with
// `build/default/bin/attn-check 08`.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "attn/ops/embedding_backward.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/linear.hpp"
#include "attn/core/xt.hpp"

namespace ex08 {

// ex08.1, ex08_1_softmax_backward.cpp: the backward of a row-wise softmax, y = softmax(x) over
// each row. From y and dy = dL/dy, dx = dL/dx, row by row, without forming a (cols, cols)
// Jacobian. Entries with y = 0 (masked) get dx = 0. Throws std::invalid_argument when y and dy
// differ in shape.
attn::Matrix softmax_backward(const attn::Matrix& y,
                              const attn::Matrix& dy);  // (N, S), (N, S) -> (N, S)

// ex08.2, ex08_2_linear_backward.cpp: the backward of y = x @ w + b (attn::linear). Returns fresh
// gradients dx (B, T, in), dw (in, out), db (out,), summed over all B * T rows. Throws
// std::invalid_argument when dy, x and w do not fit together.
attn::LinearGrads linear_backward(const attn::Tensor<3>& dy, const attn::Tensor<3>& x,
                                  const attn::Matrix& w);  // (B, T, out), (B, T, in), (in, out)

// ex08.3, ex08_3_layer_norm_backward.cpp: the backward of y = layer_norm(x, gamma, beta, eps)
// (biased variance, eps inside the square root). Returns dx (B, T, C), dgamma (C,), dbeta (C,).
// Throws std::invalid_argument when dy and x differ in shape or gamma is not (C,).
attn::LayerNormGrads<3> layer_norm_backward(const attn::Tensor<3>& dy, const attn::Tensor<3>& x,
                                            const attn::Vector& gamma, float eps = 1e-5f);

// What one head's backward returns.
struct AttentionGrads {
  attn::Matrix dq;  // (T, hs)
  attn::Matrix dk;  // (S, hs)
  attn::Matrix dv;  // (S, hs)
};

// ex08.4, ex08_4_attention_backward.cpp: the backward of one head,
// out = softmax(q k^T / sqrt(hs) [+ causal mask]) @ v (chapter 04). From dout = dL/dout and the
// forward's inputs, the gradients of q, k and v. Throws std::invalid_argument if the shapes do
// not fit together, or if causal is set and S != T.
AttentionGrads attention_backward(const attn::Matrix& dout, const attn::Matrix& q,
                                  const attn::Matrix& k, const attn::Matrix& v,
                                  bool causal);  // (T, hs), (T, hs), (S, hs), (S, hs)

// ex08.5, ex08_5_central_differences.cpp: the gradient checker's core, like
// attn::central_differences: the numerical gradient (n,) of a scalar function f of n doubles at
// x, by central differences with step h. Throws std::invalid_argument unless h is finite, > 0.
std::vector<double> central_differences(const std::function<double(std::span<const double>)>& f,
                                        std::span<const double> x, double h);

// ex08.6, ex08_6_tied_embedding_backward.cpp: the gradient of the embedding table wte (V, C)
// when the output head is tied to it, like attn::tied_embedding_backward: the lookup's dx
// (B, T, C) scattered onto the rows of the tokens (B, T), plus the head's dlogits^T @ h; and
// dh = dlogits @ wte (N, C). Throws std::invalid_argument for shapes that do not fit or ids
// outside [0, V).
attn::TiedEmbeddingGrads tied_embedding_backward(const attn::Tensor<3>& dx,
                                                 const xt::xtensor<int, 2>& tokens,
                                                 const attn::Matrix& dlogits, const attn::Matrix& h,
                                                 const attn::Matrix& wte);

}  // namespace ex08
