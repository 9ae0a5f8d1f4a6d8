// chapters/07_causal_lm/exercises/exercises.hpp: the exercises of chapter 07, the causal
// language model. Each function mirrors a step of attn::lm_forward / attn::lm_generate
// (model.hpp, sample.hpp) and is written in its own file beside this one. Check them with
// `build/default/bin/attn-check 07`.
#pragma once

#include <cstddef>
#include <span>

#include "attn/model/model.hpp"
#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"

namespace ex07 {

// ex07.1, ex07_1_embed.cpp: token embedding plus learned position, x[b, t] = wte[id] + wpe[t].
// Throws std::invalid_argument for a token outside [0, V), T > T_max, or wte and wpe of
// different widths.
attn::Tensor<3> embed(const xt::xtensor<int, 2>& tokens, const attn::Matrix& wte,
                      const attn::Matrix& wpe);  // (B, T), (V, C), (T_max, C) -> (B, T, C)

// ex07.2, ex07_2_tied_logits.cpp: the output projection tied to the embedding, x @ wte^T.
// Throws std::invalid_argument when the widths differ.
attn::Tensor<3> tied_logits(const attn::Tensor<3>& x,
                            const attn::Matrix& wte);  // (B, T, C), (V, C) -> (B, T, V)

// ex07.3, ex07_3_lm_forward.cpp: the whole decoder, like attn::lm_forward: embed, the blocks,
// the final LayerNorm, the tied projection.
attn::Tensor<3> lm_forward(const xt::xtensor<int, 2>& tokens, const attn::LmWeights& w,
                           const attn::ModelSpec& config);  // (B, T) -> (B, T, V)

// ex07.4, ex07_4_sample_top_k.cpp: keep the k largest logits (ties: lower id first), softmax of
// logits / temperature over them, draw one id. Like attn::sample_top_k: throws
// std::invalid_argument if top_k is 0 or above V, or the temperature is not > 0.
int sample_top_k(std::span<const float> logits, float temperature, std::size_t top_k,
                 attn::Rng& rng);  // (V,) -> an id in [0, V)

}  // namespace ex07
