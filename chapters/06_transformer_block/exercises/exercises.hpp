// chapters/06_transformer_block/exercises/exercises.hpp: the exercises of chapter 06.
// Each function mirrors its reference in attn:: (layernorm.hpp, ffn.hpp, block.hpp) and is
// written in its own file beside this one. Check them with `build/default/bin/attn-check 06`.
#pragma once

#include <cstddef>

#include "attn/model/block.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/core/xt.hpp"

namespace ex06 {

// ex06.1, ex06_1_layer_norm.cpp: normalise every token over its C features, then scale and shift.
// Biased variance (divide by C), eps inside the square root. Throws std::invalid_argument when
// gamma or beta is not (C,).
attn::Tensor<3> layer_norm(const attn::Tensor<3>& x, const attn::Vector& gamma,
                           const attn::Vector& beta,
                           float eps = 1e-5f);  // (B, T, C), (C,), (C,) -> (B, T, C)

// ex06.2, ex06_2_gelu.cpp: the exact GELU, x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)), elementwise.
attn::Tensor<3> gelu(const attn::Tensor<3>& x);  // (B, T, F) -> (B, T, F)

// ex06.3, ex06_3_ffn_forward.cpp: the position-wise feed-forward network.
// act(x @ w1 + b1) @ w2 + b2 with w1 (C, F), b1 (F,), w2 (F, C), b2 (C,).
// Throws std::invalid_argument when the weights do not fit x.
attn::Tensor<3> ffn_forward(const attn::Tensor<3>& x, const attn::FfnWeights& w,
                            attn::Activation activation);  // (B, T, C) -> (B, T, C)

// ex06.4, ex06_4_block_forward.cpp: one pre-norm transformer block, the output only.
//   x = x + mha(ln1(x));  x = x + ffn(ln2(x))     (LayerNorm eps 1e-5)
attn::Tensor<3> block_forward_pre_norm(const attn::Tensor<3>& x, const attn::BlockWeights& w,
                                       std::size_t n_heads, bool causal,
                                       attn::Activation activation);  // (B, T, C) -> (B, T, C)

}  // namespace ex06
