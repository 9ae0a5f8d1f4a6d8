// chapters/06_transformer_block/main.cpp: chapter 06, the transformer block.
// LayerNorm, the feed-forward network and its activations, residual connections (pre- and
// post-norm), positional encodings, then the block itself: its shape trace, what happens without
// LayerNorm, causality, and its cost. The math lives in common/src/ops/layernorm.cpp, ffn.cpp,
// posenc.cpp and block.cpp; this file only calls it and narrates.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/ops/attention.hpp"
#include "attn/model/block.hpp"
#include "attn/core/check.hpp"
#include "attn/io/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/linear.hpp"
#include "attn/io/narrate.hpp"
#include "attn/io/plot.hpp"
#include "attn/ops/posenc.hpp"
#include "attn/io/print.hpp"
#include "attn/core/random.hpp"
#include "exercises.hpp"

namespace {

using attn::Activation;
using attn::BlockConfig;
using attn::BlockWeights;
using attn::Matrix;
using attn::NormPlacement;
using attn::Tensor;
using attn::Vector;

constexpr std::size_t kPositionRows = 32;  // T_max of the sinusoidal table that is drawn
constexpr std::size_t kSvgPositions = 100;  // positions in the SVG of the sinusoids
constexpr std::size_t kShownFeatures = 6;  // features of a token printed in section 1
// Limits that keep the largest run near a second (about 30 block forwards).
constexpr std::size_t kMaxBatch = 4;
constexpr std::size_t kMaxTimeSteps = 64;
constexpr std::size_t kMaxChannels = 128;
constexpr std::size_t kMaxFfnMult = 8;
constexpr std::size_t kMaxPasses = 50;

// The sizes and choices of this run, from the command line.
struct Setup {
  std::size_t B = 1;    // batch
  std::size_t T = 10;   // time steps
  std::size_t C = 64;   // channels (model width)
  std::size_t H = 4;    // heads
  std::size_t F = 256;  // FFN hidden width, ffn_mult * C
  std::size_t passes = 10;
  Activation activation = Activation::gelu;
  NormPlacement norm = NormPlacement::pre;
};

// The four functions this chapter teaches: from attn:: (the reference) or, with --mine, from the
// learner's ex06:: exercises.
struct Kernels {
  Tensor<3> (*layer_norm)(const Tensor<3>& x, const Vector& gamma, const Vector& beta,
                          float eps);     // (B, T, C) -> (B, T, C)
  Tensor<3> (*gelu)(const Tensor<3>& x);  // elementwise
  Tensor<3> (*ffn_forward)(const Tensor<3>& x, const attn::FfnWeights& w,
                           Activation activation);  // (B, T, C) -> (B, T, C)
  Tensor<3> (*block_pre_norm)(const Tensor<3>& x, const BlockWeights& w, std::size_t n_heads,
                              bool causal, Activation activation);  // (B, T, C) -> (B, T, C)
};

Tensor<3> reference_gelu(const Tensor<3>& x) { return attn::activate<3>(x, Activation::gelu); }

Tensor<3> reference_block_pre_norm(const Tensor<3>& x, const BlockWeights& w, std::size_t n_heads,
                                   bool causal, Activation activation) {
  BlockConfig config;
  config.n_heads = n_heads;
  config.causal = causal;
  config.norm = NormPlacement::pre;
  config.activation = activation;
  return attn::block_forward(x, w, config).out;
}

Kernels reference_kernels() {
  return {&attn::layer_norm<3>, &reference_gelu, &attn::ffn_forward, &reference_block_pre_norm};
}

Kernels learner_kernels() {
  return {&ex06::layer_norm, &ex06::gelu, &ex06::ffn_forward, &ex06::block_forward_pre_norm};
}

// One block forward. The learner's block is pre-norm with LayerNorm only, so post-norm and the
// no-LayerNorm experiment always run the library's block_forward.
Tensor<3> run_block(const Kernels& k, const Tensor<3>& x, const BlockWeights& w,
                    const BlockConfig& config) {
  if (config.norm == NormPlacement::pre && config.use_layer_norm) {
    return k.block_pre_norm(x, w, config.n_heads, config.causal, config.activation);
  }
  return attn::block_forward(x, w, config).out;
}

void print(const std::string& text) { std::fputs(text.c_str(), stdout); }

std::string size_text(std::size_t n) { return std::to_string(n); }

std::string num(double v, int precision = 4) {
  return attn::format_number(static_cast<float>(v), precision);
}

// Right-aligns `text` in `width` columns.
std::string pad(const std::string& text, std::size_t width) {
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

// A table cell that never grows wider than 11 characters: fixed notation up to 99999.9999, then
// scientific ("1.536e+07"), so the columns of a long run stay apart.
std::string cell(double v) {
  if (std::isfinite(v) && std::abs(v) >= 1e5) return fmt::format("{:.3e}", v);
  return num(v);
}

template <class Shape>
std::string shape_text(const Shape& shape) {
  return attn::shape_str(shape);
}

// Mean and standard deviation (divide by N) of all the numbers of a tensor, in double.
struct Stats {
  double mean = 0.0;
  double std = 0.0;
};

template <class Tensor_>
Stats stats_of(const Tensor_& x) {
  Stats s;
  if (x.size() == 0) return s;
  double sum = 0.0;
  for (const float v : x) sum += static_cast<double>(v);
  s.mean = sum / static_cast<double>(x.size());
  double sq = 0.0;
  for (const float v : x)
    sq += (static_cast<double>(v) - s.mean) * (static_cast<double>(v) - s.mean);
  s.std = std::sqrt(sq / static_cast<double>(x.size()));
  return s;
}

std::string stats_text(const Stats& s) { return "mean " + num(s.mean) + ", std " + num(s.std); }

// Largest |a - b| over all entries, in double.
template <class Tensor_>
double max_abs_difference(const Tensor_& a, const Tensor_& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(static_cast<double>(a.data()[i]) - static_cast<double>(b.data()[i]));
    worst = std::max(worst, d);
  }
  return worst;
}

std::string difference_text(double d) { return d == 0.0 ? "0 (bitwise identical)" : num(d, 8); }

// y(b, t) = x(b, order[t]): the same tokens in another order (B, T, C).
Tensor<3> reorder_positions(const Tensor<3>& x, std::span<const std::size_t> order) {
  Tensor<3> y = x;
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t c = 0; c < C; ++c) y(b, t, c) = x(b, order[t], c);
  return y;
}

// x (B, T, C) + pe[0..T) (T, C), broadcast over the batch.
Tensor<3> add_positions(const Tensor<3>& x, const Matrix& pe) {
  const std::size_t T = x.shape()[1];
  const Matrix rows = xt::view(pe, xt::range(0, T), xt::all());  // (T, C)
  return x + rows;                                               // (B, T, C) + (T, C)
}

// A (1, 1, n) tensor holding `values`, for the elementwise functions.
Tensor<3> as_tensor(const std::vector<float>& values) {
  Tensor<3> x({1, 1, values.size()});
  std::copy(values.begin(), values.end(), x.begin());
  return x;
}

// The first `count` features of token (b, t) as "[...]" (with ", ..." when there are more).
std::string token_text(const Tensor<3>& x, std::size_t b, std::size_t t, std::size_t count) {
  const std::size_t C = x.shape()[2];
  const std::size_t n = std::min(count, C);
  const std::string full = attn::format_vector(std::span<const float>(&x(b, t, 0), n));
  return n < C ? full.substr(0, full.size() - 1) + ", ...]" : full;
}

// Mean and std of one token's C features.
Stats token_stats(const Tensor<3>& x, std::size_t b, std::size_t t) {
  const std::size_t C = x.shape()[2];
  const auto row = xt::adapt(&x(b, t, 0), C, xt::no_ownership(), std::array<std::size_t, 1>{C});
  return stats_of(row);
}

// ---------------------------------------------------------------------------------------------
// 1. LayerNorm.
void show_layer_norm(const Kernels& k, const Setup& s, attn::Rng& rng) {
  print("\n== 1. LayerNorm ==\n");
  print(
      "LayerNorm works on one token at a time: it takes the C numbers of the token, removes their\n"
      "mean and divides by their standard deviation, then lets two learned vectors put a scale\n"
      "(gamma) and an offset (beta) back, feature by feature:\n"
      "  y = (x - mean) / sqrt(var + eps) * gamma + beta    mean, var over the C features\n"
      "var is the biased variance (divide by C) and eps = 1e-5 keeps a constant token finite.\n");
  // One token with an off-centre, wide distribution: 3 * randn + 2.
  const Tensor<3> token = attn::randn<3>(rng, {1, 1, s.C}, 3.0f) + 2.0f;  // (1, 1, C)
  const Vector ones = xt::ones<float>({s.C});
  const Vector zeros = xt::zeros<float>({s.C});
  const Tensor<3> normed = k.layer_norm(token, ones, zeros, 1e-5f);  // (1, 1, C)
  const Vector gamma = xt::full_like(ones, 2.0f);
  const Vector beta = xt::full_like(ones, 0.5f);
  const Tensor<3> scaled = k.layer_norm(token, gamma, beta, 1e-5f);  // (1, 1, C)
  print("one token, C = " + size_text(s.C) + " features (the first " +
        size_text(std::min(kShownFeatures, s.C)) + " shown):\n");
  print("  x                      " + token_text(token, 0, 0, kShownFeatures) + "\n");
  print("                         " + stats_text(token_stats(token, 0, 0)) + "\n");
  print("  gamma = 1, beta = 0    " + token_text(normed, 0, 0, kShownFeatures) + "\n");
  print("                         " + stats_text(token_stats(normed, 0, 0)) + "\n");
  print("  gamma = 2, beta = 0.5  " + token_text(scaled, 0, 0, kShownFeatures) + "\n");
  print("                         " + stats_text(token_stats(scaled, 0, 0)) + "\n");
  const Stats ns = token_stats(normed, 0, 0);
  if (s.C > 1) {
    attn::claim(std::abs(ns.mean) < 1e-4 && std::abs(ns.std - 1.0) < 1e-3,
                "the normalised token has mean 0 and std 1");
    print("Whatever the scale of x, the normalised token has mean 0 and std 1;");
  } else {
    print(
        "With C = 1 a token is one number: minus its mean it is 0, whatever it was. (LayerNorm\n"
        "needs several features to keep anything.) Otherwise the normalised token has mean 0\n"
        "and std 1;");
  }
  print(
      " gamma and beta then\n"
      "choose the scale the next layer receives. A block starts with gamma = 1 and beta = 0, and\n"
      "training moves them. Unlike BatchNorm, nothing is shared between tokens or sequences, so a\n"
      "token is normalised the same way at training and at generation time.\n");
}

// 2. The feed-forward network and its activations.
void show_ffn(const Kernels& k, const Setup& s, const Tensor<3>& x, const BlockWeights& w,
              const std::optional<std::filesystem::path>& svg_dir) {
  print("\n== 2. The feed-forward network and its activations ==\n");
  print(
      "After attention has mixed information between positions, every token goes through the\n"
      "same small network on its own, the position-wise feed-forward network (FFN):\n"
      "  FFN(x) = act(x @ w1 + b1) @ w2 + b2    w1 (C, F), w2 (F, C), F = " +
      size_text(s.F / s.C) + "C = " + size_text(s.F) +
      "\n"
      "It widens each token to F features, bends them with a nonlinearity, and projects back.\n"
      "Three activations are common:\n"
      "  relu(x)      = max(0, x)\n"
      "  gelu(x)      = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))        (exact, PyTorch's "
      "default)\n"
      "  gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (GPT-2's "
      "approximation)\n");
  const std::vector<float> xs = {-3.0f, -2.0f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 2.0f, 3.0f};
  const Tensor<3> xt_ = as_tensor(xs);                                        // (1, 1, 9)
  const Tensor<3> relu = attn::activate<3>(xt_, Activation::relu);            // (1, 1, 9)
  const Tensor<3> gelu = k.gelu(xt_);                                         // (1, 1, 9)
  const Tensor<3> gelu_tanh = attn::activate<3>(xt_, Activation::gelu_tanh);  // (1, 1, 9)
  print("     x      relu      gelu   gelu_tanh   |gelu - gelu_tanh|\n");
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double diff =
        std::abs(static_cast<double>(gelu(0, 0, i)) - static_cast<double>(gelu_tanh(0, 0, i)));
    print(pad(num(xs[i], 1), 6) + pad(num(relu(0, 0, i)), 10) + pad(num(gelu(0, 0, i)), 10) +
          pad(num(gelu_tanh(0, 0, i)), 12) + pad(num(diff, 7), 21) + "\n");
  }
  // The two GELUs on a fine grid over [-6, 6].
  std::vector<float> grid;
  for (int i = -6000; i <= 6000; ++i) grid.push_back(static_cast<float>(i) / 1000.0f);
  const Tensor<3> g = as_tensor(grid);                                   // (1, 1, 12001)
  const Tensor<3> exact = k.gelu(g);                                     // (1, 1, 12001)
  const Tensor<3> approx = attn::activate<3>(g, Activation::gelu_tanh);  // (1, 1, 12001)
  double worst = 0.0;
  float worst_at = 0.0f;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const double d =
        std::abs(static_cast<double>(exact.data()[i]) - static_cast<double>(approx.data()[i]));
    if (d > worst) {
      worst = d;
      worst_at = grid[i];
    }
  }
  if (svg_dir) {  // the three activations over [-4, 3], from the same grid
    attn::Series relu_s{"relu", {}, {}}, gelu_s{"gelu (exact)", {}, {}},
        tanh_s{"gelu_tanh", {}, {}, true};
    const Tensor<3> relu_g = attn::activate<3>(g, Activation::relu);
    for (std::size_t i = 2000; i <= 9000; i += 50) {  // x = -4.00 .. 3.00
      relu_s.x.push_back(static_cast<double>(grid[i]));
      relu_s.y.push_back(static_cast<double>(relu_g.data()[i]));
      gelu_s.x.push_back(static_cast<double>(grid[i]));
      gelu_s.y.push_back(static_cast<double>(exact.data()[i]));
      tanh_s.x.push_back(static_cast<double>(grid[i]));
      tanh_s.y.push_back(static_cast<double>(approx.data()[i]));
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
    print("(written to " + path.string() + ")\n");
  }
  print("max |gelu - gelu_tanh| over " + size_text(grid.size()) +
        " points of [-6, 6]: " + num(worst, 7) + ", at x = " + num(worst_at, 3) + "\n");
  print(
      "ReLU cuts every negative input to 0; GELU lets small negative values through (its minimum\n"
      "is about -0.17, near x = -0.75) and is smooth at 0. The tanh form was a cheaper stand-in\n"
      "for erf (GPT-2 was trained with it). The two differ by less than 5e-4: close, but not bit\n"
      "for bit, so a model should run with the activation it was trained with (--activation).\n");
  attn::claim(worst < 5e-4, "gelu and gelu_tanh differ by less than 5e-4");

  const Tensor<3> hidden = attn::linear(x, w.ffn.w1, w.ffn.b1);  // (B, T, C) @ (C, F) -> (B, T, F)
  const Tensor<3> out = k.ffn_forward(x, w.ffn, s.activation);   // (B, T, C)
  print("The FFN of this chapter's block, activation " +
        std::string(attn::activation_name(s.activation)) + ":\n");
  print("  x " + shape_text(x.shape()) + " @ w1 " + shape_text(w.ffn.w1.shape()) + " + b1 -> " +
        shape_text(hidden.shape()) + ", act, @ w2 " + shape_text(w.ffn.w2.shape()) + " + b2 -> " +
        shape_text(out.shape()) + "\n");
  print("  input  " + stats_text(stats_of(x)) + "\n");
  print("  output " + stats_text(stats_of(out)) + "\n");
  const double ratio = stats_of(out).std / stats_of(x).std;
  print("The weights start small (std 0.02), so a fresh FFN adds " +
        std::string(ratio < 0.5 ? "only a little" : "less than the token itself") +
        " to each token\n(its output std is " + num(ratio, 2) +
        " times the input's): the residual connection of the next\nsection carries the token "
        "itself.\n");
  attn::claim(ratio < 1.0, "a fresh FFN adds less than the token itself");
}

// 3. Residual connections, pre-norm and post-norm.
void show_residuals(const Kernels& k, const Setup& s, const Tensor<3>& x, const BlockWeights& w) {
  print("\n== 3. Residual connections: pre-norm and post-norm ==\n");
  print(
      "A block has two sublayers, attention (mixes positions) and the FFN (transforms each\n"
      "token). Neither replaces its input: each ADDS its output to it, x = x + sublayer(...).\n"
      "This residual stream gives every layer a direct path to the output (and the gradient a\n"
      "direct path back), so blocks can be stacked deep. Where LayerNorm goes is a choice:\n"
      "  pre-norm  (GPT-2, the default):       x = x + attn(ln1(x));   x = x + ffn(ln2(x))\n"
      "  post-norm (the original Transformer): x = ln1(x + attn(x));   x = ln2(x + ffn(x))\n");
  BlockConfig config;
  config.n_heads = s.H;
  config.activation = s.activation;
  config.norm = NormPlacement::pre;
  const Tensor<3> pre = run_block(k, x, w, config);  // (B, T, C)
  config.norm = NormPlacement::post;
  const Tensor<3> post = run_block(k, x, w, config);  // (B, T, C)
  print("Both on the same input and weights:\n");
  print("  input x           " + stats_text(stats_of(x)) + "\n");
  print("  pre-norm output   " + stats_text(stats_of(pre)) + ", max |out - x| " +
        num(max_abs_difference(pre, x)) + "\n");
  print("  post-norm output  " + stats_text(stats_of(post)) + ", max |out - x| " +
        num(max_abs_difference(post, x)) + "\n");
  // Post-norm: every token of the output has mean 0 and std 1 (gamma 1, beta 0 here).
  double worst_mean = 0.0, worst_std = 0.0;
  for (std::size_t b = 0; b < s.B; ++b)
    for (std::size_t t = 0; t < s.T; ++t) {
      const Stats ts = token_stats(post, b, t);
      worst_mean = std::max(worst_mean, std::abs(ts.mean));
      worst_std = std::max(worst_std, std::abs(ts.std - 1.0));
    }
  if (s.C > 1) attn::claim(worst_mean < 1e-4 && worst_std < 1e-3, "post-norm tokens: mean 0, std 1");
  attn::claim(max_abs_difference(pre, x) < stats_of(x).std, "pre-norm adds small corrections");
  print(
      "Pre-norm leaves the residual stream itself un-normalised: the output is the input plus\n"
      "two small corrections, and LayerNorm only shapes what each sublayer reads. Post-norm\n"
      "normalises the stream after every addition, so its output has mean 0 and std 1 per\n"
      "token (times gamma, plus beta" + std::string(s.C > 1 ? "" : "; with C = 1, every output is beta") + "). Pre-norm trains more stably in deep stacks, because\n"
      "the identity path from input to output is never interrupted; a pre-norm model adds one\n"
      "final LayerNorm before the output layer (chapter 07).\n");
}

// 4. Positional encodings.
void show_positions(const Kernels& k, const Setup& s, const Tensor<3>& x, const BlockWeights& w,
                      std::uint64_t seed) {
  print("\n== 4. Positional encodings ==\n");
  print(
      "Attention compares every query with every key by content only. Nothing in\n"
      "softmax(q k^T / sqrt(hs)) v says where a token sits, so without help a block sees its\n"
      "input as a set. Shuffle the tokens of an encoder block (no mask) and its outputs are\n"
      "shuffled the same way:\n");
  std::vector<std::size_t> reversed(s.T);
  std::iota(reversed.rbegin(), reversed.rend(), std::size_t{0});  // T-1, ..., 1, 0
  BlockConfig encoder;
  encoder.n_heads = s.H;
  encoder.causal = false;
  encoder.activation = s.activation;
  encoder.norm = s.norm;
  const Tensor<3> y = run_block(k, x, w, encoder);  // (B, T, C)
  const Tensor<3> y_of_reversed = run_block(k, reorder_positions(x, reversed), w, encoder);
  const double shuffled = max_abs_difference(y_of_reversed, reorder_positions(y, reversed));
  print("  block(reversed x) vs reversed(block(x)), max |difference|: " +
        difference_text(shuffled) + "\n");
  attn::claim(shuffled < 1e-4, "an encoder block's outputs are shuffled like its inputs");
  print(
      "(Any difference is float rounding: the same sums added in another order.) With the causal\n"
      "mask the outputs are no longer a shuffle of each other, but one causal block still reads\n"
      "the past as a set: query t sees keys 0..t in no particular order.");
  if (s.T >= 3) {
    print(
        " Swap tokens 0 and 1 and\n"
        "every output from position 2 on stays the same: \"dog bites man.\" and \"man bites dog.\"\n"
        "end in the same last vector after one block. Outputs 0 and 1 do change (position 1 now\n"
        "holds the other token), and a second block reads them, so after two blocks the order\n"
        "shows. Tokens 0 and 1 swapped, causal blocks, no positions, the same block twice (drawn\n"
        "with std 1 / sqrt(C), as in section 6, so that a block visibly changes its input):\n");
    const float big_std = 1.0f / std::sqrt(static_cast<float>(s.C));
    attn::Rng block_rng(seed, 6);  // its own stream: no other number of the chapter moves
    BlockWeights wb = w;
    wb.attn = attn::mha_init(block_rng, s.C, big_std);
    wb.ffn = attn::ffn_init(block_rng, s.C, s.F, big_std);
    std::vector<std::size_t> swapped(s.T);
    std::iota(swapped.begin(), swapped.end(), std::size_t{0});
    std::swap(swapped[0], swapped[1]);
    BlockConfig decoder = encoder;
    decoder.causal = true;
    const Tensor<3> d = run_block(k, x, wb, decoder);  // (B, T, C)
    const Tensor<3> d_swapped = run_block(k, reorder_positions(x, swapped), wb, decoder);
    const Tensor<3> d2 = run_block(k, d, wb, decoder);                  // two blocks
    const Tensor<3> d2_swapped = run_block(k, d_swapped, wb, decoder);  // (B, T, C)
    const auto from = [&](const Tensor<3>& t, std::size_t first) {
      return Tensor<3>(xt::view(t, xt::all(), xt::range(first, s.T), xt::all()));
    };
    const double one = max_abs_difference(from(d, 2), from(d_swapped, 2));
    const double last_one = max_abs_difference(from(d, s.T - 1), from(d_swapped, s.T - 1));
    const double last_two = max_abs_difference(from(d2, s.T - 1), from(d2_swapped, s.T - 1));
    print("  one block,  positions 2.." + size_text(s.T - 1) + ", max |difference|: " +
          difference_text(one) + "\n");
    print("  one block,  last position " + size_text(s.T - 1) + ", max |difference|:    " +
          difference_text(last_one) + "\n");
    print("  two blocks, last position " + size_text(s.T - 1) + ", max |difference|:    " +
          difference_text(last_two) + "\n");
    attn::claim(one < 1e-4, "after one causal block, positions 2.. stay the same");
    if (last_two > 100.0 * std::max(last_one, 1e-7)) {
      print("One causal block is blind to the order of the past; a stack of them is not, but it\n"
            "only finds out indirectly, through what the earlier positions computed.\n");
    } else {
      print("Here even two blocks barely tell the orders apart: the weights are small and the\n"
            "change at positions 0 and 1 is faint by the time it reaches the end.\n");
    }
  } else {
    print("\n(With T = " + size_text(s.T) +
          " there is no position 2 to show it: run with --time-steps 3 or more.)\n");
  }

  // The period of the slowest clock: pair i = C/2 - 1 turns at 1 / 10000^(2i / C) per position.
  const double slowest = 2.0 * 3.14159265358979323846 *
                         std::pow(10000.0, static_cast<double>(s.C - 2) / static_cast<double>(s.C));
  print(
      "\nThe fix is to add a vector that depends on the position to every token before the first\n"
      "block. The sinusoidal encoding of the original Transformer is fixed, not learned:\n"
      "  PE[p, 2i]   = sin(p / 10000^(2i / C))\n"
      "  PE[p, 2i+1] = cos(p / 10000^(2i / C))\n"
      "Each pair of columns is a clock turning at its own speed, from one radian per position\n"
      "(columns 0, 1: a full turn every 2 pi = 6.3 positions) to a full turn every\n"
      "2 pi 10000^((C - 2) / C) = " + num(slowest, 0) + " positions (the last pair, for C = " +
      size_text(s.C) + "). Nearby\npositions get similar rows, and PE[p + k] is a rotation of PE[p] by an angle that\n"
      "depends only on k, so relative offsets are easy for attention to read.\n");
  const Matrix pe = attn::sinusoidal_positions(std::max(kPositionRows, s.T), s.C);  // (T_max, C)
  print("PE = sinusoidal_positions(" + size_text(pe.shape()[0]) + ", " + size_text(s.C) +
        "), its first rows and columns:\n");
  const std::size_t show_rows = std::min<std::size_t>(4, pe.shape()[0]);
  const std::size_t show_cols = std::min<std::size_t>(6, s.C);
  attn::MatrixFormat format;
  for (std::size_t p = 0; p < show_rows; ++p) format.row_labels.push_back("p" + size_text(p));
  for (std::size_t c = 0; c < show_cols; ++c) format.col_labels.push_back("c" + size_text(c));
  print(
      attn::format_matrix(xt::view(pe, xt::range(0, show_rows), xt::range(0, show_cols)), format));

  const std::size_t map_cols = std::min<std::size_t>(32, s.C);
  attn::HeatmapOptions options;
  options.title = "PE rows 0.." + size_text(kPositionRows - 1) + " (positions), columns 0.." +
                  size_text(map_cols - 1) + " (features)";
  for (std::size_t p = 0; p < kPositionRows; ++p) options.row_labels.push_back("p" + size_text(p));
  options.vmin = -1.0f;
  options.vmax = 1.0f;
  const Matrix map = xt::view(pe, xt::range(0, kPositionRows), xt::range(0, map_cols));
  print(attn::heatmap_text(map, options, attn::use_color(stdout)));
  print(
      "Read down a column: columns 0 and 1 repeat every 2 pi = 6.3 positions, each later pair\n"
      "more slowly" +
      std::string(map_cols < s.C ? "; the columns not drawn turn slower still (see the SVG)" : "") +
      ".\n");

  const Tensor<3> xp = add_positions(x, pe);  // (B, T, C)
  const Tensor<3> yp = run_block(k, xp, w, encoder);
  const Tensor<3> yp_of_reversed =
      run_block(k, add_positions(reorder_positions(x, reversed), pe), w, encoder);
  const double with_pe = max_abs_difference(yp_of_reversed, reorder_positions(yp, reversed));
  print(
      "With x + PE[0..T), the same encoder test: block(reversed x + PE) vs reversed(block(x + "
      "PE)),\n"
      "max |difference|: " +
      difference_text(with_pe) +
      (with_pe > 1e-3 ? std::string(". Order now matters.\n")
       : s.T == 1     ? std::string(": with T = 1 there is no order to change.\n")
                      : std::string(": the positions changed little here.\n")));
  print(
      "Learned positions (GPT-2, chapter 07) are simply a (T_max, C) table of weights, wpe,\n"
      "started random (std 0.02) and trained like everything else, which cannot go beyond "
      "T_max.\n");
}

// 5. A shape trace through the block.
void show_trace(const Setup& s, const Tensor<3>& x, const BlockWeights& w) {
  print("\n== 5. One block, step by step ==\n");
  BlockConfig config;
  config.n_heads = s.H;
  config.activation = s.activation;
  config.norm = s.norm;
  print(
      "block_forward with a trace: every step's name, the shape it produced and its statistics\n"
      "(" +
      std::string(attn::norm_name(s.norm)) + "-norm, causal, H = " + size_text(s.H) +
      " heads of hs = " + size_text(s.C / s.H) + ").\n");
  const auto row = [](std::string_view step, const std::string& shape, const std::string& what) {
    std::string name(step);
    name.resize(std::max<std::size_t>(name.size(), 11), ' ');
    print("  " + name + pad(shape, 13) + "   " + what + "\n");
  };
  row("step", "shape", "statistics");
  row("input", shape_text(x.shape()), stats_text(stats_of(x)));
  const attn::BlockTrace trace = [&](std::string_view step, const Tensor<3>& value) {
    row(step, shape_text(value.shape()), stats_text(stats_of(value)));
  };
  const attn::BlockResult r = attn::block_forward(x, w, config, trace);
  print("  attention weights " + shape_text(r.weights.shape()) + " = (B, H, T, T)\n");
  print("Inside \"attn\": q, k and v are " +
        shape_text(std::array<std::size_t, 4>{s.B, s.H, s.T, s.C / s.H}) +
        " = (B, H, T, hs); the scores and weights are\n"
        "(B, H, T, T); the merged heads are (B, T, C) again before w_o. Every step but attention\n"
        "works token by token, and every step returns to (B, T, C): that is what lets blocks be\n"
        "stacked.\n");
}

// The mean over queries t of 1 / (t + 1): the peak of uniform causal attention.
double uniform_peak(std::size_t T) {
  double sum = 0.0;
  for (std::size_t t = 0; t < T; ++t) sum += 1.0 / static_cast<double>(t + 1);
  return sum / static_cast<double>(T);
}

// 6. Remove LayerNorm: feed the output back in, pass after pass.
void show_no_layer_norm(const Setup& s, const Tensor<3>& x, attn::Rng& rng,
                        const std::optional<std::filesystem::path>& svg_dir) {
  print("\n== 6. Experiment: remove LayerNorm ==\n");
  print("Feed the block's output back in as its input, " + size_text(s.passes) +
        " times (like a stack of identical blocks),\n"
        "once as it is and once with both LayerNorms replaced by the identity. After each pass:\n"
        "the mean and std of all activations, and how peaked attention is: the peak is the mean,\n"
        "over every query, of its largest weight (1 for one-hot attention, " +
        num(uniform_peak(s.T), 2) +
        " for uniform\n"
        "causal attention over T = " +
        size_text(s.T) + ").\n");
  // At GPT-2's initial std of 0.02 a block changes its input by about 1% and both columns would
  // crawl. Trained weights are larger; std 1 / sqrt(C) is the scale at which x @ W keeps the size
  // of x.
  const float std = 1.0f / std::sqrt(static_cast<float>(s.C));
  BlockWeights w;
  w.attn = attn::mha_init(rng, s.C, std);
  w.ffn = attn::ffn_init(rng, s.C, s.F, std);
  w.ln1_gamma = xt::ones<float>({s.C});
  w.ln1_beta = xt::zeros<float>({s.C});
  w.ln2_gamma = w.ln1_gamma;
  w.ln2_beta = w.ln1_beta;
  print("Here the block's weights are drawn with std 1 / sqrt(C) = " + num(std) +
        ", the scale at which\n"
        "x @ W keeps the size of x (at the initial std 0.02 a block barely changes its input, and\n"
        "both columns would crawl).\n");
  BlockConfig with;
  with.n_heads = s.H;
  with.activation = s.activation;
  with.norm = s.norm;
  BlockConfig without = with;
  without.use_layer_norm = false;

  const auto peak = [](const Tensor<4>& weights) {  // (B, H, T, T) -> mean of the row maxima
    const std::size_t S = weights.shape()[3];
    const std::size_t rows = weights.size() / S;
    double sum = 0.0;
    for (std::size_t r = 0; r < rows; ++r) {
      const float* row = weights.data() + r * S;
      sum += static_cast<double>(*std::max_element(row, row + S));
    }
    return sum / static_cast<double>(rows);
  };
  print("          with LayerNorm                 without LayerNorm\n");
  print("  pass      mean       std    peak          mean           std    peak\n");
  const Stats s0 = stats_of(x);
  print(pad("0", 6) + pad(cell(s0.mean), 10) + pad(cell(s0.std), 10) + pad("", 8) +
        pad(cell(s0.mean), 14) + pad(cell(s0.std), 14) + "\n");
  std::vector<double> std_with{s0.std}, std_without{s0.std};  // per pass, for the sentences
  Tensor<3> a = x;
  Tensor<3> b = x;
  double previous_with = s0.std;
  double previous_without = s0.std;
  std::size_t overflow_pass = 0;  // the first pass whose activations are no longer finite
  for (std::size_t pass = 1; pass <= s.passes; ++pass) {
    attn::BlockResult ra = attn::block_forward(a, w, with);
    attn::BlockResult rb = attn::block_forward(b, w, without);
    a = std::move(ra.out);
    b = std::move(rb.out);
    const Stats sa = stats_of(a);
    const Stats sb = stats_of(b);
    print(pad(size_text(pass), 6) + pad(cell(sa.mean), 10) + pad(cell(sa.std), 10) +
          pad(num(peak(ra.weights), 2), 8) + pad(cell(sb.mean), 14) + pad(cell(sb.std), 14) +
          pad(num(peak(rb.weights), 2), 8) + "\n");
    std_with.push_back(sa.std);
    std_without.push_back(sb.std);
    if (pass + 1 == s.passes) {
      previous_with = sa.std;
      previous_without = sb.std;
    }
    if (overflow_pass == 0 && !std::isfinite(sb.std)) overflow_pass = pass;
  }
  const double last_with = stats_of(a).std;
  const double last_without = stats_of(b).std;
  if (overflow_pass != 0) {
    print("Without LayerNorm the activations overflowed float32 at pass " +
          size_text(overflow_pass) + " (inf - inf = NaN).\n");
  } else if (s.passes >= 2) {
    print("In the last pass the std grew by " + num(last_with - previous_with, 2) + " (x" +
          num(last_with / previous_with, 2) + ") with LayerNorm and x" +
          num(last_without / previous_without, 2) + " without.\n");
  }
  if (svg_dir) {
    attn::Series with_s{"with LayerNorm", {}, {}}, without_s{"without LayerNorm", {}, {}};
    for (std::size_t p = 0; p < std_with.size(); ++p) {
      with_s.x.push_back(static_cast<double>(p));
      with_s.y.push_back(std_with[p]);
      without_s.x.push_back(static_cast<double>(p));
      without_s.y.push_back(std_without[p]);
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
    print("(written to " + path.string() + ")\n");
  }
  // What the columns show, measured: the step of the std per pass with LayerNorm (largest over
  // smallest of the last half of the passes) and the growth factor without it.
  const std::size_t P = s.passes;
  double step_lo = 1e30, step_hi = 0.0;
  for (std::size_t p = P / 2 + 1; p <= P; ++p) {
    const double step = std_with[p] - std_with[p - 1];
    step_lo = std::min(step_lo, step);
    step_hi = std::max(step_hi, step);
  }
  const double factor_without =
      std::isfinite(last_without) ? last_without / previous_without : 0.0;
  const double factor_with = last_with / previous_with;
  if (s.norm == NormPlacement::pre) {
    print(
        "With LayerNorm every sublayer reads a normalised input, so each pass adds corrections\n"
        "of about the same size");
    if (P >= 4 && step_lo > 0.0 && step_hi < 1.5 * step_lo) {
      print(": over the last " + size_text(P - P / 2) + " passes the std climbs by " +
            num(step_lo, 2) + " to " + num(step_hi, 2) + " a pass,\nlinearly, not exponentially.");
    } else if (P < 4) {
      print(" (too few passes here to see the steady step;\ntry --passes 10).");
    } else {
      print("; here the steps still vary (" + num(step_lo, 2) + " to " + num(step_hi, 2) + ").");
    }
    print(
        "\n(That drift is why a pre-norm model ends with one more LayerNorm, and why GPT-2 scales\n"
        "down the weights that write into the stream of a deep stack.)\n");
  } else {
    bool unit = s.C > 1;
    for (std::size_t p = 1; p <= P; ++p) unit = unit && std::abs(std_with[p] - 1.0) < 1e-3;
    if (s.C > 1) attn::claim(unit, "post-norm keeps the std at 1");
    print(
        "With post-norm LayerNorm the stream itself is renormalised after every addition, so its\n"
        "std stays at 1 whatever the number of passes.\n");
  }
  print(
      "Without LayerNorm the sublayers read the raw stream: a stream twice as large gives\n"
      "corrections about twice as large, so every pass multiplies the scale by a factor");
  if (overflow_pass != 0 || (P >= 2 && factor_without > 1.5 && factor_without > factor_with)) {
    print(" and the\ngrowth is exponential" +
          std::string(overflow_pass != 0 ? "" : " (x" + num(factor_without, 2) + " in the last pass)") +
          ". Attention's scores q . k grow with the\n"
          "square of that scale, the softmax saturates towards one-hot (the peak column), and its\n"
          "gradient vanishes: a deep stack without normalisation is very hard to train.\n");
  } else {
    print(".\nHere, after " + size_text(P) + (P == 1 ? " pass" : " passes") +
          ", the two columns have not parted yet: run more --passes to see the\n"
          "exponential growth, and attention's peak head for one-hot.\n");
  }
}

// 7. Causality: the future cannot change the past.
void show_causality(const Kernels& k, const Setup& s, const Tensor<3>& x, const BlockWeights& w,
                    attn::Rng& rng) {
  print("\n== 7. Causality check ==\n");
  const std::size_t t0 = s.T / 2;
  print(
      "In a decoder block the only step that mixes positions is masked attention, and LayerNorm\n"
      "and the FFN work token by token, so output t may depend on inputs 0..t only. Replace the\n"
      "tokens at positions >= " +
      size_text(t0) + " by new random ones and compare the outputs:\n");
  Tensor<3> changed = x;
  const Tensor<3> fresh = attn::randn<3>(rng, {s.B, s.T, s.C});  // (B, T, C)
  xt::view(changed, xt::all(), xt::range(t0, s.T), xt::all()) =
      xt::view(fresh, xt::all(), xt::range(t0, s.T), xt::all());
  BlockConfig config;
  config.n_heads = s.H;
  config.activation = s.activation;
  config.norm = s.norm;
  const Tensor<3> y = run_block(k, x, w, config);        // (B, T, C)
  const Tensor<3> z = run_block(k, changed, w, config);  // (B, T, C)
  std::vector<double> change(s.T, 0.0);
  for (std::size_t b = 0; b < s.B; ++b)
    for (std::size_t t = 0; t < s.T; ++t)
      for (std::size_t c = 0; c < s.C; ++c)
        change[t] = std::max(
            change[t], std::abs(static_cast<double>(z(b, t, c)) - static_cast<double>(y(b, t, c))));
  print("  position   max |change| of the output\n");
  for (std::size_t t = 0; t < s.T; ++t) {
    print(pad(size_text(t), 10) + "   " + (change[t] == 0.0 ? std::string("0") : num(change[t])) +
          (t == t0 ? "   <- first changed input" : "") + "\n");
  }
  const double past =
      t0 == 0 ? 0.0
              : *std::max_element(change.begin(), change.begin() + static_cast<std::ptrdiff_t>(t0));
  print("Positions before " + size_text(t0) + ": " +
        (past == 0.0 ? std::string("bitwise identical, the future never leaks into the past.")
                     : "changed by up to " + num(past, 8) + ": the future leaks!") +
        "\n");
}

// 8. Parameters and FLOPs.
void show_cost(const Setup& s, const BlockWeights& w) {
  print("\n== 8. Parameters and FLOPs ==\n");
  const std::size_t C = s.C, F = s.F, B = s.B, T = s.T, H = s.H;
  const std::size_t attn_params = 4 * C * C;
  const std::size_t ffn_params = 2 * C * F + F + C;
  const std::size_t ln_params = 4 * C;
  print("Parameters of one block, from the formulas (C = " + size_text(C) +
        ", F = " + size_text(F) + "):\n");
  print("  attention   4 C^2 (w_q, w_k, w_v, w_o)      " + pad(size_text(attn_params), 10) + "\n");
  print("  FFN         2 C F + F + C (w1, b1, w2, b2)  " + pad(size_text(ffn_params), 10) + "\n");
  print("  LayerNorm   4 C (two gammas, two betas)     " + pad(size_text(ln_params), 10) + "\n");
  const std::size_t formula = attn::block_param_count(C, F);
  const std::size_t counted = attn::parameter_count(w);
  print("  block_param_count(C, F)                     " + pad(size_text(formula), 10) + "\n");
  print("  floats held by block_init's tensors         " + pad(size_text(counted), 10) + "   " +
        (formula == counted ? "match" : "MISMATCH") + "\n");
  const auto share = [&](std::size_t part) {
    return num(100.0 * static_cast<double>(part) / static_cast<double>(formula), 1) + "%";
  };
  print("The FFN holds " + share(ffn_params) + " of the block, attention " + share(attn_params) +
        ", the LayerNorms " + share(ln_params) + "\n(" +
        (F == 4 * C ? std::string("with F = 4C, about 12 C^2 in all")
                    : "with F = " + size_text(F / C) + "C, about " + size_text(4 + 2 * F / C) +
                          " C^2 in all; GPT-2's F = 4C gives 12 C^2") +
        ").\n");

  const double total = attn::block_forward_flops(B, T, C, F, H);
  const double attention = attn::mha_forward_flops(B, T, C, H);
  const double mixing = 4.0 * static_cast<double>(B * H * T * T * (C / H));  // scores, weights @ v
  print("FLOPs of one forward pass (a multiply-add counts 2), B = " + size_text(B) +
        ", T = " + size_text(T) + ":\n");
  print("  projections and FFN   2 B T (4 C^2 + 2 C F)   " + pad(num(total - mixing, 0), 12) +
        "\n");
  print("  attention itself      4 B H T^2 hs            " + pad(num(mixing, 0), 12) + "\n");
  print("  block_forward_flops                           " + pad(num(total, 0), 12) + "\n");
  print("  the attention sublayer (mha_forward_flops)    " + pad(num(attention, 0), 12) + "\n");
  print("How the cost grows with T (same B, C, H, F):\n");
  print("       T    block FLOPs   per token   share of the T^2 term\n");
  for (const std::size_t t :
       {std::size_t{10}, std::size_t{100}, std::size_t{1000}, std::size_t{10000}}) {
    const double f = attn::block_forward_flops(B, t, C, F, H);
    const double sq = 4.0 * static_cast<double>(B * H) * static_cast<double>(t) *
                      static_cast<double>(t) * static_cast<double>(C / H);
    print(pad(size_text(t), 8) + pad(num(f, 0), 15) +
          pad(num(f / static_cast<double>(B * t), 0), 12) + pad(num(100.0 * sq / f, 1) + "%", 24) +
          "\n");
  }
  print(
      "Per token, the projections and the FFN cost the same at any length; attention's T^2 term\n"
      "grows with T and overtakes them at T = 2C + F = " +
      size_text(2 * C + F) +
      " for this width. Long contexts are\n"
      "expensive because of that term.\n");
}

void show_timing(const Setup& s, const Tensor<3>& x, const BlockWeights& w) {
  BlockConfig config;
  config.n_heads = s.H;
  config.activation = s.activation;
  config.norm = s.norm;
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

attn::HeatmapOptions positions_svg_options(const Matrix& pe) {
  attn::HeatmapOptions options;
  options.title = "sinusoidal positions (" + size_text(pe.shape()[0]) + ", " +
                  size_text(pe.shape()[1]) + "): rows = positions, columns = features";
  options.diverging = true;  // sin and cos: -1 blue, 0 white, +1 red
  // A label on every 10th position and every 8th feature; the others stay blank.
  for (std::size_t p = 0; p < pe.shape()[0]; ++p) {
    options.row_labels.push_back(p % 10 == 0 ? size_text(p) : "");
  }
  for (std::size_t c = 0; c < pe.shape()[1]; ++c) {
    options.col_labels.push_back(c % 8 == 0 ? size_text(c) : "");
  }
  options.vmin = -1.0f;
  options.vmax = 1.0f;
  options.annotate = false;
  return options;
}

// The block as a picture: pre-norm (GPT-2) or post-norm (the original Transformer), as --norm
// chose. Attention, the only step that mixes positions, is highlighted.
std::string block_diagram_title(const Setup& s) {
  return std::string("One transformer block, ") + std::string(attn::norm_name(s.norm)) + "-norm";
}

std::vector<attn::DiagramNode> block_diagram(const Setup& s) {
  using Kind = attn::DiagramNode::Kind;
  const std::string btc = "(B, T, C) = " + shape_text(std::array<std::size_t, 3>{s.B, s.T, s.C});
  const std::string attn_note = "H = " + size_text(s.H) + " heads of hs = " + size_text(s.C / s.H) +
                                ", causal mask";
  const std::string ffn_note = "C -> F = " + size_text(s.F) + " -> C, " +
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

int main(int argc, char** argv) {
  attn::Cli cli("06_transformer_block",
                "Chapter 06: the transformer block. LayerNorm, the FFN and GELU, residual "
                "connections (pre- and post-norm), positional encodings, a shape trace, what "
                "happens without LayerNorm, causality, parameters and FLOPs.");
  Setup s;
  std::size_t ffn_mult = 4;
  std::string activation = "gelu";
  std::string norm = "pre";
  cli.add_size("--batch", s.B, "batch size B", 1, kMaxBatch);
  cli.add_size("--time-steps", s.T, "sequence length T", 1, kMaxTimeSteps);
  cli.add_size("--channels", s.C, "model width C", 1, kMaxChannels);
  cli.add_size("--heads", s.H, "number of heads H, must divide C", 1, kMaxChannels);
  cli.add_size("--ffn-mult", ffn_mult, "FFN hidden width F = ffn-mult * C", 1, kMaxFfnMult);
  cli.add_string("--activation", activation, "FFN activation: gelu (exact), gelu_tanh or relu");
  cli.add_string("--norm", norm, "LayerNorm placement: pre (GPT-2) or post (original Transformer)");
  cli.add_size("--passes", s.passes, "passes of the no-LayerNorm experiment", 1, kMaxPasses);

  return cli.run(argc, argv, [&](const attn::CommonOptions& options) {
    if (s.C % s.H != 0) {
      throw attn::UsageError("--heads must divide --channels, got " + size_text(s.H) +
                             " heads for " + size_text(s.C) + " channels");
    }
    try {
      s.activation = attn::parse_activation(activation);
    } catch (const std::invalid_argument& e) {
      throw attn::UsageError(std::string("--activation: ") + e.what());
    }
    try {
      s.norm = attn::parse_norm(norm);
    } catch (const std::invalid_argument& e) {
      throw attn::UsageError(std::string("--norm: ") + e.what());
    }
    s.F = ffn_mult * s.C;

    const Kernels k = options.mine ? learner_kernels() : reference_kernels();
    // The tokens here are random vectors, so no text is needed; a bad --data is still an error.
    const std::string corpus_origin = options.data ? attn::load_corpus(options.data).origin : "";
    print("Chapter 06: the transformer block\n");
    if (!corpus_origin.empty()) {
      print("corpus: " + corpus_origin + ", read but not used (the tokens are random vectors)\n");
    }
    print("B = " + size_text(s.B) + ", T = " + size_text(s.T) + ", C = " + size_text(s.C) +
          ", H = " + size_text(s.H) + " (hs = " + size_text(s.C / s.H) + "), F = " +
          size_text(s.F) + ", activation " + std::string(attn::activation_name(s.activation)) +
          ", " + std::string(attn::norm_name(s.norm)) + "-norm, seed " +
          std::to_string(options.seed) + "\n");
    print(std::string("functions: ") +
          (options.mine ? "yours (ex06::, --mine)" : "the reference (attn::)") + "\n");

    attn::Rng rng(options.seed);
    const Tensor<3> x = attn::randn<3>(rng, {s.B, s.T, s.C});  // (B, T, C) token vectors
    const BlockWeights w = attn::block_init(rng, s.C, s.F);

    show_layer_norm(k, s, rng);
    show_ffn(k, s, x, w, options.svg_dir);
    show_residuals(k, s, x, w);
    show_positions(k, s, x, w, options.seed);
    show_trace(s, x, w);
    show_no_layer_norm(s, x, rng, options.svg_dir);
    show_causality(k, s, x, w, rng);
    show_cost(s, w);

    if (options.svg_dir) {
      const Matrix pe_svg = attn::sinusoidal_positions(kSvgPositions, s.C);  // (100, C)
      const auto path = *options.svg_dir / "sinusoidal_positions.svg";
      attn::write_svg(path, attn::heatmap_svg(pe_svg, positions_svg_options(pe_svg)));
      const auto block_path = *options.svg_dir / "transformer_block.svg";
      attn::write_svg(block_path, attn::diagram_svg(block_diagram_title(s), block_diagram(s)));
      print("\nwrote " + path.string() + " and " + block_path.string() + "\n");
    }
    if (options.timing) show_timing(s, x, w);
  });
}
