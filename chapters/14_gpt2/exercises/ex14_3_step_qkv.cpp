// ex14.3: the new token's q, k, v in a KV-cache step, with GPT-2's c_attn bias.
//
// Goal: the full forward computes every position's q, k and v at once from the normed rows,
// with c_attn's weight (C, 3C) and bias (3C,): [q | k | v], three blocks of C. A KV-cache step
// (chapter 10) computes them for the one new token only, appends its k and v to the cache and
// attends with its q. For the cache to hold what the full forward would, the step's three rows
// must be exactly the full forward's rows for that position, biases included.
// Input: h (C,), the new token's row after ln_1; c_attn_w (C, 3C); c_attn_b (3C,).
// Output: {q, k, v}, each (C,), in that order: row t of the full forward's q, k, v when h is
// row t of its input.
// Contract: std::invalid_argument unless c_attn_w is (C, 3C) with C >= 1, h is (C,) and
// c_attn_b is (3C,). h is not changed.
// The page's section "The math" derives it; docs/14-gpt2.md, exercise ex14.3, has hints.
#include <array>
#include <stdexcept>

#include "exercises.hpp"

namespace ex14 {

std::array<attn::Vector, 3> step_qkv(const attn::Vector& h, const attn::Matrix& c_attn_w,
                                     const attn::Vector& c_attn_b) {
  (void)h;
  (void)c_attn_w;
  (void)c_attn_b;
  // TODO(ex14.3): return {q, k, v}, each (C,), the full forward's rows for this token;
  // std::invalid_argument unless the shapes agree with C >= 1.
  throw std::logic_error("TODO ex14.3: the step's q, k, v with c_attn's bias");
}

}  // namespace ex14
