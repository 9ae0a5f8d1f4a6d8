// Chapter 02, the mathematical trick in attention: the mean of the past computed three ways
// (a loop, a lower-triangular matmul, a softmax of masked zeros) that agree to float precision.
// The math lives in common/src/ops/averaging.cpp; this program narrates it. Page:
// docs/02-averaging.md
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include "attn/ops/averaging.hpp"
#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/ops/mask.hpp"
#include "attn/ops/matmul.hpp"
#include "attn/term/narrate.hpp"
#include "attn/term/plot.hpp"
#include "attn/term/print.hpp"
#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"
#include "exercises.hpp"

namespace {

// The functions the walkthrough runs: the reference from attn::, or the learner's under --mine.
struct Averaging {
  attn::Matrix (*running_mean_loop)(const attn::Matrix& x);  // (T, C) -> (T, C)
  attn::Matrix (*weights_tril)(std::size_t T);               // (T, T)
  attn::Matrix (*weights_softmax)(std::size_t T);            // (T, T)
};
constexpr Averaging kReference{attn::running_mean_loop, attn::averaging_weights_tril,
                               attn::averaging_weights_softmax};
constexpr Averaging kMine{ex02::running_mean_loop, ex02::averaging_weights_tril,
                          ex02::averaging_weights_softmax};

constexpr std::size_t kMaxT = 2048;  // the cost table at T = C = max: seconds, not minutes
constexpr std::size_t kMaxChannels = 256;
constexpr std::size_t kShowRows = 16;  // larger matrices print their top-left corner
constexpr std::size_t kShowCols = 16;
constexpr std::size_t kSvgMax = 32;  // the SVG figure shows at most 32 x 32 cells

// The top-left corner of m, at most rows x cols, as its own matrix.
attn::Matrix corner(const attn::Matrix& m, std::size_t rows, std::size_t cols) {
  rows = std::min(rows, m.shape()[0]);
  cols = std::min(cols, m.shape()[1]);
  return xt::view(m, xt::range(0, rows), xt::range(0, cols));
}

// Prints "name (R, C):" and the matrix, or its top-left corner when it is large.
void show(const std::string& name, const attn::Matrix& m, int precision = 4) {
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

// Operation counts of each way for a (T, C) input, straight from the formulas.
struct Cost {
  std::uint64_t loop_adds;      // C * T(T+1)/2: row t adds t + 1 vectors of C numbers
  std::uint64_t loop_divides;   // T * C: one division per output number
  std::uint64_t matmul_madds;   // T * T * C: every (t, i, c) of W @ x
  std::uint64_t matmul_zeros;   // C * T(T-1)/2 of them multiply by a zero above the diagonal
  std::uint64_t softmax_exps;   // T * T: one exp per score, -inf ones included
  std::uint64_t softmax_madds;  // the same matmul as way 2
};

Cost cost_of(std::uint64_t T, std::uint64_t C) {
  return Cost{C * T * (T + 1) / 2, T * C, T * T * C, C * T * (T - 1) / 2, T * T, T * T * C};
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
    const attn::Matrix out = f();
    const double us = std::chrono::duration<double, std::micro>(clock::now() - start).count();
    if (out.size() == 0) fmt::print("(empty result)\n");  // keeps the work observable
    best = run == 0 ? us : std::min(best, us);
    total += us;
  }
  return best;
}

// The sizes of the cost table: 8, 64, 256, 1024 up to --max-t, then --max-t itself.
std::vector<std::size_t> table_sizes(std::size_t max_t) {
  std::vector<std::size_t> sizes;
  for (std::size_t T : {8, 64, 256, 1024}) {
    if (T < max_t) sizes.push_back(T);
  }
  sizes.push_back(max_t);
  return sizes;
}

std::vector<std::string> position_labels(std::size_t n) {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < n; ++i) labels.push_back(std::to_string(i));
  return labels;
}

// ---- The lesson: the mean of the past, three ways. Each section below prints one of them.
struct ThreeWays {
  attn::Matrix x;          // (T, C): T tokens of C channels, N(0, 1)
  attn::Matrix xbar;       // (T, C): way 1, the loop
  attn::Matrix ones_tril;  // (T, T): tril(ones(T, T))
  attn::Matrix w_tril;     // (T, T): way 2's weights, each row of ones_tril divided by its sum
  attn::Matrix xbar2;      // (T, C): way 2, W @ x
  attn::Matrix scores;     // (T, T): zeros, -inf above the diagonal
  attn::Matrix w_softmax;  // (T, T): way 3's weights, softmax(scores)
  attn::Matrix xbar3;      // (T, C): way 3, softmax(scores) @ x
};

ThreeWays three_ways(const Averaging& ops, std::uint64_t seed, std::size_t T, std::size_t C) {
  ThreeWays w;
  attn::Rng rng(seed);
  w.x = attn::randn(rng, T, C);  // (T, C)
  // Way 1: for each t, add rows 0..t of x and divide by t + 1.
  w.xbar = ops.running_mean_loop(w.x);  // (T, C) -> (T, C)
  // Way 2: the weights of step t in row t of a (T, T) matrix; all the steps are one product.
  w.ones_tril = xt::tril(xt::ones<float>({T, T}));  // (T, T)
  w.w_tril = ops.weights_tril(T);                   // (T, T)
  w.xbar2 = attn::matmul(w.w_tril, w.x);            // (T, T) @ (T, C) -> (T, C)
  // Way 3: the same weights as the softmax of masked zeros.
  w.scores = attn::causal_mask_additive(T);  // (T, T): zeros, -inf above
  w.w_softmax = ops.weights_softmax(T);      // (T, T)
  w.xbar3 = attn::matmul(w.w_softmax, w.x);  // (T, T) @ (T, C) -> (T, C)
  return w;
}

// 1. Why average: the tokens and the goal.
void show_why(const ThreeWays& w, std::uint64_t seed) {
  const attn::Matrix& x = w.x;
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
  const attn::Matrix& x = w.x;
  const attn::Matrix& xbar = w.xbar;
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
void show_agreement(const ThreeWays& w, bool mine) {
  const attn::Matrix& xbar = w.xbar;
  const std::size_t T = xbar.shape()[0];
  attn::underlined_section(5, "The three ways agree");
  const double d2 = attn::max_abs_diff(xbar, w.xbar2);
  const double d3 = attn::max_abs_diff(xbar, w.xbar3);
  const double dw = attn::max_abs_diff(w.w_tril, w.w_softmax);
  fmt::print("max |xbar - xbar2|                 = {}\n", difference_in_e_notation(d2));
  fmt::print("max |xbar - xbar3|                 = {}\n", difference_in_e_notation(d3));
  fmt::print("max |W(tril) - W(softmax)|         = {}\n", difference_in_e_notation(dw));
  fmt::print("\n{}\n", d2 == 0.0 && d3 == 0.0
                           ? "Exactly equal this time, but do not count on it in general."
                           : "Not exactly zero, and that is fine.");
  // How many float steps the largest difference is, relative to the size of the means.
  const float scale = std::max(xt::amax(xt::abs(xbar))(), std::numeric_limits<float>::min());
  const float ulps =
      static_cast<float>(std::max(d2, d3)) / (scale * std::numeric_limits<float>::epsilon());
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

// 6. What each way costs as T grows: counted from the formulas, and measured with --timing.
void show_costs(const Averaging& ops, const attn::CommonOptions& opts, std::size_t C,
                std::size_t max_t) {
  attn::underlined_section(6, "What each way costs as T grows");
  fmt::print(
      "Counted from the formulas for C = {} (the same on every machine). The loop touches\n"
      "only the past; the matmul also multiplies the zeros above the diagonal; the softmax\n"
      "way adds one exp per score before the same matmul.\n\n",
      C);
  const std::vector<std::size_t> sizes = table_sizes(max_t);
  fmt::print("{:>6} | {:>13} {:>10} | {:>15} {:>13} | {:>12}\n", "T", "loop adds", "divides",
             "matmul mul-adds", "times a zero", "softmax exps");
  fmt::print("{}\n", std::string(6 + 3 + 13 + 1 + 10 + 3 + 15 + 1 + 13 + 3 + 12, '-'));
  for (std::size_t t_size : sizes) {
    const Cost cost = cost_of(t_size, C);
    fmt::print("{:>6} | {:>13} {:>10} | {:>15} {:>13} | {:>12}\n", t_size,
               attn::grouped(cost.loop_adds), attn::grouped(cost.loop_divides),
               attn::grouped(cost.matmul_madds), attn::grouped(cost.matmul_zeros),
               attn::grouped(cost.softmax_exps));
  }
  const Cost big = cost_of(sizes.back(), C);
  const double ratio =
      static_cast<double>(big.matmul_madds) / static_cast<double>(big.loop_adds + big.loop_divides);
  const double zero_share =
      static_cast<double>(big.matmul_zeros) / static_cast<double>(big.matmul_madds);
  fmt::print(
      "\nOn paper, at T = {}, the matmul does {} times the loop's arithmetic ({}% of it\n"
      "multiplying by zero), and the softmax way adds T^2 exps on top. With the plain\n"
      "triple-loop attn::matmul of this course it is not faster either (try --timing).\n"
      "Attention uses it anyway: a matrix product is the operation that BLAS libraries and GPUs\n"
      "make fast, and, above all, W can hold any weights, not only 1/(t+1). That is what\n"
      "chapter 04 needs.\n",
      sizes.back(), attn::format_number(static_cast<float>(ratio), 2),
      attn::format_number(static_cast<float>(100.0 * zero_share), 1));
  if (opts.timing) {
    fmt::print("\nMeasured, best of up to 5 runs (building W included):\n");
    for (std::size_t t_size : sizes) {
      attn::Rng timing_rng(opts.seed);
      const attn::Matrix x_big = attn::randn(timing_rng, t_size, C);  // (T, C)
      const double loop_us = best_time_us([&] { return ops.running_mean_loop(x_big); });
      const double tril_us = best_time_us([&] {
        return attn::matmul(ops.weights_tril(t_size), x_big);  // (T, T) @ (T, C)
      });
      const double softmax_us = best_time_us([&] {
        return attn::matmul(ops.weights_softmax(t_size), x_big);  // (T, T) @ (T, C)
      });
      fmt::print("T = {}: loop {:.1f} us, matmul {:.1f} us, softmax way {:.1f} us\n", t_size,
                 loop_us, tril_us, softmax_us);
    }
  }
}

// 7. The weights as a picture (and an SVG figure with --svg).
void show_picture(const attn::Matrix& w_softmax, const attn::CommonOptions& opts) {
  const std::size_t T = w_softmax.shape()[0];
  attn::underlined_section(7, "The weights as a picture");
  attn::HeatmapOptions map;
  const attn::Matrix shown = corner(w_softmax, kShowRows, kShowRows);
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

  if (opts.svg_dir) {
    attn::HeatmapOptions figure = map;
    const attn::Matrix drawn = corner(w_softmax, kSvgMax, kSvgMax);
    figure.title = drawn.shape()[0] < T
                       ? fmt::format("averaging weights W (T = {}, first {} rows and columns)", T,
                                     drawn.shape()[0])
                       : fmt::format("averaging weights W = softmax(masked zeros), T = {}", T);
    figure.row_labels = position_labels(drawn.shape()[0]);
    figure.col_labels = position_labels(drawn.shape()[1]);
    figure.annotate = true;
    const auto path = *opts.svg_dir / "averaging_weights.svg";
    attn::write_svg(path, attn::heatmap_svg(drawn, figure));
    fmt::print("\nwrote {}\n", path.string());
  }
}

void walkthrough(const attn::CommonOptions& opts, std::size_t T, std::size_t C, std::size_t max_t) {
  if (max_t < T) {
    throw attn::UsageError(
        fmt::format("--max-t ({}) must be at least --block-size ({})", max_t, T));
  }
  const Averaging& ops = opts.mine ? kMine : kReference;
  // The tokens here are random vectors, so no text is needed; a bad --data is still an error.
  const std::string corpus_origin = opts.data ? attn::load_corpus(opts.data).origin : "";

  fmt::print("02_averaging: the mathematical trick in attention\n");
  fmt::print("seed {}, T = {} time step{}, C = {} channel{}{}\n", opts.seed, T, T == 1 ? "" : "s",
             C, C == 1 ? "" : "s", opts.mine ? ", running YOUR exercises (--mine)" : "");
  if (!corpus_origin.empty()) {
    fmt::print("corpus: {}, read but not used (the tokens here are random vectors)\n",
               corpus_origin);
  }

  const ThreeWays w = three_ways(ops, opts.seed, T, C);
  show_why(w, opts.seed);
  show_loop(w, opts.mine);
  show_matmul(w);
  show_softmax(w);
  show_agreement(w, opts.mine);
  show_costs(ops, opts, C, max_t);
  show_picture(w.w_softmax, opts);
}

}  // namespace

int main(int argc, char** argv) {
  attn::Cli cli("02_averaging",
                "Chapter 02, the mathematical trick in attention: the mean of the past three\n"
                "ways (a loop, a lower-triangular matmul, a softmax of masked zeros).");
  std::size_t T = 8;
  std::size_t C = 2;
  std::size_t max_t = 1024;
  cli.add_size("--block-size", T, "sequence length T of the example (default 8)", 1, kMaxT);
  cli.add_size("--n-embd", C, "channels C of each token vector (default 2)", 1, kMaxChannels);
  cli.add_size("--max-t", max_t, "largest T in the cost table (default 1024)", 1, kMaxT);
  cli.add_alias("time-steps", "block-size");  // the names before the lecture's vocabulary
  cli.add_alias("channels", "n-embd");
  return cli.run(argc, argv,
                 [&](const attn::CommonOptions& opts) { walkthrough(opts, T, C, max_t); });
}
