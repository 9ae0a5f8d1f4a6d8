// chapters/06_transformer_block/show.cpp: the narration of chapter 06. Each function prints what
// one section of main.cpp computed, and checks the sentences its numbers could contradict
// (attn::claim).
#include "show.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/term/narrate.hpp"
#include "attn/term/plot.hpp"
#include "attn/term/print.hpp"
#include "attn/ops/posenc.hpp"

namespace ch06 {

using attn::align_right;
using attn::num;

namespace {

constexpr std::size_t kSvgPositions = 100;  // positions in the SVG of the sinusoids
constexpr std::size_t kShownFeatures = 6;   // features of a token printed in section 1

// A table cell that never grows wider than 11 characters: fixed notation up to 99999.9999, then
// scientific ("1.536e+07"), so the columns of a long run stay apart.
std::string cell(double v) {
  if (std::isfinite(v) && std::abs(v) >= 1e5) return fmt::format("{:.3e}", v);
  return num(v);
}

std::string stats_text(const Stats& s) { return "mean " + num(s.mean) + ", std " + num(s.std); }

// The C features of token (b, t).
std::span<const float> token(const Tensor<3>& x, std::size_t b, std::size_t t) {
  return {&x(b, t, 0), x.shape()[2]};
}

// The first `count` features of token (b, t) as "[...]" (with ", ..." when there are more).
std::string token_text(const Tensor<3>& x, std::size_t b, std::size_t t, std::size_t count) {
  const std::size_t C = x.shape()[2];
  const std::size_t n = std::min(count, C);
  const std::string full = attn::format_vector(token(x, b, t).first(n));
  return n < C ? full.substr(0, full.size() - 1) + ", ...]" : full;
}

// The mean over queries t of 1 / (t + 1): the peak of uniform causal attention.
double uniform_peak(std::size_t T) {
  double sum = 0.0;
  for (std::size_t t = 0; t < T; ++t) sum += 1.0 / static_cast<double>(t + 1);
  return sum / static_cast<double>(T);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// 1. LayerNorm.
void show_layer_norm(const Setup& s, const LayerNormDemo& r) {
  attn::section(1, "LayerNorm");
  fmt::print(
      "LayerNorm works on one token at a time: it takes the C numbers of the token, removes their\n"
      "mean and divides by their standard deviation, then lets two learned vectors put a scale\n"
      "(gamma) and an offset (beta) back, feature by feature:\n"
      "  y = (x - mean) / sqrt(var + eps) * gamma + beta    mean, var over the C features\n"
      "var is the biased variance (divide by C) and eps = 1e-5 keeps a constant token finite.\n");
  fmt::print("{}", "one token, C = " + std::to_string(s.C) + " features (the first " +
                       std::to_string(std::min(kShownFeatures, s.C)) + " shown):\n");
  fmt::print("{}", "  x                      " + token_text(r.token, 0, 0, kShownFeatures) + "\n");
  fmt::print("{}", "                         " + stats_text(stats_of(token(r.token, 0, 0))) + "\n");
  fmt::print("{}", "  gamma = 1, beta = 0    " + token_text(r.normed, 0, 0, kShownFeatures) + "\n");
  fmt::print("{}",
             "                         " + stats_text(stats_of(token(r.normed, 0, 0))) + "\n");
  fmt::print("{}", "  gamma = 2, beta = 0.5  " + token_text(r.scaled, 0, 0, kShownFeatures) + "\n");
  fmt::print("{}",
             "                         " + stats_text(stats_of(token(r.scaled, 0, 0))) + "\n");
  const Stats ns = stats_of(token(r.normed, 0, 0));
  if (s.C > 1) {
    attn::claim(std::abs(ns.mean) < 1e-4 && std::abs(ns.std - 1.0) < 1e-3,
                "the normalised token has mean 0 and std 1");
    fmt::print("Whatever the scale of x, the normalised token has mean 0 and std 1;");
  } else {
    fmt::print(
        "With C = 1 a token is one number: minus its mean it is 0, whatever it was. (LayerNorm\n"
        "needs several features to keep anything.) Otherwise the normalised token has mean 0\n"
        "and std 1;");
  }
  fmt::print(
      " gamma and beta then\n"
      "choose the scale the next layer receives. A block starts with gamma = 1 and beta = 0, and\n"
      "training moves them. Unlike BatchNorm, nothing is shared between tokens or sequences, so a\n"
      "token is normalised the same way at training and at generation time.\n");
}

// 2. The feed-forward network and its activations.
void show_ffn(const Setup& s, const FfnDemo& r, const SvgDir& svg_dir) {
  attn::section(2, "The feed-forward network and its activations");
  fmt::print(
      "{}",
      "After attention has mixed information between positions, every token goes through the\n"
      "same small network on its own, the position-wise feed-forward network (FFN):\n"
      "  FFN(x) = act(x @ w1 + b1) @ w2 + b2    w1 (C, F), w2 (F, C), F = " +
          std::to_string(s.F / s.C) + "C = " + std::to_string(s.F) +
          "\n"
          "It widens each token to F features, bends them with a nonlinearity, and projects back.\n"
          "Three activations are common:\n"
          "  relu(x)      = max(0, x)\n"
          "  gelu(x)      = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))        (exact, PyTorch's "
          "default)\n"
          "  gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (GPT-2's "
          "approximation)\n");
  fmt::print("     x      relu      gelu   gelu_tanh   |gelu - gelu_tanh|\n");
  for (std::size_t i = 0; i < r.xs.size(); ++i) {
    const double diff =
        std::abs(static_cast<double>(r.gelu(0, 0, i)) - static_cast<double>(r.gelu_tanh(0, 0, i)));
    fmt::print("{}", align_right(num(r.xs[i], 1), 6) + align_right(num(r.relu(0, 0, i)), 10) +
                         align_right(num(r.gelu(0, 0, i)), 10) +
                         align_right(num(r.gelu_tanh(0, 0, i)), 12) +
                         align_right(num(diff, 7), 21) + "\n");
  }
  if (svg_dir) {  // the three activations over [-4, 3], from the same grid
    attn::Series relu_s{"relu", {}, {}}, gelu_s{"gelu (exact)", {}, {}},
        tanh_s{"gelu_tanh", {}, {}, true};
    for (std::size_t i = 2000; i <= 9000; i += 50) {  // x = -4.00 .. 3.00
      const double x = static_cast<double>(r.grid[i]);
      relu_s.x.push_back(x);
      relu_s.y.push_back(static_cast<double>(r.grid_relu.data()[i]));
      gelu_s.x.push_back(x);
      gelu_s.y.push_back(static_cast<double>(r.grid_gelu.data()[i]));
      tanh_s.x.push_back(x);
      tanh_s.y.push_back(static_cast<double>(r.grid_tanh.data()[i]));
    }
    attn::LineChartOptions chart;
    chart.title = "ReLU vs GELU: GELU lets small negative inputs through (minimum -0.17)";
    chart.x_label = "x";
    chart.y_label = "activation";
    chart.legend = attn::LineChartOptions::Legend::top_left;  // the curves rise on the right
    chart.width = 560;
    chart.height = 300;
    const auto path = *svg_dir / "gelu_relu.svg";
    attn::write_svg(path, attn::line_chart_svg({relu_s, gelu_s, tanh_s}, chart));
    fmt::print("{}", "(written to " + path.string() + ")\n");
  }
  fmt::print("{}", "max |gelu - gelu_tanh| over " + std::to_string(r.grid.size()) +
                       " points of [-6, 6]: " + num(r.worst, 7) + ", at x = " + num(r.worst_at, 3) +
                       "\n");
  fmt::print(
      "ReLU cuts every negative input to 0; GELU lets small negative values through (its minimum\n"
      "is about -0.17, near x = -0.75) and is smooth at 0. The tanh form was a cheaper stand-in\n"
      "for erf (GPT-2 was trained with it). The two differ by less than 5e-4: close, but not bit\n"
      "for bit, so a model should run with the activation it was trained with (--activation).\n");
  attn::claim(r.worst < 5e-4, "gelu and gelu_tanh differ by less than 5e-4");

  fmt::print("{}", "The FFN of this chapter's block, activation " +
                       std::string(attn::activation_name(s.activation)) + ":\n");
  fmt::print("{}", "  x " + attn::shape_str(r.x.shape()) + " @ w1 " + attn::shape_str(r.w1_shape) +
                       " + b1 -> " + attn::shape_str(r.hidden.shape()) + ", act, @ w2 " +
                       attn::shape_str(r.w2_shape) + " + b2 -> " + attn::shape_str(r.out.shape()) +
                       "\n");
  fmt::print("{}", "  input  " + stats_text(stats_of(r.x)) + "\n");
  fmt::print("{}", "  output " + stats_text(stats_of(r.out)) + "\n");
  const double ratio = stats_of(r.out).std / stats_of(r.x).std;
  fmt::print(
      "{}",
      "The weights start small (std 0.02), so a fresh FFN adds " +
          std::string(ratio < 0.5 ? "only a little" : "less than the token itself") +
          " to each token\n(its output std is " + num(ratio, 2) +
          " times the input's): the residual connection of the next\nsection carries the token "
          "itself.\n");
  attn::claim(ratio < 1.0, "a fresh FFN adds less than the token itself");
}

// 3. Residual connections, pre-norm and post-norm.
void show_residuals(const Setup& s, const Residuals& r) {
  attn::section(3, "Residual connections: pre-norm and post-norm");
  fmt::print(
      "A block has two sublayers, attention (mixes positions) and the FFN (transforms each\n"
      "token). Neither replaces its input: each ADDS its output to it, x = x + sublayer(...).\n"
      "This residual stream gives every layer a direct path to the output (and the gradient a\n"
      "direct path back), so blocks can be stacked deep. Where LayerNorm goes is a choice:\n"
      "  pre-norm  (GPT-2, the default):       x = x + attn(ln1(x));   x = x + ffn(ln2(x))\n"
      "  post-norm (the original Transformer): x = ln1(x + attn(x));   x = ln2(x + ffn(x))\n");
  fmt::print("Both on the same input and weights:\n");
  fmt::print("{}", "  input x           " + stats_text(stats_of(r.x)) + "\n");
  fmt::print("{}", "  pre-norm output   " + stats_text(stats_of(r.pre)) + ", max |out - x| " +
                       num(attn::max_abs_diff(r.pre, r.x)) + "\n");
  fmt::print("{}", "  post-norm output  " + stats_text(stats_of(r.post)) + ", max |out - x| " +
                       num(attn::max_abs_diff(r.post, r.x)) + "\n");
  // Post-norm: every token of the output has mean 0 and std 1 (gamma 1, beta 0 here).
  double worst_mean = 0.0, worst_std = 0.0;
  for (std::size_t b = 0; b < s.B; ++b)
    for (std::size_t t = 0; t < s.T; ++t) {
      const Stats ts = stats_of(token(r.post, b, t));
      worst_mean = std::max(worst_mean, std::abs(ts.mean));
      worst_std = std::max(worst_std, std::abs(ts.std - 1.0));
    }
  if (s.C > 1)
    attn::claim(worst_mean < 1e-4 && worst_std < 1e-3, "post-norm tokens: mean 0, std 1");
  attn::claim(attn::max_abs_diff(r.pre, r.x) < stats_of(r.x).std,
              "pre-norm adds small corrections");
  fmt::print(
      "{}",
      "Pre-norm leaves the residual stream itself un-normalised: the output is the input plus\n"
      "two small corrections, and LayerNorm only shapes what each sublayer reads. Post-norm\n"
      "normalises the stream after every addition, so its output has mean 0 and std 1 per\n"
      "token (times gamma, plus beta" +
          std::string(s.C > 1 ? "" : "; with C = 1, every output is beta") +
          "). Pre-norm trains more stably in deep stacks, because\n"
          "the identity path from input to output is never interrupted; a pre-norm model adds one\n"
          "final LayerNorm before the output layer (chapter 07).\n");
}

// 4. Positional encodings.
void show_positions(const Setup& s, const Positions& r) {
  attn::section(4, "Positional encodings");
  fmt::print(
      "Attention compares every query with every key by content only. Nothing in\n"
      "softmax(q k^T / sqrt(hs)) v says where a token sits, so without help a block sees its\n"
      "input as a set. Shuffle the tokens of an encoder block (no mask) and its outputs are\n"
      "shuffled the same way:\n");
  fmt::print("{}", "  block(reversed x) vs reversed(block(x)), max |difference|: " +
                       attn::difference_text(r.shuffled) + "\n");
  attn::claim(r.shuffled < 1e-4, "an encoder block's outputs are shuffled like its inputs");
  fmt::print(
      "(Any difference is float rounding: the same sums added in another order.) With the causal\n"
      "mask the outputs are no longer a shuffle of each other, but one causal block still reads\n"
      "the past as a set: query t sees keys 0..t in no particular order.");
  if (r.swap_shown) {
    fmt::print(
        " Swap tokens 0 and 1 and\n"
        "every output from position 2 on stays the same: \"dog bites man.\" and "
        "\"man bites dog.\"\n"
        "end in the same last vector after one block. Outputs 0 and 1 do change (position 1 now\n"
        "holds the other token), and a second block reads them, so after two blocks the order\n"
        "shows. Tokens 0 and 1 swapped, causal blocks, no positions, the same block twice (drawn\n"
        "with std 1 / sqrt(C), as in section 6, so that a block visibly changes its input):\n");
    fmt::print("{}", "  one block,  positions 2.." + std::to_string(s.T - 1) +
                         ", max |difference|: " + attn::difference_text(r.one) + "\n");
    fmt::print("{}", "  one block,  last position " + std::to_string(s.T - 1) +
                         ", max |difference|:    " + attn::difference_text(r.last_one) + "\n");
    fmt::print("{}", "  two blocks, last position " + std::to_string(s.T - 1) +
                         ", max |difference|:    " + attn::difference_text(r.last_two) + "\n");
    attn::claim(r.one < 1e-4, "after one causal block, positions 2.. stay the same");
    if (r.last_two > 100.0 * std::max(r.last_one, 1e-7)) {
      fmt::print(
          "One causal block is blind to the order of the past; a stack of them is not, but it\n"
          "only finds out indirectly, through what the earlier positions computed.\n");
    } else {
      fmt::print(
          "Here even two blocks barely tell the orders apart: the weights are small and the\n"
          "change at positions 0 and 1 is faint by the time it reaches the end.\n");
    }
  } else {
    fmt::print("{}", "\n(With T = " + std::to_string(s.T) +
                         " there is no position 2 to show it: run with --block-size 3 or more.)\n");
  }

  // The period of the slowest clock: pair i = C/2 - 1 turns at 1 / 10000^(2i / C) per position.
  const double slowest = 2.0 * 3.14159265358979323846 *
                         std::pow(10000.0, static_cast<double>(s.C - 2) / static_cast<double>(s.C));
  fmt::print(
      "{}",
      "\nThe fix is to add a vector that depends on the position to every token before the first\n"
      "block. The sinusoidal encoding of the original Transformer is fixed, not learned:\n"
      "  PE[p, 2i]   = sin(p / 10000^(2i / C))\n"
      "  PE[p, 2i+1] = cos(p / 10000^(2i / C))\n"
      "Each pair of columns is a clock turning at its own speed, from one radian per position\n"
      "(columns 0, 1: a full turn every 2 pi = 6.3 positions) to a full turn every\n"
      "2 pi 10000^((C - 2) / C) = " +
          num(slowest, 0) + " positions (the last pair, for C = " + std::to_string(s.C) +
          "). Nearby\n"
          "positions get similar rows, and PE[p + k] is a rotation of PE[p] by an angle that\n"
          "depends only on k, so relative offsets are easy for attention to read.\n");
  const Matrix& pe = r.pe;
  fmt::print("{}", "PE = sinusoidal_positions(" + std::to_string(pe.shape()[0]) + ", " +
                       std::to_string(s.C) + "), its first rows and columns:\n");
  const std::size_t show_rows = std::min<std::size_t>(4, pe.shape()[0]);
  const std::size_t show_cols = std::min<std::size_t>(6, s.C);
  attn::MatrixFormat format;
  for (std::size_t p = 0; p < show_rows; ++p) format.row_labels.push_back("p" + std::to_string(p));
  for (std::size_t c = 0; c < show_cols; ++c) format.col_labels.push_back("c" + std::to_string(c));
  fmt::print("{}", attn::format_matrix(
                       xt::view(pe, xt::range(0, show_rows), xt::range(0, show_cols)), format));

  const std::size_t map_cols = std::min<std::size_t>(32, s.C);
  attn::HeatmapOptions options;
  options.title = "PE rows 0.." + std::to_string(kPositionRows - 1) + " (positions), columns 0.." +
                  std::to_string(map_cols - 1) + " (features)";
  for (std::size_t p = 0; p < kPositionRows; ++p)
    options.row_labels.push_back("p" + std::to_string(p));
  options.vmin = -1.0f;
  options.vmax = 1.0f;
  const Matrix map = xt::view(pe, xt::range(0, kPositionRows), xt::range(0, map_cols));
  fmt::print("{}", attn::heatmap_text(map, options, attn::use_color(stdout)));
  fmt::print(
      "{}",
      "Read down a column: columns 0 and 1 repeat every 2 pi = 6.3 positions, each later pair\n"
      "more slowly" +
          std::string(map_cols < s.C ? "; the columns not drawn turn slower still (see the SVG)"
                                     : "") +
          ".\n");
  fmt::print(
      "{}",
      "With x + PE[0..T), the same encoder test: block(reversed x + PE) vs reversed(block(x + "
      "PE)),\n"
      "max |difference|: " +
          attn::difference_text(r.with_pe) +
          (r.with_pe > 1e-3 ? std::string(". Order now matters.\n")
           : s.T == 1       ? std::string(": with T = 1 there is no order to change.\n")
                            : std::string(": the positions changed little here.\n")));
  fmt::print(
      "Learned positions (GPT-2, chapter 07) are simply a (T_max, C) table of weights, wpe,\n"
      "started random (std 0.02) and trained like everything else, which cannot go beyond "
      "T_max.\n");
}

// 5. A shape trace through the block.
void show_trace(const Setup& s, const Trace& r) {
  attn::section(5, "One block, step by step");
  fmt::print(
      "{}",
      "block_forward with a trace: every step's name, the shape it produced and its statistics\n"
      "(" +
          std::string(attn::norm_name(s.norm)) + "-norm, causal, H = " + std::to_string(s.H) +
          " heads of hs = " + std::to_string(s.C / s.H) + ").\n");
  const auto row = [](std::string_view step, const std::string& shape, const std::string& what) {
    fmt::print("  {:<11}{:>13}   {}\n", step, shape, what);
  };
  row("step", "shape", "statistics");
  for (const TraceRow& t : r.rows) row(t.step, attn::shape_str(t.shape), stats_text(t.stats));
  fmt::print("{}", "  attention weights " + attn::shape_str(r.weights_shape) + " = (B, H, T, T)\n");
  fmt::print(
      "{}",
      "Inside \"attn\": q, k and v are " +
          attn::shape_str(std::array<std::size_t, 4>{s.B, s.H, s.T, s.C / s.H}) +
          " = (B, H, T, hs); the scores and weights are\n"
          "(B, H, T, T); the merged heads are (B, T, C) again before w_o. Every step but "
          "attention\n"
          "works token by token, and every step returns to (B, T, C): that is what lets blocks be\n"
          "stacked.\n");
}

// 6. Remove LayerNorm: feed the output back in, pass after pass.
void show_no_layer_norm(const Setup& s, const NoLayerNorm& r, const SvgDir& svg_dir) {
  attn::section(6, "Experiment: remove LayerNorm");
  fmt::print(
      "{}",
      "Feed the block's output back in as its input, " + std::to_string(s.passes) +
          " times (like a stack of identical blocks),\n"
          "once as it is and once with both LayerNorms replaced by the identity. After each pass:\n"
          "the mean and std of all activations, and how peaked attention is: the peak is the "
          "mean,\n"
          "over every query, of its largest weight (1 for one-hot attention, " +
          num(uniform_peak(s.T), 2) +
          " for uniform\n"
          "causal attention over T = " +
          std::to_string(s.T) + ").\n");
  fmt::print("{}",
             "Here the block's weights are drawn with std 1 / sqrt(C) = " + num(r.weight_std) +
                 ", the scale at which\n"
                 "x @ W keeps the size of x (at the initial std 0.02 a block barely changes its "
                 "input, and\n"
                 "both columns would crawl).\n");
  fmt::print("          with LayerNorm                 without LayerNorm\n");
  fmt::print("  pass      mean       std    peak          mean           std    peak\n");
  const std::size_t P = s.passes;
  for (std::size_t p = 0; p <= P; ++p) {
    const Stats& a = r.with[p];
    const Stats& b = r.without[p];
    fmt::print("{}", align_right(std::to_string(p), 6) + align_right(cell(a.mean), 10) +
                         align_right(cell(a.std), 10) +
                         align_right(p == 0 ? "" : num(r.peak_with[p - 1], 2), 8) +
                         align_right(cell(b.mean), 14) + align_right(cell(b.std), 14) +
                         (p == 0 ? "" : align_right(num(r.peak_without[p - 1], 2), 8)) + "\n");
  }
  const double last_with = r.with[P].std, previous_with = r.with[P - 1].std;
  const double last_without = r.without[P].std, previous_without = r.without[P - 1].std;
  if (r.overflow_pass != 0) {
    fmt::print("{}", "Without LayerNorm the activations overflowed float32 at pass " +
                         std::to_string(r.overflow_pass) + " (inf - inf = NaN).\n");
  } else if (P >= 2) {
    fmt::print("{}", "In the last pass the std grew by " + num(last_with - previous_with, 2) +
                         " (x" + num(last_with / previous_with, 2) + ") with LayerNorm and x" +
                         num(last_without / previous_without, 2) + " without.\n");
  }
  if (svg_dir) {
    attn::Series with_s{"with LayerNorm", {}, {}}, without_s{"without LayerNorm", {}, {}};
    for (std::size_t p = 0; p <= P; ++p) {
      with_s.x.push_back(static_cast<double>(p));
      with_s.y.push_back(r.with[p].std);
      without_s.x.push_back(static_cast<double>(p));
      without_s.y.push_back(r.without[p].std);
    }
    attn::LineChartOptions chart;
    chart.title = "Std of the activations after each pass (" +
                  std::string(attn::norm_name(s.norm)) + "-norm block), log scale";
    chart.x_label = "pass (the same block applied again)";
    chart.y_label = "std of all activations";
    chart.log_y = true;
    chart.legend = attn::LineChartOptions::Legend::top_left;  // both start low at pass 0
    chart.width = 560;
    chart.height = 300;
    const auto path = *svg_dir / "no_layernorm.svg";
    attn::write_svg(path, attn::line_chart_svg({with_s, without_s}, chart));
    fmt::print("{}", "(written to " + path.string() + ")\n");
  }
  // What the columns show, measured: the step of the std per pass with LayerNorm (largest over
  // smallest of the last half of the passes) and the growth factor without it.
  double step_lo = 1e30, step_hi = 0.0;
  for (std::size_t p = P / 2 + 1; p <= P; ++p) {
    const double step = r.with[p].std - r.with[p - 1].std;
    step_lo = std::min(step_lo, step);
    step_hi = std::max(step_hi, step);
  }
  const double factor_without = std::isfinite(last_without) ? last_without / previous_without : 0.0;
  const double factor_with = last_with / previous_with;
  if (s.norm == NormPlacement::pre) {
    fmt::print(
        "With LayerNorm every sublayer reads a normalised input, so each pass adds corrections\n"
        "of about the same size");
    if (P >= 4 && step_lo > 0.0 && step_hi < 1.5 * step_lo) {
      fmt::print("{}", ": over the last " + std::to_string(P - P / 2) +
                           " passes the std climbs by " + num(step_lo, 2) + " to " +
                           num(step_hi, 2) + " a pass,\nlinearly, not exponentially.");
    } else if (P < 4) {
      fmt::print(" (too few passes here to see the steady step;\ntry --passes 10).");
    } else {
      fmt::print("{}", "; here the steps still vary (" + num(step_lo, 2) + " to " +
                           num(step_hi, 2) + ").");
    }
    fmt::print(
        "\n(That drift is why a pre-norm model ends with one more LayerNorm, and why GPT-2 scales\n"
        "down the weights that write into the stream of a deep stack.)\n");
  } else {
    bool unit = s.C > 1;
    for (std::size_t p = 1; p <= P; ++p) unit = unit && std::abs(r.with[p].std - 1.0) < 1e-3;
    if (s.C > 1) attn::claim(unit, "post-norm keeps the std at 1");
    fmt::print(
        "With post-norm LayerNorm the stream itself is renormalised after every addition, so its\n"
        "std stays at 1 whatever the number of passes.\n");
  }
  fmt::print(
      "Without LayerNorm the sublayers read the raw stream: a stream twice as large gives\n"
      "corrections about twice as large, so every pass multiplies the scale by a factor");
  if (r.overflow_pass != 0 || (P >= 2 && factor_without > 1.5 && factor_without > factor_with)) {
    fmt::print(
        "{}", " and the\ngrowth is exponential" +
                  std::string(r.overflow_pass != 0
                                  ? ""
                                  : " (x" + num(factor_without, 2) + " in the last pass)") +
                  ". Attention's scores q . k grow with the\n"
                  "square of that scale, the softmax saturates towards one-hot (the peak column), "
                  "and its\n"
                  "gradient vanishes: a deep stack without normalisation is very hard to train.\n");
  } else {
    fmt::print("{}", ".\nHere, after " + std::to_string(P) + (P == 1 ? " pass" : " passes") +
                         ", the two columns have not parted yet: run more --passes to see the\n"
                         "exponential growth, and attention's peak head for one-hot.\n");
  }
}

// 7. Causality: the future cannot change the past.
void show_causality(const Setup& s, const Causality& r) {
  attn::section(7, "Causality check");
  fmt::print(
      "{}",
      "In a decoder block the only step that mixes positions is masked attention, and LayerNorm\n"
      "and the FFN work token by token, so output t may depend on inputs 0..t only. Replace the\n"
      "tokens at positions >= " +
          std::to_string(r.t0) + " by new random ones and compare the outputs:\n");
  fmt::print("  position   max |change| of the output\n");
  for (std::size_t t = 0; t < s.T; ++t) {
    fmt::print("{}", align_right(std::to_string(t), 10) + "   " +
                         (r.change[t] == 0.0 ? std::string("0") : num(r.change[t])) +
                         (t == r.t0 ? "   <- first changed input" : "") + "\n");
  }
  const double past = r.t0 == 0
                          ? 0.0
                          : *std::max_element(r.change.begin(),
                                              r.change.begin() + static_cast<std::ptrdiff_t>(r.t0));
  fmt::print(
      "{}",
      "Positions before " + std::to_string(r.t0) + ": " +
          (past == 0.0 ? std::string("bitwise identical, the future never leaks into the past.")
                       : "changed by up to " + num(past, 8) + ": the future leaks!") +
          "\n");
}

// 8. Parameters and FLOPs.
void show_cost(const Setup& s, const Cost& r) {
  attn::section(8, "Parameters and FLOPs");
  const std::size_t C = s.C, F = s.F;
  fmt::print("{}", "Parameters of one block, from the formulas (C = " + std::to_string(C) +
                       ", F = " + std::to_string(F) + "):\n");
  fmt::print("{}", "  attention   4 C^2 (w_q, w_k, w_v, w_o)      " +
                       align_right(std::to_string(r.attn_params), 10) + "\n");
  fmt::print("{}", "  FFN         2 C F + F + C (w1, b1, w2, b2)  " +
                       align_right(std::to_string(r.ffn_params), 10) + "\n");
  fmt::print("{}", "  LayerNorm   4 C (two gammas, two betas)     " +
                       align_right(std::to_string(r.ln_params), 10) + "\n");
  fmt::print("{}", "  block_param_count(C, F)                     " +
                       align_right(std::to_string(r.formula), 10) + "\n");
  fmt::print("{}", "  floats held by block_init's tensors         " +
                       align_right(std::to_string(r.counted), 10) + "   " +
                       (r.formula == r.counted ? "match" : "MISMATCH") + "\n");
  const auto share = [&](std::size_t part) {
    return num(100.0 * static_cast<double>(part) / static_cast<double>(r.formula), 1) + "%";
  };
  fmt::print("{}", "The FFN holds " + share(r.ffn_params) + " of the block, attention " +
                       share(r.attn_params) + ", the LayerNorms " + share(r.ln_params) + "\n(" +
                       (F == 4 * C ? std::string("with F = 4C, about 12 C^2 in all")
                                   : "with F = " + std::to_string(F / C) + "C, about " +
                                         std::to_string(4 + 2 * F / C) +
                                         " C^2 in all; GPT-2's F = 4C gives 12 C^2") +
                       ").\n");

  fmt::print("{}", "FLOPs of one forward pass (a multiply-add counts 2), B = " +
                       std::to_string(s.B) + ", T = " + std::to_string(s.T) + ":\n");
  fmt::print("{}", "  projections and FFN   2 B T (4 C^2 + 2 C F)   " +
                       align_right(num(r.total - r.mixing, 0), 12) + "\n");
  fmt::print("{}", "  attention itself      4 B H T^2 hs            " +
                       align_right(num(r.mixing, 0), 12) + "\n");
  fmt::print("{}", "  block_forward_flops                           " +
                       align_right(num(r.total, 0), 12) + "\n");
  fmt::print("{}", "  the attention sublayer (mha_forward_flops)    " +
                       align_right(num(r.attention, 0), 12) + "\n");
  fmt::print("How the cost grows with T (same B, C, H, F):\n");
  fmt::print("       T    block FLOPs   per token   share of the T^2 term\n");
  for (const CostRow& row : r.by_length) {
    fmt::print("{}", align_right(std::to_string(row.T), 8) + align_right(num(row.flops, 0), 15) +
                         align_right(num(row.flops / static_cast<double>(s.B * row.T), 0), 12) +
                         align_right(num(100.0 * row.quadratic / row.flops, 1) + "%", 24) + "\n");
  }
  fmt::print(
      "{}",
      "Per token, the projections and the FFN cost the same at any length; attention's T^2 term\n"
      "grows with T and overtakes them at T = 2C + F = " +
          std::to_string(2 * C + F) +
          " for this width. Long contexts are\n"
          "expensive because of that term.\n");
}

// ---------------------------------------------------------------------------------------------
// --svg: the sinusoidal table and the block as a diagram.
namespace {

attn::HeatmapOptions positions_svg_options(const Matrix& pe) {
  attn::HeatmapOptions options;
  options.title = "sinusoidal positions (" + std::to_string(pe.shape()[0]) + ", " +
                  std::to_string(pe.shape()[1]) + "): rows = positions, columns = features";
  options.diverging = true;  // sin and cos: -1 blue, 0 white, +1 red
  // A label on every 10th position and every 8th feature; the others stay blank.
  for (std::size_t p = 0; p < pe.shape()[0]; ++p) {
    options.row_labels.push_back(p % 10 == 0 ? std::to_string(p) : "");
  }
  for (std::size_t c = 0; c < pe.shape()[1]; ++c) {
    options.col_labels.push_back(c % 8 == 0 ? std::to_string(c) : "");
  }
  options.vmin = -1.0f;
  options.vmax = 1.0f;
  options.annotate = false;
  return options;
}

// The block as a picture: pre-norm (GPT-2) or post-norm (the original Transformer), as --norm
// chose. Attention, the only step that mixes positions, is highlighted.
std::vector<attn::DiagramNode> block_diagram(const Setup& s) {
  using Kind = attn::DiagramNode::Kind;
  const std::string btc =
      "(B, T, C) = " + attn::shape_str(std::array<std::size_t, 3>{s.B, s.T, s.C});
  const std::string attn_note = "H = " + std::to_string(s.H) +
                                " heads of hs = " + std::to_string(s.C / s.H) + ", causal mask";
  const std::string ffn_note = "C -> F = " + std::to_string(s.F) + " -> C, " +
                               std::string(attn::activation_name(s.activation));
  const std::string ln_note = "over the C features of each token";
  std::vector<attn::DiagramNode> n;
  n.push_back({Kind::text, "x", btc, 0, false});
  if (s.norm == NormPlacement::pre) {
    n.push_back({Kind::box, "LayerNorm ln1", ln_note, 0, false});
    n.push_back({Kind::box, "multi-head self-attention", attn_note, 0, true});
    n.push_back({Kind::add, "", "", 1, false});  // x + attn(ln1(x))
    n.push_back({Kind::box, "LayerNorm ln2", ln_note, 0, false});
    n.push_back({Kind::box, "feed-forward network (FFN)", ffn_note, 0, false});
    n.push_back({Kind::add, "", "", 4, false});  // x + ffn(ln2(x))
  } else {
    n.push_back({Kind::box, "multi-head self-attention", attn_note, 0, true});
    n.push_back({Kind::add, "", "", 1, false});  // x + attn(x)
    n.push_back({Kind::box, "LayerNorm ln1", ln_note, 0, false});
    n.push_back({Kind::box, "feed-forward network (FFN)", ffn_note, 0, false});
    n.push_back({Kind::add, "", "", 4, false});  // x + ffn(x)
    n.push_back({Kind::box, "LayerNorm ln2", ln_note, 0, false});
  }
  n.push_back({Kind::text, "out", btc + ", the same shape: blocks stack", 0, false});
  return n;
}

}  // namespace

void write_block_svgs(const Setup& s, const std::filesystem::path& dir) {
  const Matrix pe_svg = attn::sinusoidal_positions(kSvgPositions, s.C);  // (100, C)
  const auto path = dir / "sinusoidal_positions.svg";
  attn::write_svg(path, attn::heatmap_svg(pe_svg, positions_svg_options(pe_svg)));
  const auto block_path = dir / "transformer_block.svg";
  const std::string title =
      std::string("One transformer block, ") + std::string(attn::norm_name(s.norm)) + "-norm";
  attn::write_svg(block_path, attn::diagram_svg(title, block_diagram(s)));
  fmt::print("{}", "\nwrote " + path.string() + " and " + block_path.string() + "\n");
}

void show_timing(const Setup& s, const Tensor<3>& x, const BlockWeights& w) {
  const attn::BlockConfig config = s.block();
  constexpr int kRepeats = 200;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRepeats; ++i) {
    const attn::BlockResult r = attn::block_forward(x, w, config);
  }
  const auto stop = std::chrono::steady_clock::now();
  const double us = std::chrono::duration<double, std::micro>(stop - start).count() / kRepeats;
  const double gflops = attn::block_forward_flops(s.B, s.T, s.C, s.F, s.H) / (us * 1e3);
  std::printf(
      "\ntiming: block_forward on (%zu, %zu, %zu): %.2f us per call, %.2f GFLOP/s "
      "(mean of %d calls)\n",
      s.B, s.T, s.C, us, gflops, kRepeats);
}

}  // namespace ch06
