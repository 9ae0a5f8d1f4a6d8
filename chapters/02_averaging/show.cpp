// chapters/02_averaging/show.cpp: the narration of chapter 02. Each function prints what one
// section of main.cpp computed, and checks the sentences its numbers could contradict
// (attn::claim).
#include "show.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "attn/ops/matmul.hpp"
#include "attn/term/narrate.hpp"
#include "attn/term/plot.hpp"
#include "attn/term/print.hpp"
#include "attn/core/random.hpp"

namespace ch02 {

namespace {

constexpr std::size_t kShowRows = 16;  // larger matrices print their top-left corner
constexpr std::size_t kShowCols = 16;
constexpr std::size_t kSvgMax = 32;  // the SVG figure shows at most 32 x 32 cells

// The top-left corner of m, at most rows x cols, as its own matrix.
Matrix corner(const Matrix& m, std::size_t rows, std::size_t cols) {
  rows = std::min(rows, m.shape()[0]);
  cols = std::min(cols, m.shape()[1]);
  return xt::view(m, xt::range(0, rows), xt::range(0, cols));
}

// Prints "name (R, C):" and the matrix, or its top-left corner when it is large.
void show(const std::string& name, const Matrix& m, int precision = 4) {
  const std::size_t R = m.shape()[0];
  const std::size_t C = m.shape()[1];
  if (R <= kShowRows && C <= kShowCols) {
    fmt::print("{} ({}, {}):\n", name, R, C);
  } else {
    fmt::print("{} ({}, {}), top-left corner:\n", name, R, C);
  }
  attn::MatrixFormat format;
  format.precision = precision;
  fmt::print("{}", attn::format_matrix(corner(m, kShowRows, kShowCols), format));
}

// 1.19e-07, or "0 (exactly)" so that a perfect match reads as one: the three ways differ by
// float rounding, and scientific notation shows how many digits agree (attn::difference_text
// prints 8 decimals, too few for 1e-8).
std::string difference_in_e_notation(double d) {
  return d == 0.0 ? std::string("0 (exactly)") : fmt::format("{:.2e}", d);
}

// Best wall-clock time of `f` over a few runs, in microseconds. Stops early once the runs
// have taken half a second, so a large --max-t stays bearable.
template <class F>
double best_time_us(F&& f) {
  using clock = std::chrono::steady_clock;
  double best = 0.0;
  double total = 0.0;
  for (int run = 0; run < 5 && total < 0.5e6; ++run) {
    const auto start = clock::now();
    const Matrix out = f();
    const double us = std::chrono::duration<double, std::micro>(clock::now() - start).count();
    if (out.size() == 0) fmt::print("(empty result)\n");  // keeps the work observable
    best = run == 0 ? us : std::min(best, us);
    total += us;
  }
  return best;
}

std::vector<std::string> position_labels(std::size_t n) {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < n; ++i) labels.push_back(std::to_string(i));
  return labels;
}

}  // namespace

void show_header(std::uint64_t seed, std::size_t T, std::size_t C, bool mine,
                 const std::string& corpus_origin) {
  fmt::print("02_averaging: the mathematical trick in attention\n");
  fmt::print("seed {}, T = {} time step{}, C = {} channel{}{}\n", seed, T, T == 1 ? "" : "s", C,
             C == 1 ? "" : "s", mine ? ", running YOUR exercises (--mine)" : "");
  if (!corpus_origin.empty()) {
    fmt::print("corpus: {}, read but not used (the tokens here are random vectors)\n",
               corpus_origin);
  }
}

// 1. Why average: the tokens and the goal.
void show_why(const ThreeWays& w, std::uint64_t seed) {
  const Matrix& x = w.x;
  const std::size_t T = x.shape()[0];
  attn::underlined_section(1, "Why average");
  fmt::print(
      "Chapter 01's bigram model predicts the next token from the current one alone. To use\n"
      "the context, position t needs a summary of tokens 0..t, and of nothing after t: the\n"
      "later tokens are what the model must predict. The simplest summary is their mean.\n"
      "Give each token a vector of C numbers (channels) instead of a single id; here T = {}\n"
      "tokens drawn from N(0, 1) with seed {}.\n\n",
      T, seed);
  show("x", x);
  fmt::print("\nGoal, for every t:  xbar[t] = (x[0] + x[1] + ... + x[t]) / (t + 1)\n");
}

// 2. Way 1: a loop.
void show_loop(const ThreeWays& w, bool mine) {
  const Matrix& x = w.x;
  const Matrix& xbar = w.xbar;
  const std::size_t T = x.shape()[0];
  attn::underlined_section(2, "Way 1: a loop");
  fmt::print(
      "Say it as it reads: for each t, add rows 0..t of x and divide by t + 1\n"
      "(attn::running_mean_loop).\n\n");
  show("xbar", xbar);
  const auto row_equal = [&](std::size_t t) {
    return xt::view(xbar, t, xt::all()) == xt::view(x, t, xt::all());
  };
  fmt::print("\nxbar[0] == x[0]: {}  (the mean of one token is that token)\n",
             row_equal(0) ? "true" : "false");
  if (!mine) attn::claim(row_equal(0), "the mean of one token is that token");
  if (T > 1) {
    fmt::print("xbar[1] == x[1]: {}  (row 1 is the mean of x[0] and x[1])\n",
               row_equal(1) ? "true" : "false");
  }
}

// 3. Way 2: one matrix product.
void show_matmul(const ThreeWays& w) {
  const std::size_t T = w.x.shape()[0];
  attn::underlined_section(3, "Way 2: one matrix product");
  // The example row: xbar[3] when there is one, else the last row.
  const std::size_t ex = std::min<std::size_t>(3, T - 1);
  std::string terms;
  for (std::size_t i = 0; i <= ex; ++i)
    terms += fmt::format("{}1/{} x[{}]", i == 0 ? "" : " + ", ex + 1, i);
  fmt::print(
      "A mean is a weighted sum with equal weights:\n"
      "  xbar[{}] = {}\n"
      "Write the weights of step t into row t of a (T, T) matrix W, and all the\n"
      "steps of the loop become one product W @ x. Start from ones and keep the lower\n"
      "triangle, so row t has ones in columns 0..t and zeros after:\n\n",
      ex, terms);
  show("tril(ones(T, T))", w.ones_tril, 0);
  fmt::print(
      "\nRow t sums to t + 1. Divide each row by its sum and every row sums to 1\n"
      "(attn::averaging_weights_tril):\n\n");
  show("W", w.w_tril);
  fmt::print("\nThe whole loop in one product, (T, T) @ (T, C) -> (T, C):\n\n");
  show("xbar2 = W @ x", w.xbar2);
  fmt::print(
      "\nThe zeros above the diagonal matter: they keep row t from reading tokens after t.\n"
      "That lower-triangular pattern is the causal mask.\n");
}

// 4. Way 3: softmax of masked zeros.
void show_softmax(const ThreeWays& w) {
  attn::underlined_section(4, "Way 3: softmax of masked zeros");
  fmt::print(
      "Dividing each row by its sum is what softmax does: softmax(z)_i = e^z_i / sum_j e^z_j.\n"
      "So give softmax scores of 0 where a token may look and -inf where it may not:\n"
      "e^0 = 1 makes the allowed weights equal, e^-inf = 0 removes the future exactly.\n\n");
  show("scores = zeros, -inf above the diagonal", w.scores, 0);
  fmt::print("\nThe softmax of each row (attn::averaging_weights_softmax) is W again:\n\n");
  show("W = softmax(scores)", w.w_softmax);
  fmt::print("\nand the same product gives the running mean a third time:\n\n");
  show("xbar3 = softmax(scores) @ x", w.xbar3);
}

// 5. The three ways agree, to float rounding.
void show_agreement(const ThreeWays& w, const Agreement& a, bool mine) {
  const std::size_t T = w.xbar.shape()[0];
  attn::underlined_section(5, "The three ways agree");
  fmt::print("max |xbar - xbar2|                 = {}\n",
             difference_in_e_notation(a.loop_vs_matmul));
  fmt::print("max |xbar - xbar3|                 = {}\n",
             difference_in_e_notation(a.loop_vs_softmax));
  fmt::print("max |W(tril) - W(softmax)|         = {}\n", difference_in_e_notation(a.weights));
  fmt::print("\n{}\n", a.loop_vs_matmul == 0.0 && a.loop_vs_softmax == 0.0
                           ? "Exactly equal this time, but do not count on it in general."
                           : "Not exactly zero, and that is fine.");
  const float ulps = a.epsilons;
  fmt::print(
      "Floats keep 24 bits, about 7 decimal digits, and every + and / rounds its result.\n"
      "The loop adds first and divides once; the matmul multiplies each token by 1/(t+1),\n"
      "which is itself rounded (1/3 is stored as {}), then adds. Same math,\n"
      "different rounding. Here the largest difference is {} float epsilons (the gap\n"
      "after 1.0, {:.2e}) of the largest mean: {}.\n"
      "Compare floats with a tolerance.\n",
      attn::format_number(1.0f / 3.0f, 10), attn::format_number(ulps, 1),
      static_cast<double>(std::numeric_limits<float>::epsilon()),
      ulps <= 1.0f    ? "within one rounding step"
      : ulps <= 64.0f ? "a few roundings' worth, as expected"
                      : "many roundings: T additions in a row each add their own");
  if (!mine) attn::claim(ulps <= 4.0f * static_cast<float>(T) + 4.0f, "differences are rounding");
}

// 6. What each way costs as T grows, counted from the formulas.
void show_costs(const CostTable& table) {
  attn::underlined_section(6, "What each way costs as T grows");
  fmt::print(
      "Counted from the formulas for C = {} (the same on every machine). The loop touches\n"
      "only the past; the matmul also multiplies the zeros above the diagonal; the softmax\n"
      "way adds one exp per score before the same matmul.\n\n",
      table.C);
  fmt::print("{:>6} | {:>13} {:>10} | {:>15} {:>13} | {:>12}\n", "T", "loop adds", "divides",
             "matmul mul-adds", "times a zero", "softmax exps");
  fmt::print("{}\n", std::string(6 + 3 + 13 + 1 + 10 + 3 + 15 + 1 + 13 + 3 + 12, '-'));
  for (std::size_t i = 0; i < table.sizes.size(); ++i) {
    const Cost& cost = table.costs[i];
    fmt::print("{:>6} | {:>13} {:>10} | {:>15} {:>13} | {:>12}\n", table.sizes[i],
               attn::grouped(cost.loop_adds), attn::grouped(cost.loop_divides),
               attn::grouped(cost.matmul_madds), attn::grouped(cost.matmul_zeros),
               attn::grouped(cost.softmax_exps));
  }
  fmt::print(
      "\nOn paper, at T = {}, the matmul does {} times the loop's arithmetic ({}% of it\n"
      "multiplying by zero), and the softmax way adds T^2 exps on top. With the plain\n"
      "triple-loop attn::matmul of this course it is not faster either (try --timing).\n"
      "Attention uses it anyway: a matrix product is the operation that BLAS libraries and GPUs\n"
      "make fast, and, above all, W can hold any weights, not only 1/(t+1). That is what\n"
      "chapter 04 needs.\n",
      table.sizes.back(), attn::format_number(static_cast<float>(table.matmul_vs_loop), 2),
      attn::format_number(static_cast<float>(100.0 * table.zero_share), 1));
}

// 6, measured with --timing: each row is printed as soon as it is measured.
void show_timing(const Averaging& ops, std::uint64_t seed, const CostTable& table) {
  fmt::print("\nMeasured, best of up to 5 runs (building W included):\n");
  for (std::size_t t_size : table.sizes) {
    attn::Rng timing_rng(seed);
    const Matrix x_big = attn::randn(timing_rng, t_size, table.C);  // (T, C)
    const double loop_us = best_time_us([&] { return ops.running_mean_loop(x_big); });
    const double tril_us = best_time_us([&] {
      return attn::matmul(ops.weights_tril(t_size), x_big);  // (T, T) @ (T, C)
    });
    const double softmax_us = best_time_us([&] {
      return attn::matmul(ops.weights_softmax(t_size), x_big);  // (T, T) @ (T, C)
    });
    fmt::print("T = {}: loop {:.1f} us, matmul {:.1f} us, softmax way {:.1f} us\n", t_size, loop_us,
               tril_us, softmax_us);
  }
}

// 7. The weights as a picture (and an SVG figure with --svg).
void show_picture(const Matrix& w_softmax, const std::optional<std::filesystem::path>& svg_dir) {
  const std::size_t T = w_softmax.shape()[0];
  attn::underlined_section(7, "The weights as a picture");
  attn::HeatmapOptions map;
  const Matrix shown = corner(w_softmax, kShowRows, kShowRows);
  map.title = shown.shape()[0] < T
                  ? fmt::format(
                        "averaging weights, softmax of masked zeros (T = {}, top-left "
                        "{} x {})",
                        T, shown.shape()[0], shown.shape()[1])
                  : fmt::format("averaging weights, softmax of masked zeros (T = {})", T);
  map.row_labels = position_labels(shown.shape()[0]);
  map.col_labels = position_labels(shown.shape()[1]);
  map.vmin = 0.0f;
  map.vmax = 1.0f;
  fmt::print("{}", attn::heatmap_text(shown, map, attn::use_color(stdout)));
  fmt::print(
      "\nRow t (the query position) spreads its weight evenly over columns 0..t (the\n"
      "positions it may read){}. Every token here is\n"
      "treated alike, which throws information away. Chapter 03 looks closely at the\n"
      "masked softmax itself; chapter 04 replaces the zeros by scores computed from the data\n"
      "(query . key), so each position chooses which past tokens matter. Softmax, mask and\n"
      "matmul stay exactly as above.\n",
      T > 1 ? "; the blank upper triangle is the future" : "; with T = 1 there is no future");

  if (svg_dir) {
    attn::HeatmapOptions figure = map;
    const Matrix drawn = corner(w_softmax, kSvgMax, kSvgMax);
    figure.title = drawn.shape()[0] < T
                       ? fmt::format("averaging weights W (T = {}, first {} rows and columns)", T,
                                     drawn.shape()[0])
                       : fmt::format("averaging weights W = softmax(masked zeros), T = {}", T);
    figure.row_labels = position_labels(drawn.shape()[0]);
    figure.col_labels = position_labels(drawn.shape()[1]);
    figure.annotate = true;
    const auto path = *svg_dir / "averaging_weights.svg";
    attn::write_svg(path, attn::heatmap_svg(drawn, figure));
    fmt::print("\nwrote {}\n", path.string());
  }
}

}  // namespace ch02
