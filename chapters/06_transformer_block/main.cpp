// chapters/06_transformer_block/main.cpp: chapter 06, the transformer block.
// LayerNorm, the feed-forward network and its activations, residual connections (pre- and
// post-norm), positional encodings, then the block itself: its shape trace, what happens without
// LayerNorm, causality, and its cost. The math lives in common/src/ops/layernorm.cpp, ffn.cpp,
// posenc.cpp and common/src/model/block.cpp. This file is the lesson: one function per section
// computes what it teaches and returns a struct (show.hpp); show.cpp prints it.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/term/narrate.hpp"
#include "attn/model/block.hpp"
#include "attn/ops/attention.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/linear.hpp"
#include "attn/ops/posenc.hpp"
#include "exercises.hpp"
#include "show.hpp"

namespace {

using namespace ch06;
using attn::BlockConfig;
using attn::Vector;

// Limits that keep the largest run near a second (about 30 block forwards).
constexpr std::size_t kMaxBatch = 4;
constexpr std::size_t kMaxBlockSize = 64;
constexpr std::size_t kMaxEmbd = 128;
constexpr std::size_t kMaxFfnMult = 8;
constexpr std::size_t kMaxPasses = 50;

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
  BlockConfig config{.spec = attn::block_spec(x.shape()[2], n_heads, activation)};
  config.causal = causal;
  config.norm = NormPlacement::pre;
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
  if (config.norm == NormPlacement::pre && config.spec.ablations.layer_norm) {
    return k.block_pre_norm(x, w, config.spec.n_heads, config.causal, config.spec.activation);
  }
  return attn::block_forward(x, w, config).out;
}

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

std::vector<std::size_t> shape_of(const auto& t) { return {t.shape().begin(), t.shape().end()}; }

// ---------------------------------------------------------------------------------------------
// 1. LayerNorm: one off-centre, wide token, normalised with two choices of gamma and beta.
LayerNormDemo layer_norm_demo(const Kernels& k, const Setup& s, attn::Rng& rng) {
  LayerNormDemo r;
  r.token = attn::randn<3>(rng, {1, 1, s.C}, 3.0f) + 2.0f;  // (1, 1, C): 3 * randn + 2
  const Vector ones = xt::ones<float>({s.C});
  const Vector zeros = xt::zeros<float>({s.C});
  r.normed = k.layer_norm(r.token, ones, zeros, 1e-5f);  // (1, 1, C)
  const Vector gamma = xt::full_like(ones, 2.0f);
  const Vector beta = xt::full_like(ones, 0.5f);
  r.scaled = k.layer_norm(r.token, gamma, beta, 1e-5f);  // (1, 1, C)
  return r;
}

// 2. The three activations on a few points and on a fine grid; the block's FFN on x.
FfnDemo ffn_demo(const Kernels& k, const Setup& s, const Tensor<3>& x, const BlockWeights& w) {
  FfnDemo r;
  r.xs = {-3.0f, -2.0f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 2.0f, 3.0f};
  const Tensor<3> points = as_tensor(r.xs);  // (1, 1, 9)
  r.relu = attn::activate<3>(points, Activation::relu);
  r.gelu = k.gelu(points);
  r.gelu_tanh = attn::activate<3>(points, Activation::gelu_tanh);
  // The two GELUs on a fine grid over [-6, 6].
  for (int i = -6000; i <= 6000; ++i) r.grid.push_back(static_cast<float>(i) / 1000.0f);
  const Tensor<3> g = as_tensor(r.grid);  // (1, 1, 12001)
  r.grid_relu = attn::activate<3>(g, Activation::relu);
  r.grid_gelu = k.gelu(g);
  r.grid_tanh = attn::activate<3>(g, Activation::gelu_tanh);
  for (std::size_t i = 0; i < r.grid.size(); ++i) {
    const double d = std::abs(static_cast<double>(r.grid_gelu.data()[i]) -
                              static_cast<double>(r.grid_tanh.data()[i]));
    if (d > r.worst) {
      r.worst = d;
      r.worst_at = r.grid[i];
    }
  }
  // FFN(x) = act(x @ w1 + b1) @ w2 + b2.
  r.x = x;
  r.hidden = attn::linear(x, w.ffn.w1, w.ffn.b1);  // (B, T, C) @ (C, F) -> (B, T, F)
  r.out = k.ffn_forward(x, w.ffn, s.activation);   // (B, T, C)
  r.w1_shape = shape_of(w.ffn.w1);
  r.w2_shape = shape_of(w.ffn.w2);
  return r;
}

// 3. The same input and weights through a pre-norm and a post-norm block.
Residuals residuals(const Kernels& k, const Setup& s, const Tensor<3>& x, const BlockWeights& w) {
  BlockConfig config = s.block();
  config.norm = NormPlacement::pre;
  const Tensor<3> pre = run_block(k, x, w, config);  // x = x + attn(ln1(x)); x = x + ffn(ln2(x))
  config.norm = NormPlacement::post;
  const Tensor<3> post = run_block(k, x, w, config);  // x = ln1(x + attn(x)); x = ln2(x + ffn(x))
  return {x, pre, post};
}

// 4. Without positions attention sees a set: shuffle the tokens and the outputs shuffle alike.
Positions positions(const Kernels& k, const Setup& s, const Tensor<3>& x, const BlockWeights& w,
                    std::uint64_t seed) {
  Positions r;
  std::vector<std::size_t> reversed(s.T);
  std::iota(reversed.rbegin(), reversed.rend(), std::size_t{0});  // T-1, ..., 1, 0
  BlockConfig encoder = s.block();
  encoder.causal = false;
  const Tensor<3> y = run_block(k, x, w, encoder);  // (B, T, C)
  const Tensor<3> y_of_reversed = run_block(k, reorder_positions(x, reversed), w, encoder);
  r.shuffled = attn::max_abs_diff(y_of_reversed, reorder_positions(y, reversed));

  // A causal block reads the past as a set: swap tokens 0 and 1, compare from position 2 on.
  r.swap_shown = s.T >= 3;
  if (r.swap_shown) {
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
    r.one = attn::max_abs_diff(from(d, 2), from(d_swapped, 2));
    r.last_one = attn::max_abs_diff(from(d, s.T - 1), from(d_swapped, s.T - 1));
    r.last_two = attn::max_abs_diff(from(d2, s.T - 1), from(d2_swapped, s.T - 1));
  }

  // The fix: add PE[0..T) to the tokens, and the encoder test again.
  r.pe = attn::sinusoidal_positions(std::max(kPositionRows, s.T), s.C);  // (T_max, C)
  const Tensor<3> yp = run_block(k, add_positions(x, r.pe), w, encoder);
  const Tensor<3> yp_of_reversed =
      run_block(k, add_positions(reorder_positions(x, reversed), r.pe), w, encoder);
  r.with_pe = attn::max_abs_diff(yp_of_reversed, reorder_positions(yp, reversed));
  return r;
}

// 5. block_forward with a trace: every step's name, shape and statistics.
Trace trace(const Setup& s, const Tensor<3>& x, const BlockWeights& w) {
  Trace r;
  r.rows.push_back({"input", shape_of(x), stats_of(x)});
  const attn::BlockTrace record = [&](std::string_view step, const Tensor<3>& value) {
    r.rows.push_back({std::string(step), shape_of(value), stats_of(value)});
  };
  const attn::BlockResult result = attn::block_forward(x, w, s.block(), record);
  r.weights_shape = shape_of(result.weights);
  return r;
}

// 6. Feed the block's output back in, pass after pass, with and without LayerNorm.
NoLayerNorm no_layer_norm(const Setup& s, const Tensor<3>& x, attn::Rng& rng) {
  NoLayerNorm r;
  // At GPT-2's initial std of 0.02 a block changes its input by about 1% and both columns would
  // crawl. Trained weights are larger; std 1 / sqrt(C) is the scale at which x @ W keeps the size
  // of x.
  r.weight_std = 1.0f / std::sqrt(static_cast<float>(s.C));
  BlockWeights w;
  w.attn = attn::mha_init(rng, s.C, r.weight_std);
  w.ffn = attn::ffn_init(rng, s.C, s.F, r.weight_std);
  w.ln1_gamma = xt::ones<float>({s.C});
  w.ln1_beta = xt::zeros<float>({s.C});
  w.ln2_gamma = w.ln1_gamma;
  w.ln2_beta = w.ln1_beta;
  const BlockConfig with = s.block();
  BlockConfig without = with;
  without.spec =
      attn::with_choices(with.spec, [](attn::ModelChoices& m) { m.ablations.layer_norm = false; });

  const auto peak = [](const Tensor<4>& weights) {  // (B, H, T, T) -> mean of the row maxima
    const std::size_t S = weights.shape()[3];
    const std::size_t rows = weights.size() / S;
    double sum = 0.0;
    for (std::size_t row = 0; row < rows; ++row) {
      const float* p = weights.data() + row * S;
      sum += static_cast<double>(*std::max_element(p, p + S));
    }
    return sum / static_cast<double>(rows);
  };
  r.with.push_back(stats_of(x));
  r.without.push_back(stats_of(x));
  Tensor<3> a = x;
  Tensor<3> b = x;
  for (std::size_t pass = 1; pass <= s.passes; ++pass) {
    attn::BlockResult ra = attn::block_forward(a, w, with);
    attn::BlockResult rb = attn::block_forward(b, w, without);
    a = std::move(ra.out);
    b = std::move(rb.out);
    r.with.push_back(stats_of(a));
    r.without.push_back(stats_of(b));
    r.peak_with.push_back(peak(ra.weights));
    r.peak_without.push_back(peak(rb.weights));
    if (r.overflow_pass == 0 && !std::isfinite(r.without.back().std)) r.overflow_pass = pass;
  }
  return r;
}

// 7. Replace the tokens at positions >= T/2: outputs before T/2 must not move.
Causality causality(const Kernels& k, const Setup& s, const Tensor<3>& x, const BlockWeights& w,
                    attn::Rng& rng) {
  Causality r;
  r.t0 = s.T / 2;
  Tensor<3> changed = x;
  const Tensor<3> fresh = attn::randn<3>(rng, {s.B, s.T, s.C});  // (B, T, C)
  xt::view(changed, xt::all(), xt::range(r.t0, s.T), xt::all()) =
      xt::view(fresh, xt::all(), xt::range(r.t0, s.T), xt::all());
  const Tensor<3> y = run_block(k, x, w, s.block());        // (B, T, C)
  const Tensor<3> z = run_block(k, changed, w, s.block());  // (B, T, C)
  r.change.assign(s.T, 0.0);
  for (std::size_t b = 0; b < s.B; ++b)
    for (std::size_t t = 0; t < s.T; ++t)
      for (std::size_t c = 0; c < s.C; ++c)
        r.change[t] = std::max(r.change[t], std::abs(static_cast<double>(z(b, t, c)) -
                                                     static_cast<double>(y(b, t, c))));
  return r;
}

// 8. Parameters from the formulas and from the tensors; FLOPs of a forward, and how they grow.
Cost cost(const Setup& s, const BlockWeights& w) {
  Cost r;
  const std::size_t C = s.C, F = s.F, B = s.B, T = s.T, H = s.H;
  r.attn_params = 4 * C * C;         // w_q, w_k, w_v, w_o
  r.ffn_params = 2 * C * F + F + C;  // w1, b1, w2, b2
  r.ln_params = 4 * C;               // two gammas, two betas
  r.formula = attn::block_param_count(C, F);
  r.counted = attn::parameter_count(w);
  r.total = attn::block_forward_flops(B, T, C, F, H);
  r.attention = attn::mha_forward_flops(B, T, C, H);
  r.mixing = 4.0 * static_cast<double>(B * H * T * T * (C / H));  // scores, weights @ v
  for (const std::size_t t :
       {std::size_t{10}, std::size_t{100}, std::size_t{1000}, std::size_t{10000}}) {
    r.by_length.push_back({t, attn::block_forward_flops(B, t, C, F, H),
                           4.0 * static_cast<double>(B * H) * static_cast<double>(t) *
                               static_cast<double>(t) * static_cast<double>(C / H)});
  }
  return r;
}

}  // namespace

attn::BlockConfig ch06::Setup::block() const {
  BlockConfig config{.spec = attn::block_spec(C, H, activation)};
  config.norm = norm;
  return config;
}

int main(int argc, char** argv) {
  attn::Cli cli("06_transformer_block",
                "Chapter 06: the transformer block. LayerNorm, the FFN and GELU, residual "
                "connections (pre- and post-norm), positional encodings, a shape trace, what "
                "happens without LayerNorm, causality, parameters and FLOPs.");
  Setup s;
  std::size_t ffn_mult = 4;
  std::string activation = "gelu";
  std::string norm = "pre";
  cli.add_size("--batch-size", s.B, "batch size B", 1, kMaxBatch);
  cli.add_size("--block-size", s.T, "sequence length T", 1, kMaxBlockSize);
  cli.add_size("--n-embd", s.C, "model width C", 1, kMaxEmbd);
  cli.add_size("--n-heads", s.H, "number of heads H, must divide C", 1, kMaxEmbd);
  cli.add_size("--ffn-mult", ffn_mult, "FFN hidden width F = ffn-mult * C", 1, kMaxFfnMult);
  cli.add_string("--activation", activation, "FFN activation: gelu (exact), gelu_tanh or relu");
  cli.add_string("--norm", norm, "LayerNorm placement: pre (GPT-2) or post (original Transformer)");
  cli.add_size("--passes", s.passes, "passes of the no-LayerNorm experiment", 1, kMaxPasses);
  cli.add_alias("batch", "batch-size");  // the names of earlier versions
  cli.add_alias("time-steps", "block-size");
  cli.add_alias("channels", "n-embd");
  cli.add_alias("heads", "n-heads");

  return cli.run(argc, argv, [&](const attn::CommonOptions& options) {
    if (s.C % s.H != 0) {
      throw attn::UsageError("--n-heads must divide --n-embd, got " + std::to_string(s.H) +
                             " heads for " + std::to_string(s.C) + " channels");
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
    fmt::print("Chapter 06: the transformer block\n");
    if (!corpus_origin.empty()) {
      fmt::print("{}", "corpus: " + corpus_origin +
                           ", read but not used (the tokens are random vectors)\n");
    }
    fmt::print(
        "B = {}, T = {}, C = {}, H = {} (hs = {}), F = {}, activation {}, "
        "{}-norm, seed {}\n",
        s.B, s.T, s.C, s.H, s.C / s.H, s.F, attn::activation_name(s.activation),
        attn::norm_name(s.norm), options.seed);
    fmt::print("{}", std::string("functions: ") +
                         (options.mine ? "yours (ex06::, --mine)" : "the reference (attn::)") +
                         "\n");

    attn::Rng rng(options.seed);
    const Tensor<3> x = attn::randn<3>(rng, {s.B, s.T, s.C});  // (B, T, C) token vectors
    const BlockWeights w = attn::block_init(rng, s.C, s.F);

    show_layer_norm(s, layer_norm_demo(k, s, rng));
    show_ffn(s, ffn_demo(k, s, x, w), options.svg_dir);
    show_residuals(s, residuals(k, s, x, w));
    show_positions(s, positions(k, s, x, w, options.seed));
    show_trace(s, trace(s, x, w));
    show_no_layer_norm(s, no_layer_norm(s, x, rng), options.svg_dir);
    show_causality(s, causality(k, s, x, w, rng));
    show_cost(s, cost(s, w));
    if (options.svg_dir) write_block_svgs(s, *options.svg_dir);
    if (options.timing) show_timing(s, x, w);
  });
}
