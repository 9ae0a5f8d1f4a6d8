// chapters/14_gpt2/exercises/exercises.hpp: the exercises of chapter 14, GPT-2 on the course's
// attention. Each function mirrors a piece of attn/model/gpt2.hpp and is written in its own file
// beside this one.
#pragma once

#include <array>

#include "attn/core/xt.hpp"

namespace ex14 {

// ex14.1, ex14_1_split_qkv.cpp: GPT-2's c_attn weight (C, 3C), x @ it = [q | k | v], cut into
// w_q, w_k, w_v (C, C) each, like attn::split_qkv. Throws std::invalid_argument unless the
// matrix is (C, 3C) with C >= 1.
std::array<attn::Matrix, 3> split_qkv(const attn::Matrix& fused);

}  // namespace ex14
