// chapters/04_single_head/exercises/exercises.hpp: the exercises of chapter 04.
// One attention head on plain (T, hs) matrices: project the tokens, score every query against
// every key, turn the scores into weights and average the values. Each function is written in its
// own file beside this one. Check them with `build/default/bin/attn-check 04`.
#pragma once

#include "attn/core/xt.hpp"

namespace ex04 {

// ex04.1, ex04_1_project.cpp: a linear map without bias, y = x @ w (like attn::fast::matmul_blas).
// Throws std::invalid_argument if the columns of x are not the rows of w.
attn::Matrix project(const attn::Matrix& x, const attn::Matrix& w);  // (T, C) @ (C, hs) -> (T, hs)

// ex04.2, ex04_2_attention_scores.cpp: every query dotted with every key, scaled by 1/sqrt(hs).
// Throws std::invalid_argument if q and k do not have the same number of columns hs.
attn::Matrix attention_scores(const attn::Matrix& q,
                              const attn::Matrix& k);  // (T, hs), (S, hs) -> (T, S)

// What one head returns (attn::AttentionResult with B = H = 1).
struct AttentionResult {
  attn::Matrix out;      // (T, hs): row t is the weighted average of the value rows
  attn::Matrix weights;  // (T, S): row t is query t's distribution over the keys (the attention
                         // probabilities, `probs` in the library; `weights` is PyTorch's name)
};

// ex04.3, ex04_3_single_head_attention.cpp: softmax(q k^T / sqrt(hs) [+ causal mask]) @ v, like
// attn::scaled_dot_product_attention with B = H = 1. Throws std::invalid_argument if the shapes
// do not fit together, or if causal is set and S != T.
AttentionResult single_head_attention(const attn::Matrix& q, const attn::Matrix& k,
                                      const attn::Matrix& v,
                                      bool causal);  // (T, hs), (S, hs), (S, hs)

}  // namespace ex04
