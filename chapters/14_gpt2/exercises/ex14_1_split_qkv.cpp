// ex14.1: GPT-2's fused c_attn into the course's w_q, w_k, w_v.
//
// Goal: GPT-2 computes q, k and v with one matrix, c_attn.weight of shape (C, 3C): x @ c_attn is
// [q | k | v], three column blocks of C side by side. The course keeps three (C, C) matrices.
// Cut the fused matrix into them: w_q, w_k, w_v (C, C) each, in that order. Inside each block the
// heads are column blocks of hs = C / H, exactly the course's split_heads layout, so nothing
// else moves.
// Input: fused (C, 3C). Output: {w_q, w_k, w_v}.
// Contract: std::invalid_argument unless fused is (C, 3C) with C >= 1.
// The page's section "Walkthrough" derives it; docs/14-gpt2.md, exercise ex14.1, has hints.
#include <array>
#include <stdexcept>

#include "exercises.hpp"

namespace ex14 {

std::array<attn::Matrix, 3> split_qkv(const attn::Matrix& fused) {
  (void)fused;
  // TODO(ex14.1): return {w_q, w_k, w_v}, each (C, C): w_j = the columns [j C, (j + 1) C) of
  // fused (C, 3C); std::invalid_argument unless fused is (C, 3C) with C >= 1.
  throw std::logic_error("TODO ex14.1: split c_attn into w_q, w_k, w_v");
}

}  // namespace ex14
