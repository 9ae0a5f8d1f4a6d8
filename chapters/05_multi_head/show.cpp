// chapters/05_multi_head/show.cpp: chapter 05's narration, the functions that print what
// main.cpp computes, one per section, in teaching order. Every sentence that depends on a number
// is chosen by that number; claims check the rest.

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/term/narrate.hpp"
#include "attn/term/plot.hpp"
#include "attn/term/print.hpp"
#include "walkthrough.hpp"

// Scientific notation, so float rounding (1e-7) and a real bug (1e-1) look different at a glance.
// (attn::difference_text prints 8 decimals: too few for the 1e-9 of a row sum.)
std::string ch05::scientific_difference(double d) {
  return d == 0.0 ? std::string("0 (bitwise identical)") : fmt::format("{:.2e}", d);
}

namespace ch05 {
namespace {

using attn::grouped;
using attn::num;

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

}  // namespace

void show_header(const Sizes& n, std::uint64_t seed, bool mine, const std::string& corpus_origin,
                 float init_std) {
  fmt::print("Chapter 05: multi-head attention\n");
  if (!corpus_origin.empty()) {
    fmt::print("{}",
               "corpus: " + corpus_origin + ", read but not used (the input is random vectors)\n");
  }
  const std::size_t hs = n.C / n.H;
  fmt::print("B = {}, T = {}, C = {}, H = {} heads of hs = {}, {}, seed = {}\n", n.B, n.T, n.C, n.H,
             hs, n.causal ? "causal" : "not causal (--no-causal)", seed);
  fmt::print("functions: {}\n", mine ? "yours (ex05::, --mine)" : "the reference (attn::)");
  fmt::print("w_q, w_k, w_v, w_o: ({0}, {0}) each, N(0, 1/C) (std {1}), no biases; x: N(0, 1)\n",
             n.C, num(init_std));
}

// 1. Why several heads.
void show_why(const Sizes& n) {
  const std::size_t hs = n.C / n.H;
  attn::section(1, "Why several heads");
  fmt::print(
      "One head computes one (T, T) pattern per sequence: every query gets a single set of\n"
      "weights, so it can look at one kind of thing at a time (the previous token, say, or the\n"
      "last vowel). Multi-head attention runs H attentions side by side. Each head gets its own\n"
      "slice of the channels, a subspace of size hs = C / H, computes its own scores and\n"
      "weights there, and the H results are put side by side again and mixed by w_o.\n");
  fmt::print(
      "Here C = {} and H = {}, so hs = {} / {} = {}. Head h owns columns\n"
      "[h * hs, (h + 1) * hs) of q, k and v:\n",
      n.C, n.H, n.C, n.H, hs);
  for (std::size_t h = 0; h < n.H; ++h) {
    fmt::print("  head {:>2}: columns {:>3} .. {:>3}\n", h, h * hs, (h + 1) * hs - 1);
  }
  fmt::print(
      "The cost stays the same. The weights are still four (C, C) matrices, whatever H is\n"
      "(head h simply uses column block h of w_q, w_k, w_v, and row block h of w_o), and the\n"
      "score products cost H * T * T * hs = T * T * C multiply-adds per sequence for any H.\n"
      "What H changes is how the C channels are grouped: many small heads or one big one.\n");
}

// 2. The shape at every step: the heading and the table's header.
void show_trace_start(const Sizes& n) {
  const std::size_t B = n.B, T = n.T, C = n.C;
  attn::section(2, "The shape at every step");
  fmt::print(
      "x is (B, T, C) = ({}, {}, {}): {} sequence{} of {} positions, {} channels each. Every\n"
      "step below prints its shape, and the program stops if it is not the expected one.\n",
      B, T, C, B, B == 1 ? "" : "s", T, C);
  fmt::print("  {:<34} {:<14} {}\n", "step", "letters", "shape");
}

// One row of the trace: the step, its shape in letters and the shape it produced.
void show_trace_step(const std::string& step, const std::string& letters,
                     const std::string& shape) {
  fmt::print("  {:<34} {:<14} {:<16} checked\n", step, letters, shape);
}

// What the shapes do not show: the split moves numbers, the scores' scale, the weights.
void show_trace_facts(const Sizes& n, const TraceFacts& f) {
  const std::size_t hs = n.C / n.H;
  const std::size_t shown = f.from_q.size(), h1 = f.head;
  fmt::print(
      "\nThe split only moves numbers. Columns {}..{} of q at batch 0, position 0 are head {}'s\n"
      "first {} numbers at that position:\n",
      h1 * hs, h1 * hs + shown - 1, h1, shown);
  const std::string q_label = fmt::format("q[0, 0, {}:{}]", h1 * hs, h1 * hs + shown);
  const std::string head_label = fmt::format("q_heads[0, {}, 0, 0:{}]", h1, shown);
  const std::size_t width = std::max(q_label.size(), head_label.size());
  fmt::print("  {:<{}} = {}\n", q_label, width, attn::format_vector(f.from_q));
  fmt::print("  {:<{}} = {}\n", head_label, width, attn::format_vector(f.from_head));

  const double score_std = f.score_std;
  const std::size_t visible_count = f.visible_scores;
  fmt::print(
      "scores: standard deviation {} over the {} visible entries. q and k have entries of\n"
      "size about 1, so a dot product of hs = {} of them has standard deviation about\n"
      "sqrt(hs); dividing by sqrt(hs) brings it back to about 1, whatever the head size{}.\n",
      num(score_std, 2), visible_count, hs,
      score_std > 0.7 && score_std < 1.4 ? ""
      : visible_count < 100
          ? fmt::format(" (here {} from only {} scores: a small sample)", num(score_std, 2),
                        visible_count)
          : fmt::format(" (here {}: this draw of the weights is off)", num(score_std, 2)));

  const WeightFacts& w = f.weights;
  fmt::print("weights: every entry in [0, 1]: {}; largest |row sum - 1|: {}\n",
             w.in_unit_interval ? "yes" : "NO", scientific_difference(w.max_row_error));
  if (n.causal) {
    fmt::print("weights: future entries that are exactly 0: {} of {}\n", w.future_zero, w.future);
    fmt::print("{}", "masked_softmax(scores, causal_mask(T)) vs those weights: max |difference| " +
                         scientific_difference(f.by_hand_diff) + "\n");
  } else {
    fmt::print("{}", "softmax(scores) vs those weights: max |difference| " +
                         scientific_difference(f.by_hand_diff) + "\n");
  }
  fmt::print("y: no NaN, no inf: {}\n", f.y_finite ? "yes" : "NO");
  attn::claim(
      w.in_unit_interval && w.max_row_error < 1e-5 && w.future_zero == w.future && f.y_finite,
      "weights in [0, 1], rows sum to 1, the future is 0, y is finite");
}

// The steps written out against one call of mha_forward.
void show_one_call(double diff) {
  fmt::print("{}",
             "These steps are what mha_forward(x, w, H) does in one call:\n"
             "  max |y - mha_forward(x, w, H)| = " +
                 scientific_difference(diff) + "\n");
  attn::claim(diff < 1e-4, "the steps are what mha_forward does");
}

// 3. The loop over heads against the batched forward.
void show_loop_vs_batched(const Sizes& n, const LoopVsBatched& d) {
  const std::size_t hs = n.C / n.H;
  attn::section(3, "Heads in a loop vs all heads at once");
  fmt::print(
      "Papers write head h with its own matrices W_h^Q, W_h^K, W_h^V of shape (C, hs). In a\n"
      "loop (attn::mha_forward_per_head), head h takes column block h of w_q, w_k and w_v,\n"
      "computes q_h = x @ w_q[:, {}h:{}h+{}] and its own attention, and the H outputs are\n"
      "concatenated before w_o. The batched forward (attn::mha_forward) makes one (C, C)\n"
      "product per projection instead of H (C, hs) ones, then splits q, k and v into heads.\n"
      "The same numbers, in a different order of work.\n",
      hs, hs, hs);
  fmt::print("{}",
             "  max |loop over heads - batched| = " + scientific_difference(d.loop_diff) + "\n");
  if (d.loop_diff == 0.0) {
    fmt::print(
        "Bitwise identical: each output is the same dot product of C terms added in the same\n"
        "order, whether its column sits in a (C, hs) block or in the whole (C, C) matrix.\n");
  } else {
    fmt::print(
        "The difference is float rounding: the two add the C products of a dot product in\n"
        "another order.\n");
  }
  attn::claim(d.loop_diff < 1e-4, "the loop and the batched forward agree");
  fmt::print(
      "The kernel training uses (attn::fast::mha_forward, common/src/fast/attention.cpp) goes\n"
      "further: BLAS products, and every head read in place from q, k and v (head h's block of\n"
      "a row is hs floats at column h * hs, rows C floats apart), so the split and the merge\n"
      "copy nothing.\n");
  fmt::print("{}", "  max |fast kernel - batched| = " + scientific_difference(d.fast_diff) + "\n");
  fmt::print("{}", d.fast_diff == 0.0
                       ? "Bitwise identical here.\n"
                       : "Float rounding: BLAS adds the products in its own order (tiles, "
                         "SIMD lanes).\n");
  attn::claim(d.fast_diff < 1e-4, "the fast kernel and the reference agree");
}

// 4. One fused QKV matrix against three separate ones.
void show_fused(const Sizes& n, const FusedQkv& f) {
  const std::size_t C = n.C;
  attn::section(4, "Separate vs fused QKV");
  fmt::print(
      "q, k and v are three products of the same x. A matrix product works column by column,\n"
      "so x @ [w_q | w_k | w_v] = [x @ w_q | x @ w_k | x @ w_v]: glue the three matrices side\n"
      "by side and one GEMM reads x once and makes all three (GPT-2's c_attn does this).\n");
  fmt::print(
      "  w_qkv = fuse_qkv(w)  (C, 3C) = {}: columns 0..{} are w_q, {}..{} w_k, "
      "{}..{} w_v\n",
      attn::shape_str(f.w_qkv.shape()), C - 1, C, 2 * C - 1, 2 * C, 3 * C - 1);
  fmt::print("{}", "  the three column blocks vs w_q, w_k, w_v: max |difference| " +
                       scientific_difference(f.block_diff) + "\n");
  fmt::print("{}", "  max |fused - separate| (mha_forward_fused vs mha_forward) = " +
                       scientific_difference(f.output_diff) + "\n");
  attn::claim(f.block_diff == 0.0 && f.output_diff < 1e-4,
              "fused and separate QKV give the same output");
  fmt::print("Same parameters (3 C^2 = {} in w_qkv), same output; fewer, larger GEMMs.\n",
             grouped(3 * C * C));
}

// 5. One heatmap per head.
void show_heads(const Sizes& n, const Tensor<4>& weights, const InitContrast& c) {
  const float init_std = c.init_std;
  attn::section(5, "One pattern per head");
  fmt::print(
      "The weights of every head for batch 0 (row = query, column = key, darker = more). Same\n"
      "x, same four matrices: the heads differ only in which columns they read.\n");
  const bool color = attn::use_color(stdout);
  for (std::size_t h = 0; h < n.H; ++h) {
    const Matrix m = head_matrix(weights, 0, h);  // (T, T)
    fmt::print("\n");
    fmt::print(
        "{}", attn::heatmap_text(m, head_heatmap(fmt::format("head {} (batch 0)", h), n.T), color));
    std::size_t best = 0;
    for (std::size_t s = 1; s < n.T; ++s)
      if (m(n.T - 1, s) > m(n.T - 1, best)) best = s;
    fmt::print("  the last query, q{}, looks most at k{} (weight {})\n", n.T - 1, best,
               num(m(n.T - 1, best)));
  }
  fmt::print(
      "\nThese weights are untrained, so the patterns are random; training would make them\n"
      "useful. Their contrast comes from the initialisation: std 1/sqrt(C) = {} keeps q and k\n"
      "at size about 1. GPT-2's std {} would make them {} times smaller and the scores\n"
      "{} times smaller, so every head would be close to a plain average:\n",
      num(init_std), num(kGpt2Std, 2), num(init_std / kGpt2Std, 2),
      num((init_std / kGpt2Std) * (init_std / kGpt2Std), 1));
  const double far = c.far, near = c.near;
  fmt::print("  largest |weight - uniform|: {} with std {}, {} with std {}\n", num(far),
             num(init_std), num(near), num(kGpt2Std, 2));
  attn::claim(near <= far + 1e-6, "the smaller init is closer to a plain average");
}

// 6. The parameters.
void show_parameters(const MhaWeights& w, const Sizes& n) {
  const std::size_t C = n.C;
  attn::section(6, "Parameter count");
  const std::size_t formula = 4 * C * C;
  const std::size_t actual = w.w_q.size() + w.w_k.size() + w.w_v.size() + w.w_o.size();
  fmt::print(
      "Four (C, C) matrices and no biases: 4 C^2 = 4 * {}^2 = {}.\n"
      "Counted from the tensors: w_q {} + w_k {} + w_v {} + w_o {} = {} ({}).\n"
      "Fused: w_qkv {} + w_o {} = {}.\n",
      C, grouped(formula), grouped(w.w_q.size()), grouped(w.w_k.size()), grouped(w.w_v.size()),
      grouped(w.w_o.size()), grouped(actual), actual == formula ? "equal" : "DIFFERENT",
      grouped(3 * C * C), grouped(w.w_o.size()), grouped(3 * C * C + w.w_o.size()));
  fmt::print(
      "H does not appear: {} heads of {} columns use exactly the numbers one head of {} would.\n"
      "(PyTorch's nn.Linear adds a bias to each projection: 4 C^2 + 4 C = {}.)\n",
      n.H, C / n.H, C, grouped(4 * C * C + 4 * C));
}

// 7. 1, 4 and 8 heads on the same input, with the same four matrices.
void show_head_counts(const Sizes& n, const HeadCounts& hc) {
  attn::section(7, "1, 4 and 8 heads");
  fmt::print(
      "{}",
      "The same x and the same four matrices, grouped into 1, 4 and 8 heads. \"differ\" is the\n"
      "mean |w_h - w_h'| over every pair of heads and every visible (query, key): 0 if all\n"
      "heads attend alike. \"entropy\" is the mean of -sum w ln w over the rows, in nats: " +
          num(hc.uniform_entropy, 3) +
          "\n"
          "for a plain average over the visible keys, 0 for a head that looks at one key only.\n");
  fmt::print("  {:>5} {:>4} {:>11} {:>14} {:>8} {:>8}\n", "heads", "hs", "parameters",
             "forward FLOPs", "differ", "entropy");
  std::vector<double> differs;  // the differ column, for the sentence below
  for (const HeadCountRow& r : hc.rows) {
    if (!r.divides) {
      fmt::print("  {:>5}  skipped: {} does not divide C = {}\n", r.H, r.H, n.C);
      continue;
    }
    if (r.differ >= 0.0) differs.push_back(r.differ);
    fmt::print("  {:>5} {:>4} {:>11} {:>14} {:>8} {:>8}\n", r.H, n.C / r.H, grouped(4 * n.C * n.C),
               grouped(static_cast<std::uint64_t>(r.flops)), r.differ < 0.0 ? "-" : num(r.differ),
               num(r.entropy, 3));
  }
  // "about as much whatever H is": the differ column, within a factor 1.5 across H.
  const bool alike =
      differs.size() < 2 || *std::max_element(differs.begin(), differs.end()) <=
                                1.5 * *std::min_element(differs.begin(), differs.end());
  fmt::print(
      "Parameters and FLOPs do not move: H * hs = C. What changes is the number of patterns\n"
      "per query, one per head, each computed from fewer channels. Untrained, every head is\n"
      "random with scores of the same spread (section 2), so the heads differ by chance");
  fmt::print("{}", alike ? ",\nand by about as much whatever H is." : ".");
  fmt::print(
      " Training can give each head its own job: more\n"
      "heads leave room for more jobs, each with a narrower view, hs = C / H numbers to\n"
      "match a query with a key.\n");
}

void save_figures(const std::filesystem::path& dir, const Tensor<4>& weights, const Sizes& n) {
  std::vector<std::string> paths;
  for (std::size_t h = 0; h < n.H; ++h) {
    const auto path = dir / fmt::format("head_{}.svg", h);
    attn::write_svg(
        path, attn::heatmap_svg(head_matrix(weights, 0, h),
                                head_heatmap(fmt::format("head {} of {}, batch 0", h, n.H), n.T)));
    paths.push_back(path.string());
  }
  fmt::print("\nwrote {} .. {}\n", paths.front(), paths.back());
}

void show_timing(const Sizes& n, const Timing& t) {
  fmt::print("\ntiming: one forward of (B, T, C) = ({}, {}, {}) with {} heads:\n", n.B, n.T, n.C,
             n.H);
  fmt::print(
      "  loop over heads  {:.1f} us\n  batched          {:.1f} us\n"
      "  fused QKV        {:.1f} us\n",
      t.looped, t.batched, t.fused);
}

}  // namespace ch05
