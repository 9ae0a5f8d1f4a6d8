// chapters/05_multi_head/main.cpp: chapter 05, multi-head attention.
// Follows one (B, T, C) input through H heads and checks the shape of every step, then compares
// a loop over heads and a fused QKV matrix with the batched forward, draws each head's weights
// and puts 1, 4 and 8 heads side by side. The math lives in common/src/ops/attention.cpp and
// common/src/ops/linear.cpp; this file only calls it and narrates.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "attn/ops/attention.hpp"
#include "attn/model/block.hpp"
#include "attn/core/check.hpp"
#include "attn/io/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/ops/linear.hpp"
#include "attn/ops/mask.hpp"
#include "attn/io/narrate.hpp"
#include "attn/io/plot.hpp"
#include "attn/io/print.hpp"
#include "attn/core/random.hpp"
#include "attn/ops/softmax.hpp"
#include "attn/core/xt.hpp"
#include "exercises.hpp"

namespace {

using attn::Matrix;
using attn::MhaWeights;
using attn::Tensor;

// Limits that keep the output readable and the run well under a second.
constexpr std::size_t kMaxBatch = 16;
constexpr std::size_t kMaxTimeSteps = 32;  // one (T, T) heatmap per head is printed
constexpr std::size_t kMaxChannels = 512;
constexpr std::size_t kMaxHeads = 16;      // one heatmap per head
constexpr float kGpt2Std = 0.02f;          // GPT-2's initialisation, attn::mha_init's default

// The three functions this chapter teaches: from attn:: (the reference) or, with --mine, from
// the learner's ex05:: exercises.
struct Kernels {
  Tensor<4> (*split_heads)(const Tensor<3>& x, std::size_t n_heads);  // (B,T,C) -> (B,H,T,hs)
  Tensor<3> (*merge_heads)(const Tensor<4>& x);                        // (B,H,T,hs) -> (B,T,C)
  Tensor<3> (*mha_forward)(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads,
                           bool causal);                               // (B,T,C) -> (B,T,C)
};

Tensor<3> reference_mha_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads,
                                bool causal) {
  return attn::mha_forward(x, w, n_heads, causal, /*need_weights=*/false).out;
}

Kernels reference_kernels() {
  return {&attn::split_heads, &attn::merge_heads, &reference_mha_forward};
}

Kernels learner_kernels() { return {&ex05::split_heads, &ex05::merge_heads, &ex05::mha_forward}; }

struct Sizes {
  std::size_t B;  // batch (--batch-size)
  std::size_t T;  // time steps (--block-size)
  std::size_t C;  // channels, the model width (--n-embd)
  std::size_t H;  // heads (--n-heads)
  bool causal;
};

using attn::grouped;
using attn::max_abs_diff;
using attn::num;
using attn::print;

// Scientific notation, so float rounding (1e-7) and a real bug (1e-1) look different at a glance.
// (attn::difference_text prints 8 decimals: too few for the 1e-9 of a row sum.)
std::string scientific_difference(double d) {
  return d == 0.0 ? std::string("0 (bitwise identical)") : fmt::format("{:.2e}", d);
}

// Prints one step of the shape trace and asserts the shape: the walkthrough stops with
// std::logic_error if a step ever produced anything else (with the reference it never does).
template <std::size_t N>
void check_step(const std::string& step, const std::string& letters, const Tensor<N>& t,
                const std::array<std::size_t, N>& expected) {
  const std::string got = attn::shape_str(t.shape());
  const std::string want = attn::shape_str(expected);
  print(fmt::format("  {:<34} {:<14} {:<16} checked\n", step, letters, got));
  if (got != want) {
    throw std::logic_error("shape check: " + step + " should be " + letters + " = " + want +
                           ", got " + got);
  }
}

// True when key s is visible to query t.
bool visible(const Sizes& n, std::size_t t, std::size_t s) { return !n.causal || s <= t; }

// (B, H, T, T) weights -> the largest |row sum - 1| and whether every weight is in [0, 1].
struct WeightFacts {
  double max_row_error = 0.0;
  bool in_unit_interval = true;
  std::size_t future = 0;       // masked (query, key) pairs
  std::size_t future_zero = 0;  // of which exactly 0
};

WeightFacts weight_facts(const Tensor<4>& w, const Sizes& n) {
  WeightFacts f;
  const std::size_t rows = w.size() / n.T;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t t = r % n.T;
    double sum = 0.0;
    for (std::size_t s = 0; s < n.T; ++s) {
      const float v = w.data()[r * n.T + s];
      sum += static_cast<double>(v);
      if (!(v >= 0.0f && v <= 1.0f)) f.in_unit_interval = false;
      if (!visible(n, t, s)) {
        ++f.future;
        f.future_zero += v == 0.0f ? 1 : 0;
      }
    }
    f.max_row_error = std::max(f.max_row_error, std::abs(sum - 1.0));
  }
  return f;
}

// Standard deviation of the scores a query may use (the masked ones never matter).
double visible_score_std(const Tensor<4>& scores, const Sizes& n) {
  double sum = 0.0;
  double sum_sq = 0.0;
  std::size_t count = 0;
  for (std::size_t r = 0; r < scores.size() / n.T; ++r)
    for (std::size_t s = 0; s < n.T; ++s) {
      if (!visible(n, r % n.T, s)) continue;
      const double v = static_cast<double>(scores.data()[r * n.T + s]);
      sum += v;
      sum_sq += v * v;
      ++count;
    }
  const double mean = sum / static_cast<double>(count);
  return std::sqrt(std::max(0.0, sum_sq / static_cast<double>(count) - mean * mean));
}

bool all_finite(const Tensor<3>& t) {
  for (const float v : t)
    if (!std::isfinite(v)) return false;
  return true;
}

// The attention weights (B, H, T, T) of H heads: project, split (the chapter's split_heads),
// attend. Used to look at the patterns; the output itself is not needed here.
Tensor<4> head_weights(const Kernels& k, const Tensor<3>& x, const MhaWeights& w, std::size_t H,
                       bool causal) {
  const Tensor<4> q = k.split_heads(attn::linear(x, w.w_q), H);  // (B, H, T, hs)
  const Tensor<4> kk = k.split_heads(attn::linear(x, w.w_k), H);  // (B, H, T, hs)
  const Tensor<4> v = k.split_heads(attn::linear(x, w.w_v), H);  // (B, H, T, hs)
  return attn::scaled_dot_product_attention(q, kk, v, causal).weights;  // (B, H, T, T)
}

// Matrix (T, T) of head h in batch b.
Matrix head_matrix(const Tensor<4>& weights, std::size_t b, std::size_t h) {
  return xt::view(weights, b, h, xt::all(), xt::all());
}

attn::HeatmapOptions head_heatmap(const std::string& title, std::size_t T) {
  attn::HeatmapOptions options;
  options.title = title;
  for (std::size_t t = 0; t < T; ++t) {
    options.row_labels.push_back("q" + std::to_string(t));
    options.col_labels.push_back("k" + std::to_string(t));
  }
  options.vmin = 0.0f;  // weights are probabilities: one fixed scale makes the heads comparable
  options.vmax = 1.0f;
  return options;
}

// The largest |weight - uniform| over the visible keys: how far the heads are from plain
// averaging (uniform = 1 / (number of visible keys)).
double max_distance_from_uniform(const Tensor<4>& w, const Sizes& n) {
  double worst = 0.0;
  for (std::size_t r = 0; r < w.size() / n.T; ++r) {
    const std::size_t t = r % n.T;
    const double uniform = 1.0 / static_cast<double>(n.causal ? t + 1 : n.T);
    for (std::size_t s = 0; s < n.T; ++s) {
      if (!visible(n, t, s)) continue;
      worst = std::max(worst, std::abs(static_cast<double>(w.data()[r * n.T + s]) - uniform));
    }
  }
  return worst;
}

// Mean over all pairs of heads (h < h') of the mean |w_h - w_h'| over the visible (b, t, s).
// 0 means every head attends the same way; negative means "no pair" (one head).
double mean_pairwise_difference(const Tensor<4>& w, const Sizes& n) {
  const std::size_t B = w.shape()[0], H = w.shape()[1], T = n.T;
  if (H < 2) return -1.0;
  double total = 0.0;
  std::size_t count = 0;
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t g = h + 1; g < H; ++g)
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
          for (std::size_t s = 0; s < T; ++s) {
            if (!visible(n, t, s)) continue;
            total += std::abs(static_cast<double>(w(b, h, t, s)) - static_cast<double>(w(b, g, t, s)));
            ++count;
          }
  return total / static_cast<double>(count);
}

// Mean entropy -sum_s w ln w of the rows, in nats: ln(number of visible keys) for plain
// averaging, 0 for a head that looks at one key only.
double mean_row_entropy(const Tensor<4>& w, const Sizes& n) {
  const std::size_t rows = w.size() / n.T;
  double total = 0.0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t s = 0; s < n.T; ++s) {
      const double p = static_cast<double>(w.data()[r * n.T + s]);
      if (p > 0.0) total -= p * std::log(p);
    }
  return total / static_cast<double>(rows);
}

double uniform_row_entropy(const Sizes& n) {
  double total = 0.0;
  for (std::size_t t = 0; t < n.T; ++t)
    total += std::log(static_cast<double>(n.causal ? t + 1 : n.T));
  return total / static_cast<double>(n.T);
}

// 1. Why several heads.
void show_why(const Sizes& n) {
  const std::size_t hs = n.C / n.H;
  attn::section(1, "Why several heads");
  print(
      "One head computes one (T, T) pattern per sequence: every query gets a single set of\n"
      "weights, so it can look at one kind of thing at a time (the previous token, say, or the\n"
      "last vowel). Multi-head attention runs H attentions side by side. Each head gets its own\n"
      "slice of the channels, a subspace of size hs = C / H, computes its own scores and\n"
      "weights there, and the H results are put side by side again and mixed by w_o.\n");
  print(fmt::format("Here C = {} and H = {}, so hs = {} / {} = {}. Head h owns columns\n"
                    "[h * hs, (h + 1) * hs) of q, k and v:\n",
                    n.C, n.H, n.C, n.H, hs));
  for (std::size_t h = 0; h < n.H; ++h) {
    print(fmt::format("  head {:>2}: columns {:>3} .. {:>3}\n", h, h * hs, (h + 1) * hs - 1));
  }
  print(
      "The cost stays the same. The weights are still four (C, C) matrices, whatever H is\n"
      "(head h simply uses column block h of w_q, w_k, w_v, and row block h of w_o), and the\n"
      "score products cost H * T * T * hs = T * T * C multiply-adds per sequence for any H.\n"
      "What H changes is how the C channels are grouped: many small heads or one big one.\n");
}

// 2. The shape of every step, asserted as it prints.
struct Traced {
  Tensor<4> weights;  // (B, H, T, T)
  Tensor<3> out;      // (B, T, C)
};

Traced show_shapes(const Kernels& k, const Tensor<3>& x, const MhaWeights& w, const Sizes& n) {
  const std::size_t B = n.B, T = n.T, C = n.C, H = n.H, hs = C / H;
  attn::section(2, "The shape at every step");
  print(fmt::format(
      "x is (B, T, C) = ({}, {}, {}): {} sequence{} of {} positions, {} channels each. Every\n"
      "step below prints its shape, and the program stops if it is not the expected one.\n",
      B, T, C, B, B == 1 ? "" : "s", T, C));
  print(fmt::format("  {:<34} {:<14} {}\n", "step", "letters", "shape"));

  check_step("x (input)", "(B, T, C)", x, {B, T, C});
  // 1. Three projections, one GEMM each over all B * T rows.
  const Tensor<3> q = attn::linear(x, w.w_q);  // (B, T, C) @ (C, C) -> (B, T, C)
  const Tensor<3> kp = attn::linear(x, w.w_k);  // (B, T, C) @ (C, C) -> (B, T, C)
  const Tensor<3> v = attn::linear(x, w.w_v);  // (B, T, C) @ (C, C) -> (B, T, C)
  check_step("q = linear(x, w_q)", "(B, T, C)", q, {B, T, C});
  check_step("k = linear(x, w_k)", "(B, T, C)", kp, {B, T, C});
  check_step("v = linear(x, w_v)", "(B, T, C)", v, {B, T, C});

  // 2. Split: column block h becomes head h, and heads become a batch axis.
  const Tensor<4> qh = k.split_heads(q, H);   // (B, T, C) -> (B, H, T, hs)
  const Tensor<4> kh = k.split_heads(kp, H);  // (B, T, C) -> (B, H, T, hs)
  const Tensor<4> vh = k.split_heads(v, H);   // (B, T, C) -> (B, H, T, hs)
  check_step("split_heads(q, H)", "(B, H, T, hs)", qh, {B, H, T, hs});
  check_step("split_heads(k, H)", "(B, H, T, hs)", kh, {B, H, T, hs});
  check_step("split_heads(v, H)", "(B, H, T, hs)", vh, {B, H, T, hs});

  // 3. Scores, one (T, hs) @ (hs, T) product per (batch, head), scaled by 1/sqrt(hs). This is
  //    the first thing scaled_dot_product_attention does; written out here to see its shape.
  Tensor<4> scores = xt::zeros<float>({B, H, T, T});
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (std::size_t bh = 0; bh < B * H; ++bh) {
    // (T, hs) @ (T, hs)^T -> (T, T)
    attn::gemm(T, T, hs, scale, qh.data() + bh * T * hs, false, kh.data() + bh * T * hs, true,
               0.0f, scores.data() + bh * T * T);
  }
  check_step("scores = q k^T / sqrt(hs)", "(B, H, T, T)", scores, {B, H, T, T});

  // 4. The attention itself, all heads at once: weights and per-head outputs.
  const attn::AttentionResult att =
      attn::scaled_dot_product_attention(qh, kh, vh, n.causal);  // (B, H, T, T), (B, H, T, hs)
  check_step(n.causal ? "weights = softmax(causal(scores))" : "weights = softmax(scores)",
             "(B, H, T, T)", att.weights, {B, H, T, T});
  check_step("per-head out = weights @ v", "(B, H, T, hs)", att.out, {B, H, T, hs});

  // 5. Merge the heads side by side and mix them with w_o.
  const Tensor<3> merged = k.merge_heads(att.out);  // (B, H, T, hs) -> (B, T, C)
  check_step("merged = merge_heads(out)", "(B, T, C)", merged, {B, T, C});
  const Tensor<3> y = attn::linear(merged, w.w_o);  // (B, T, C) @ (C, C) -> (B, T, C)
  check_step("y = linear(merged, w_o)", "(B, T, C)", y, {B, T, C});

  // What the shapes do not show.
  const std::size_t shown = std::min<std::size_t>(4, hs);
  const std::size_t h1 = H > 1 ? 1 : 0;
  std::vector<float> from_q(shown), from_head(shown);
  for (std::size_t i = 0; i < shown; ++i) {
    from_q[i] = q(0, 0, h1 * hs + i);
    from_head[i] = qh(0, h1, 0, i);
  }
  print(fmt::format(
      "\nThe split only moves numbers. Columns {}..{} of q at batch 0, position 0 are head {}'s\n"
      "first {} numbers at that position:\n",
      h1 * hs, h1 * hs + shown - 1, h1, shown));
  const std::string q_label = fmt::format("q[0, 0, {}:{}]", h1 * hs, h1 * hs + shown);
  const std::string head_label = fmt::format("q_heads[0, {}, 0, 0:{}]", h1, shown);
  const std::size_t width = std::max(q_label.size(), head_label.size());
  print(fmt::format("  {:<{}} = {}\n", q_label, width, attn::format_vector(from_q)));
  print(fmt::format("  {:<{}} = {}\n", head_label, width, attn::format_vector(from_head)));

  const double score_std = visible_score_std(scores, n);
  std::size_t visible_count = 0;
  for (std::size_t t = 0; t < T; ++t) visible_count += n.causal ? t + 1 : T;
  visible_count *= B * H;
  print(fmt::format(
      "scores: standard deviation {} over the {} visible entries. q and k have entries of\n"
      "size about 1, so a dot product of hs = {} of them has standard deviation about\n"
      "sqrt(hs); dividing by sqrt(hs) brings it back to about 1, whatever the head size{}.\n",
      num(score_std, 2), visible_count, hs,
      score_std > 0.7 && score_std < 1.4 ? ""
      : visible_count < 100
          ? fmt::format(" (here {} from only {} scores: a small sample)", num(score_std, 2),
                        visible_count)
          : fmt::format(" (here {}: this draw of the weights is off)", num(score_std, 2))));

  const WeightFacts f = weight_facts(att.weights, n);
  print(fmt::format("weights: every entry in [0, 1]: {}; largest |row sum - 1|: {}\n",
                    f.in_unit_interval ? "yes" : "NO", scientific_difference(f.max_row_error)));
  if (n.causal) {
    print(fmt::format("weights: future entries that are exactly 0: {} of {}\n", f.future_zero,
                      f.future));
    const Tensor<4> by_hand = attn::masked_softmax<4>(scores, attn::causal_mask(T));
    print("masked_softmax(scores, causal_mask(T)) vs those weights: max |difference| " +
          scientific_difference(max_abs_diff(by_hand, att.weights)) + "\n");
  } else {
    const Tensor<4> by_hand = attn::softmax<4>(scores);
    print("softmax(scores) vs those weights: max |difference| " +
          scientific_difference(max_abs_diff(by_hand, att.weights)) + "\n");
  }
  print(fmt::format("y: no NaN, no inf: {}\n", all_finite(y) ? "yes" : "NO"));
  attn::claim(f.in_unit_interval && f.max_row_error < 1e-5 && f.future_zero == f.future &&
                  all_finite(y),
              "weights in [0, 1], rows sum to 1, the future is 0, y is finite");
  const Tensor<3> one_call = k.mha_forward(x, w, H, n.causal);  // (B, T, C)
  print("These steps are what mha_forward(x, w, H) does in one call:\n"
        "  max |y - mha_forward(x, w, H)| = " +
        scientific_difference(max_abs_diff(y, one_call)) + "\n");
  attn::claim(max_abs_diff(y, one_call) < 1e-4, "the steps are what mha_forward does");
  return {att.weights, one_call};
}

// 3. The loop over heads against the batched forward.
void show_loop_vs_batched(const Tensor<3>& x, const MhaWeights& w, const Sizes& n,
                          const Tensor<3>& batched) {
  const std::size_t hs = n.C / n.H;
  attn::section(3, "Heads in a loop vs all heads at once");
  print(fmt::format(
      "Papers write head h with its own matrices W_h^Q, W_h^K, W_h^V of shape (C, hs). In a\n"
      "loop (attn::mha_forward_per_head), head h takes column block h of w_q, w_k and w_v,\n"
      "computes q_h = x @ w_q[:, {}h:{}h+{}] and its own attention, and the H outputs are\n"
      "concatenated before w_o. The batched forward (attn::mha_forward) makes one (C, C)\n"
      "product per projection instead of H (C, hs) ones, then attends with every head straight\n"
      "from q, k and v: head h's block of a row is hs floats at column h * hs, the rows are C\n"
      "floats apart, and BLAS can read that in place, so the split and the merge copy nothing.\n"
      "The same numbers, in a different order of work.\n",
      hs, hs, hs));
  const Tensor<3> looped = attn::mha_forward_per_head(x, w, n.H, n.causal).out;  // (B, T, C)
  print("  max |loop over heads - batched| = " +
        scientific_difference(max_abs_diff(looped, batched)) + "\n");
  print(
      "Any difference is float rounding: BLAS may add the C products of a dot product in\n"
      "another order for a (C, hs) block than for the whole (C, C) matrix.\n");
  attn::claim(max_abs_diff(looped, batched) < 1e-4, "the loop and the batched forward agree");
}

// 4. One fused QKV matrix against three separate ones.
void show_fused(const Tensor<3>& x, const MhaWeights& w, const Sizes& n,
                const Tensor<3>& separate) {
  const std::size_t C = n.C;
  attn::section(4, "Separate vs fused QKV");
  print(
      "q, k and v are three products of the same x. A matrix product works column by column,\n"
      "so x @ [w_q | w_k | w_v] = [x @ w_q | x @ w_k | x @ w_v]: glue the three matrices side\n"
      "by side and one GEMM reads x once and makes all three (GPT-2's c_attn does this).\n");
  const Matrix w_qkv = attn::fuse_qkv(w);  // (C, 3C)
  const std::array<std::size_t, 2> want = {C, 3 * C};
  if (w_qkv.shape() != want) {
    throw std::logic_error("shape check: fuse_qkv should be " + attn::shape_str(want) + ", got " +
                           attn::shape_str(w_qkv.shape()));
  }
  print(fmt::format("  w_qkv = fuse_qkv(w)  (C, 3C) = {}: columns 0..{} are w_q, {}..{} w_k, "
                    "{}..{} w_v\n",
                    attn::shape_str(w_qkv.shape()), C - 1, C, 2 * C - 1, 2 * C, 3 * C - 1));
  const Matrix block_q = xt::view(w_qkv, xt::all(), xt::range(0, C));
  const Matrix block_k = xt::view(w_qkv, xt::all(), xt::range(C, 2 * C));
  const Matrix block_v = xt::view(w_qkv, xt::all(), xt::range(2 * C, 3 * C));
  const double block_diff = std::max({max_abs_diff(block_q, w.w_q),
                                      max_abs_diff(block_k, w.w_k),
                                      max_abs_diff(block_v, w.w_v)});
  print("  the three column blocks vs w_q, w_k, w_v: max |difference| " +
        scientific_difference(block_diff) + "\n");
  const Tensor<3> fused =
      attn::mha_forward_fused(x, w_qkv, w.w_o, n.H, n.causal, /*need_weights=*/false).out;
  print("  max |fused - separate| (mha_forward_fused vs mha_forward) = " +
        scientific_difference(max_abs_diff(fused, separate)) + "\n");
  attn::claim(block_diff == 0.0 && max_abs_diff(fused, separate) < 1e-4,
              "fused and separate QKV give the same output");
  print(fmt::format(
      "Same parameters (3 C^2 = {} in w_qkv), same output; fewer, larger GEMMs.\n",
      grouped(3 * C * C)));
}

// 5. One heatmap per head.
void show_heads(const Kernels& k, const Tensor<3>& x, const MhaWeights& w, const Sizes& n,
                const Tensor<4>& weights, float init_std) {
  attn::section(5, "One pattern per head");
  print(
      "The weights of every head for batch 0 (row = query, column = key, darker = more). Same\n"
      "x, same four matrices: the heads differ only in which columns they read.\n");
  const bool color = attn::use_color(stdout);
  for (std::size_t h = 0; h < n.H; ++h) {
    const Matrix m = head_matrix(weights, 0, h);  // (T, T)
    print("\n");
    print(attn::heatmap_text(m, head_heatmap(fmt::format("head {} (batch 0)", h), n.T), color));
    std::size_t best = 0;
    for (std::size_t s = 1; s < n.T; ++s)
      if (m(n.T - 1, s) > m(n.T - 1, best)) best = s;
    print(fmt::format("  the last query, q{}, looks most at k{} (weight {})\n", n.T - 1, best,
                      num(m(n.T - 1, best))));
  }
  print(fmt::format(
      "\nThese weights are untrained, so the patterns are random; training would make them\n"
      "useful. Their contrast comes from the initialisation: std 1/sqrt(C) = {} keeps q and k\n"
      "at size about 1. GPT-2's std {} would make them {} times smaller and the scores\n"
      "{} times smaller, so every head would be close to a plain average:\n",
      num(init_std), num(kGpt2Std, 2), num(init_std / kGpt2Std, 2),
      num((init_std / kGpt2Std) * (init_std / kGpt2Std), 1)));
  const float shrink = kGpt2Std / init_std;
  const MhaWeights small{shrink * w.w_q, shrink * w.w_k, shrink * w.w_v, shrink * w.w_o};
  const Tensor<4> flat = head_weights(k, x, small, n.H, n.causal);  // (B, H, T, T)
  const double far = max_distance_from_uniform(weights, n);
  const double near = max_distance_from_uniform(flat, n);
  print(fmt::format("  largest |weight - uniform|: {} with std {}, {} with std {}\n", num(far),
                    num(init_std), num(near), num(kGpt2Std, 2)));
  attn::claim(near <= far + 1e-6, "the smaller init is closer to a plain average");
}

// 6. The parameters.
void show_parameters(const MhaWeights& w, const Sizes& n) {
  const std::size_t C = n.C;
  attn::section(6, "Parameter count");
  const std::size_t formula = 4 * C * C;
  const std::size_t actual = w.w_q.size() + w.w_k.size() + w.w_v.size() + w.w_o.size();
  print(fmt::format(
      "Four (C, C) matrices and no biases: 4 C^2 = 4 * {}^2 = {}.\n"
      "Counted from the tensors: w_q {} + w_k {} + w_v {} + w_o {} = {} ({}).\n"
      "Fused: w_qkv {} + w_o {} = {}.\n",
      C, grouped(formula), grouped(w.w_q.size()), grouped(w.w_k.size()),
      grouped(w.w_v.size()), grouped(w.w_o.size()), grouped(actual),
      actual == formula ? "equal" : "DIFFERENT", grouped(3 * C * C),
      grouped(w.w_o.size()), grouped(3 * C * C + w.w_o.size())));
  print(fmt::format(
      "H does not appear: {} heads of {} columns use exactly the numbers one head of {} would.\n"
      "(PyTorch's nn.Linear adds a bias to each projection: 4 C^2 + 4 C = {}.)\n",
      n.H, C / n.H, C, grouped(4 * C * C + 4 * C)));
}

// 7. 1, 4 and 8 heads on the same input, with the same four matrices.
void show_head_counts(const Kernels& k, const Tensor<3>& x, const MhaWeights& w, const Sizes& n) {
  attn::section(7, "1, 4 and 8 heads");
  print(
      "The same x and the same four matrices, grouped into 1, 4 and 8 heads. \"differ\" is the\n"
      "mean |w_h - w_h'| over every pair of heads and every visible (query, key): 0 if all\n"
      "heads attend alike. \"entropy\" is the mean of -sum w ln w over the rows, in nats: " +
      num(uniform_row_entropy(n), 3) + "\n"
      "for a plain average over the visible keys, 0 for a head that looks at one key only.\n");
  print(fmt::format("  {:>5} {:>4} {:>11} {:>14} {:>8} {:>8}\n", "heads", "hs", "parameters",
                    "forward FLOPs", "differ", "entropy"));
  std::vector<double> differs;  // the differ column, for the sentence below
  for (const std::size_t H : {std::size_t{1}, std::size_t{4}, std::size_t{8}}) {
    if (n.C % H != 0) {
      print(fmt::format("  {:>5}  skipped: {} does not divide C = {}\n", H, H, n.C));
      continue;
    }
    const Sizes m{n.B, n.T, n.C, H, n.causal};
    const Tensor<4> weights = head_weights(k, x, w, H, n.causal);  // (B, H, T, T)
    const double differ = mean_pairwise_difference(weights, m);
    if (differ >= 0.0) differs.push_back(differ);
    const double flops = attn::mha_forward_flops(n.B, n.T, n.C, H);
    print(fmt::format("  {:>5} {:>4} {:>11} {:>14} {:>8} {:>8}\n", H, n.C / H,
                      grouped(4 * n.C * n.C),
                      grouped(static_cast<std::uint64_t>(flops)),
                      differ < 0.0 ? "-" : num(differ), num(mean_row_entropy(weights, m), 3)));
  }
  // "about as much whatever H is": the differ column, within a factor 1.5 across H.
  const bool alike = differs.size() < 2 ||
                     *std::max_element(differs.begin(), differs.end()) <=
                         1.5 * *std::min_element(differs.begin(), differs.end());
  print(
      "Parameters and FLOPs do not move: H * hs = C. What changes is the number of patterns\n"
      "per query, one per head, each computed from fewer channels. Untrained, every head is\n"
      "random with scores of the same spread (section 2), so the heads differ by chance");
  print(alike ? ",\nand by about as much whatever H is." : ".");
  print(
      " Training can give each head its own job: more\n"
      "heads leave room for more jobs, each with a narrower view, hs = C / H numbers to\n"
      "match a query with a key.\n");
}

// Mean wall-clock time of one call of `f`, in microseconds: one warm-up call, then up to 200
// calls or a quarter of a second, whichever comes first.
template <class F>
double microseconds_per_call(F&& f) {
  using clock = std::chrono::steady_clock;
  double checksum = static_cast<double>(f()(0, 0, 0));
  const auto start = clock::now();
  int calls = 0;
  double elapsed = 0.0;
  while (calls < 200 && elapsed < 0.25e6) {
    checksum += static_cast<double>(f()(0, 0, 0));
    ++calls;
    elapsed = std::chrono::duration<double, std::micro>(clock::now() - start).count();
  }
  if (std::isnan(checksum)) print("(NaN in the timing runs)\n");  // keeps the work observable
  return elapsed / calls;
}

void show_timing(const Kernels& k, const Tensor<3>& x, const MhaWeights& w, const Sizes& n) {
  const Matrix w_qkv = attn::fuse_qkv(w);
  const double looped =
      microseconds_per_call([&] { return attn::mha_forward_per_head(x, w, n.H, n.causal).out; });
  const double batched = microseconds_per_call([&] { return k.mha_forward(x, w, n.H, n.causal); });
  const double fused = microseconds_per_call(
      [&] { return attn::mha_forward_fused(x, w_qkv, w.w_o, n.H, n.causal, false).out; });
  print(fmt::format("\ntiming: one forward of (B, T, C) = ({}, {}, {}) with {} heads:\n", n.B,
                    n.T, n.C, n.H));
  print(fmt::format("  loop over heads  {:.1f} us\n  batched          {:.1f} us\n"
                    "  fused QKV        {:.1f} us\n",
                    looped, batched, fused));
}

}  // namespace

int main(int argc, char** argv) {
  attn::Cli cli("05_multi_head",
                "Chapter 05: multi-head attention. The shape of every step for a (B, T, C) input "
                "with H heads, a loop over heads vs the batched forward, separate vs fused QKV, "
                "one heatmap per head, the parameter count, and 1, 4 and 8 heads compared.");
  Sizes n{2, 10, 64, 4, true};
  bool no_causal = false;
  cli.add_size("--batch-size", n.B, "batch size B: sequences processed together", 1, kMaxBatch);
  cli.add_size("--block-size", n.T, "sequence length T: every head's weights are (T, T)", 1,
               kMaxTimeSteps);
  cli.add_size("--n-embd", n.C, "model width C", 1, kMaxChannels);
  cli.add_size("--n-heads", n.H,
               "number of heads H; must divide C, each head gets hs = C / H channels", 1,
               kMaxHeads);
  cli.add_flag("--no-causal", no_causal,
               "let every query see every key (encoder-style attention, no causal mask)");
  cli.add_alias("batch", "batch-size");  // the names before the lecture's vocabulary
  cli.add_alias("time-steps", "block-size");
  cli.add_alias("channels", "n-embd");
  cli.add_alias("heads", "n-heads");

  return cli.run(argc, argv, [&](const attn::CommonOptions& options) {
    if (n.C % n.H != 0) {
      throw attn::UsageError(fmt::format(
          "--n-heads {} does not divide --n-embd {}: every head gets C / H channels", n.H, n.C));
    }
    n.causal = !no_causal;
    const Kernels k = options.mine ? learner_kernels() : reference_kernels();
    // The input here is random vectors, so no text is needed; a bad --data is still an error.
    const std::string corpus_origin = options.data ? attn::load_corpus(options.data).origin : "";

    print("Chapter 05: multi-head attention\n");
    if (!corpus_origin.empty()) {
      print("corpus: " + corpus_origin + ", read but not used (the input is random vectors)\n");
    }
    const std::size_t hs = n.C / n.H;
    print(fmt::format("B = {}, T = {}, C = {}, H = {} heads of hs = {}, {}, seed = {}\n", n.B, n.T,
                      n.C, n.H, hs, n.causal ? "causal" : "not causal (--no-causal)",
                      options.seed));
    print(fmt::format("functions: {}\n",
                      options.mine ? "yours (ex05::, --mine)" : "the reference (attn::)"));

    // Weights first, like a model that is built before it sees data; then the input.
    attn::Rng rng(options.seed);
    const float init_std = 1.0f / std::sqrt(static_cast<float>(n.C));
    const MhaWeights w = attn::mha_init(rng, n.C, init_std);          // 4 x (C, C)
    const Tensor<3> x = attn::randn<3>(rng, {n.B, n.T, n.C});         // (B, T, C), N(0, 1)
    print(fmt::format(
        "w_q, w_k, w_v, w_o: ({0}, {0}) each, N(0, 1/C) (std {1}), no biases; x: N(0, 1)\n",
        n.C, num(init_std)));

    show_why(n);
    const Traced traced = show_shapes(k, x, w, n);
    show_loop_vs_batched(x, w, n, traced.out);
    show_fused(x, w, n, traced.out);
    show_heads(k, x, w, n, traced.weights, init_std);
    show_parameters(w, n);
    show_head_counts(k, x, w, n);

    if (options.svg_dir) {
      std::vector<std::string> paths;
      for (std::size_t h = 0; h < n.H; ++h) {
        const auto path = *options.svg_dir / fmt::format("head_{}.svg", h);
        attn::write_svg(path, attn::heatmap_svg(head_matrix(traced.weights, 0, h),
                                                head_heatmap(fmt::format("head {} of {}, batch 0",
                                                                         h, n.H),
                                                             n.T)));
        paths.push_back(path.string());
      }
      print(fmt::format("\nwrote {} .. {}\n", paths.front(), paths.back()));
    }
    if (options.timing) show_timing(k, x, w, n);
  });
}
