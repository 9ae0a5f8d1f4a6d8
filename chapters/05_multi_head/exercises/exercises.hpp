// chapters/05_multi_head/exercises/exercises.hpp: the exercises of chapter 05.
// Each function mirrors its reference in attn:: (attention.hpp) and is written in its own file
// beside this one. Check them with `build/default/bin/attn-check 05`.
#pragma once

#include <cstddef>

#include "attn/ops/attention.hpp"
#include "attn/core/xt.hpp"

namespace ex05 {

// ex05.1, ex05_1_split_heads.cpp: column block h of every position becomes head h.
// Throws std::invalid_argument when n_heads does not divide C.
attn::Tensor<4> split_heads(const attn::Tensor<3>& x,
                            std::size_t n_heads);  // (B, T, C) -> (B, H, T, hs), hs = C / H

// ex05.2, ex05_2_merge_heads.cpp: the inverse of split_heads, heads side by side again.
attn::Tensor<3> merge_heads(const attn::Tensor<4>& x);  // (B, H, T, hs) -> (B, T, H * hs)

// ex05.3, ex05_3_mha_forward.cpp: multi-head self-attention, the output only.
// Project with w_q, w_k, w_v, split into n_heads heads, attend, merge, project with w_o.
attn::Tensor<3> mha_forward(const attn::Tensor<3>& x, const attn::MhaWeights& w,
                            std::size_t n_heads, bool causal);  // (B, T, C) -> (B, T, C)

}  // namespace ex05
