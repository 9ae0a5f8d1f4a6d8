// chapters/03_masked_softmax/show.hpp: what chapter 03's sections compute (main.cpp fills these
// structs, in the page's order) and the functions of show.cpp that print them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "attn/core/xt.hpp"
#include "attn/ops/mask.hpp"

namespace ch03 {

using attn::Mask;
using attn::Matrix;

// 2. The causal mask in its two forms, and the masked scores.
struct CausalMask {
  Mask mask;        // (T, T) bool: tril(ones(T, T))
  Matrix additive;  // (T, T): 0 on and below the diagonal, -inf above
  Matrix masked;    // (T, T): scores + additive
};

// 3. The masked softmax, and what section 3 checks of the causal (T, T) weights: each row's sum
// (in double), and how many of the future entries (key s > query t) are exactly 0.
struct Weights {
  Matrix weights;               // (T, T): masked_softmax(scores, mask)
  std::vector<float> sums;      // (T): one per query
  std::size_t future = 0;       // entries above the diagonal
  std::size_t future_zero = 0;  // of which exactly 0
};

// 4. Why -inf, and what -1e9 changes: the same causal rule with -1e9 instead of -inf, on the
// ordinary rows and on a row where every key is masked (a padding query, say).
struct MinusBillion {
  Matrix with_1e9, with_inf;  // (T, T): softmax(scores + -1e9 mask), softmax(scores + -inf mask)
  double ordinary = 0.0;      // max |with_1e9 - with_inf|
  // (T, T) each, row 0 entirely masked: -1e9 mask, -inf mask, -inf with the naive softmax, and
  // the boolean mask through masked_softmax.
  Matrix pad_1e9, pad_inf, pad_naive, pad_bool;
  // Which keys the -1e9 row leaks to: score + (-1e9) rounds to a multiple of 64 near -1e9, and
  // the softmax gives all its weight to the largest of those (shared equally on a tie).
  std::vector<std::size_t> leak;  // keys with a visible share (exp(-64) and below do not show)
  bool all_small = true;          // every score of row 0 below 32 in size: all round to -1e9
  bool uniform = true;            // every key of row 0 got 1/T (checked when all of them leak)
};

// 5. Overflow and underflow: the naive and the stable softmax on large logits.
struct Overflow {
  Matrix big, small;                 // (1, 3) logits near 1000, (1, 2) logits near -1000
  Matrix naive_big, stable_big;      // (1, 3)
  Matrix naive_small, stable_small;  // (1, 2)
};

// 7. The trap: building the additive mask by multiplying with -inf, and the fix.
struct NanTrap {
  Matrix naive_mask;  // (T, T): triu(ones, 1) * -inf, NaN where attention is allowed
  Matrix broken;      // (T, T): softmax(scores + naive_mask)
  Matrix fixed_mask;  // (T, T): where(tril, 0, -inf)
  Matrix fixed;       // (T, T): softmax(scores + fixed_mask)
};

// --timing: the mean time of one masked_softmax call.
struct Timing {
  std::size_t rows = 0, cols = 0;  // the shape of the scores
  double us = 0.0;                 // microseconds per call
  int repeats = 0;
};

// ---- show.cpp: one function per section, in teaching order.
void show_header(std::size_t T, float scale, std::uint64_t seed, bool mine,
                 const std::string& corpus_origin);
void show_scores(const Matrix& scores, float scale);                        // 1
void show_mask(const CausalMask& m);                                        // 2
void show_weights(const Weights& w);                                        // 3
void show_minus_1e9(const Matrix& scores, const MinusBillion& m);           // 4
void show_overflow(const Overflow& o);                                      // 5
void show_forms_agree(const Matrix& weights, const Matrix& from_additive);  // 6
void show_nan_trap(const Matrix& weights, const NanTrap& trap);             // 7
// --svg: the causal weights and the weights of the trap as SVG files in `dir`.
void save_figures(const std::filesystem::path& dir, const Matrix& weights, const Matrix& broken);
void show_timing(const Timing& t);

}  // namespace ch03
