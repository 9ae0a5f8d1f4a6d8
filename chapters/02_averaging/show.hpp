// chapters/02_averaging/show.hpp: what chapter 02's sections compute (main.cpp fills these
// structs, in the page's order) and the functions of show.cpp that print them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "attn/core/xt.hpp"

namespace ch02 {

using attn::Matrix;

// The functions the walkthrough runs: the reference from attn::, or the learner's under --mine.
struct Averaging {
  Matrix (*running_mean_loop)(const Matrix& x);  // (T, C) -> (T, C)
  Matrix (*weights_tril)(std::size_t T);         // (T, T)
  Matrix (*weights_softmax)(std::size_t T);      // (T, T)
};

// Sections 1 to 4: the mean of the past, three ways.
struct ThreeWays {
  Matrix x;          // (T, C): T tokens of C channels, N(0, 1)
  Matrix xbar;       // (T, C): way 1, the loop
  Matrix ones_tril;  // (T, T): tril(ones(T, T))
  Matrix w_tril;     // (T, T): way 2's weights, each row of ones_tril divided by its sum
  Matrix xbar2;      // (T, C): way 2, W @ x
  Matrix scores;     // (T, T): zeros, -inf above the diagonal
  Matrix w_softmax;  // (T, T): way 3's weights, softmax(scores)
  Matrix xbar3;      // (T, C): way 3, softmax(scores) @ x
};

// 5. How far apart the three ways are.
struct Agreement {
  double loop_vs_matmul = 0.0;   // max |xbar - xbar2|
  double loop_vs_softmax = 0.0;  // max |xbar - xbar3|
  double weights = 0.0;          // max |W(tril) - W(softmax)|
  float epsilons = 0.0f;         // the larger difference, in float epsilons of the largest mean
};

// 6. Operation counts of each way for a (T, C) input, straight from the formulas.
struct Cost {
  std::uint64_t loop_adds;      // C * T(T+1)/2: row t adds t + 1 vectors of C numbers
  std::uint64_t loop_divides;   // T * C: one division per output number
  std::uint64_t matmul_madds;   // T * T * C: every (t, i, c) of W @ x
  std::uint64_t matmul_zeros;   // C * T(T-1)/2 of them multiply by a zero above the diagonal
  std::uint64_t softmax_exps;   // T * T: one exp per score, -inf ones included
  std::uint64_t softmax_madds;  // the same matmul as way 2
};

struct CostTable {
  std::size_t C = 0;
  std::vector<std::size_t> sizes;  // the values of T: 8, 64, 256, 1024 up to --max-t, then it
  std::vector<Cost> costs;         // one per size
  double matmul_vs_loop = 0.0;     // at the largest T: the matmul's mul-adds / the loop's work
  double zero_share = 0.0;         // at the largest T: the share of mul-adds that multiply a zero
};

// ---- show.cpp: one function per section, in teaching order.
void show_header(std::uint64_t seed, std::size_t T, std::size_t C, bool mine,
                 const std::string& corpus_origin);
void show_why(const ThreeWays& w, std::uint64_t seed);                   // 1
void show_loop(const ThreeWays& w, bool mine);                           // 2
void show_matmul(const ThreeWays& w);                                    // 3
void show_softmax(const ThreeWays& w);                                   // 4
void show_agreement(const ThreeWays& w, const Agreement& a, bool mine);  // 5
void show_costs(const CostTable& table);                                 // 6
// --timing: the three ways measured at every size of the table, best of up to 5 runs.
void show_timing(const Averaging& ops, std::uint64_t seed, const CostTable& table);
// 7. The weights as a heatmap; with --svg also averaging_weights.svg in that folder.
void show_picture(const Matrix& w_softmax, const std::optional<std::filesystem::path>& svg_dir);

}  // namespace ch02
