// chapters/05_multi_head/main.cpp: chapter 05, multi-head attention.
// Follows one (B, T, C) input through H heads and checks the shape of every step, then compares
// a loop over heads and a fused QKV matrix with the batched forward, draws each head's weights
// and puts 1, 4 and 8 heads side by side. The math lives in common/src/ops/attention.cpp and
// common/src/ops/linear.cpp. Each section computes here, in the lesson's order, and is printed by
// its show_ function in show.cpp; the shape trace of section 2 prints as it goes.
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

#include "attn/fast/gemm.hpp"
#include "attn/fast/attention.hpp"
#include "attn/ops/attention.hpp"
#include "attn/model/block.hpp"
#include "attn/core/check.hpp"
#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/ops/linear.hpp"
#include "attn/ops/mask.hpp"
#include "attn/term/narrate.hpp"
#include "attn/term/print.hpp"
#include "attn/core/random.hpp"
#include "attn/ops/softmax.hpp"
#include "attn/core/xt.hpp"
#include "exercises.hpp"
#include "walkthrough.hpp"

namespace {

using namespace ch05;  // the sections' results and their show functions (walkthrough.hpp)

// Limits that keep the output readable and the run well under a second.
constexpr std::size_t kMaxBatch = 16;
constexpr std::size_t kMaxTimeSteps = 32;  // one (T, T) heatmap per head is printed
constexpr std::size_t kMaxChannels = 512;
constexpr std::size_t kMaxHeads = 16;  // one heatmap per head

// The three functions this chapter teaches: from attn:: (the reference) or, with --mine, from
// the learner's ex05:: exercises.
struct Kernels {
  Tensor<4> (*split_heads)(const Tensor<3>& x, std::size_t n_heads);  // (B,T,C) -> (B,H,T,hs)
  Tensor<3> (*merge_heads)(const Tensor<4>& x);                       // (B,H,T,hs) -> (B,T,C)
  Tensor<3> (*mha_forward)(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads,
                           bool causal);  // (B,T,C) -> (B,T,C)
};

Tensor<3> reference_mha_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads,
                                bool causal) {
  return attn::mha_forward(x, w, n_heads, causal, /*need_weights=*/false).out;
}

Kernels reference_kernels() {
  return {&attn::split_heads, &attn::merge_heads, &reference_mha_forward};
}

Kernels learner_kernels() { return {&ex05::split_heads, &ex05::merge_heads, &ex05::mha_forward}; }

using attn::max_abs_diff;

// Prints one step of the shape trace (show.cpp) and asserts the shape: the walkthrough stops with
// std::logic_error if a step ever produced anything else (with the reference it never does).
template <std::size_t N>
void check_step(const std::string& step, const std::string& letters, const Tensor<N>& t,
                const std::array<std::size_t, N>& expected) {
  const std::string got = attn::shape_str(t.shape());
  const std::string want = attn::shape_str(expected);
  show_trace_step(step, letters, got);
  if (got != want) {
    throw std::logic_error("shape check: " + step + " should be " + letters + " = " + want +
                           ", got " + got);
  }
}

// True when key s is visible to query t.
bool visible(const Sizes& n, std::size_t t, std::size_t s) { return !n.causal || s <= t; }

// (B, H, T, T) weights -> the largest |row sum - 1|, whether every weight is in [0, 1], and the
// masked entries (WeightFacts, walkthrough.hpp).
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
  const Tensor<4> q = k.split_heads(attn::linear(x, w.w_q), H);         // (B, H, T, hs)
  const Tensor<4> kk = k.split_heads(attn::linear(x, w.w_k), H);        // (B, H, T, hs)
  const Tensor<4> v = k.split_heads(attn::linear(x, w.w_v), H);         // (B, H, T, hs)
  return attn::scaled_dot_product_attention(q, kk, v, causal).weights;  // (B, H, T, T)
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
            total +=
                std::abs(static_cast<double>(w(b, h, t, s)) - static_cast<double>(w(b, g, t, s)));
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

// 2. The shape of every step, asserted as it prints: the forward pass written out step by
// step (this trace is the procedure the section teaches, so each step is shown as it is
// computed, show_trace_step); then what the shapes do not show (TraceFacts, show_trace_facts).
struct Traced {
  Tensor<4> weights;  // (B, H, T, T)
  Tensor<3> out;      // (B, T, C)
};

Traced trace_shapes(const Kernels& k, const Tensor<3>& x, const MhaWeights& w, const Sizes& n) {
  const std::size_t B = n.B, T = n.T, C = n.C, H = n.H, hs = C / H;
  show_trace_start(n);

  check_step("x (input)", "(B, T, C)", x, {B, T, C});
  // 1. Three projections, one GEMM each over all B * T rows.
  const Tensor<3> q = attn::linear(x, w.w_q);   // (B, T, C) @ (C, C) -> (B, T, C)
  const Tensor<3> kp = attn::linear(x, w.w_k);  // (B, T, C) @ (C, C) -> (B, T, C)
  const Tensor<3> v = attn::linear(x, w.w_v);   // (B, T, C) @ (C, C) -> (B, T, C)
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
    attn::fast::gemm(T, T, hs, scale, qh.data() + bh * T * hs, false, kh.data() + bh * T * hs, true,
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
  TraceFacts f;
  // The split only moves numbers: the first (up to) 4 numbers of head 1 (head 0 if H = 1) at
  // batch 0, position 0, read from q (columns head * hs ..) and from the split q_heads.
  f.head = H > 1 ? 1 : 0;
  for (std::size_t i = 0; i < std::min<std::size_t>(4, hs); ++i) {
    f.from_q.push_back(q(0, 0, f.head * hs + i));
    f.from_head.push_back(qh(0, f.head, 0, i));
  }
  // The scale of the scores, over the entries a query may use.
  f.score_std = visible_score_std(scores, n);
  for (std::size_t t = 0; t < T; ++t) f.visible_scores += n.causal ? t + 1 : T;
  f.visible_scores *= B * H;
  // The weights, and the same softmax of the scores by hand.
  f.weights = weight_facts(att.weights, n);
  if (n.causal) {
    const Tensor<4> by_hand = attn::masked_softmax<4>(scores, attn::causal_mask(T));  // (B,H,T,T)
    f.by_hand_diff = max_abs_diff(by_hand, att.weights);
  } else {
    const Tensor<4> by_hand = attn::softmax<4>(scores);  // (B, H, T, T)
    f.by_hand_diff = max_abs_diff(by_hand, att.weights);
  }
  f.y_finite = all_finite(y);
  show_trace_facts(n, f);

  // These steps are what mha_forward does in one call.
  const Tensor<3> one_call = k.mha_forward(x, w, H, n.causal);  // (B, T, C)
  show_one_call(max_abs_diff(y, one_call));
  return {att.weights, one_call};
}

// ---- What sections 3 to 7 compute (show.cpp prints it).

// 3. The loop over heads (attn::mha_forward_per_head) against the batched forward, and the
//    batched forward against the fast kernel training uses (attn::fast::mha_forward).
LoopVsBatched loop_vs_batched(const Tensor<3>& x, const MhaWeights& w, const Sizes& n,
                              const Tensor<3>& batched) {
  const Tensor<3> looped = attn::mha_forward_per_head(x, w, n.H, n.causal).out;  // (B, T, C)
  const Tensor<3> fast =                                                         // (B, T, C)
      attn::fast::mha_forward(x, w, n.H, n.causal, /*need_weights=*/false).out;
  return {max_abs_diff(looped, batched), max_abs_diff(fast, batched)};
}

// 4. One fused (C, 3C) QKV matrix against three separate (C, C) ones.
FusedQkv fuse_and_compare(const Tensor<3>& x, const MhaWeights& w, const Sizes& n,
                          const Tensor<3>& separate) {
  const std::size_t C = n.C;
  FusedQkv f;
  f.w_qkv = attn::fuse_qkv(w);  // (C, 3C)
  const std::array<std::size_t, 2> want = {C, 3 * C};
  if (f.w_qkv.shape() != want) {
    throw std::logic_error("shape check: fuse_qkv should be " + attn::shape_str(want) + ", got " +
                           attn::shape_str(f.w_qkv.shape()));
  }
  const Matrix block_q = xt::view(f.w_qkv, xt::all(), xt::range(0, C));
  const Matrix block_k = xt::view(f.w_qkv, xt::all(), xt::range(C, 2 * C));
  const Matrix block_v = xt::view(f.w_qkv, xt::all(), xt::range(2 * C, 3 * C));
  f.block_diff = std::max(
      {max_abs_diff(block_q, w.w_q), max_abs_diff(block_k, w.w_k), max_abs_diff(block_v, w.w_v)});
  const Tensor<3> fused =  // (B, T, C)
      attn::mha_forward_fused(x, f.w_qkv, w.w_o, n.H, n.causal, /*need_weights=*/false).out;
  f.output_diff = max_abs_diff(fused, separate);
  return f;
}

// 5. How far the heads are from plain averaging with this init, and with GPT-2's smaller one.
InitContrast contrast_with_gpt2_init(const Kernels& k, const Tensor<3>& x, const MhaWeights& w,
                                     const Sizes& n, const Tensor<4>& weights, float init_std) {
  const float shrink = kGpt2Std / init_std;
  const MhaWeights small{shrink * w.w_q, shrink * w.w_k, shrink * w.w_v, shrink * w.w_o};
  const Tensor<4> flat = head_weights(k, x, small, n.H, n.causal);  // (B, H, T, T)
  return {init_std, max_distance_from_uniform(weights, n), max_distance_from_uniform(flat, n)};
}

// 7. 1, 4 and 8 heads on the same input, with the same four matrices.
HeadCounts compare_head_counts(const Kernels& k, const Tensor<3>& x, const MhaWeights& w,
                               const Sizes& n) {
  HeadCounts hc{uniform_row_entropy(n), {}};
  for (const std::size_t H : {std::size_t{1}, std::size_t{4}, std::size_t{8}}) {
    if (n.C % H != 0) {
      hc.rows.push_back({H, false, 0.0, 0.0, 0.0});
      continue;
    }
    const Sizes m{n.B, n.T, n.C, H, n.causal};
    const Tensor<4> weights = head_weights(k, x, w, H, n.causal);  // (B, H, T, T)
    hc.rows.push_back({H, true, mean_pairwise_difference(weights, m),
                       attn::mha_forward_flops(n.B, n.T, n.C, H), mean_row_entropy(weights, m)});
  }
  return hc;
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
  if (std::isnan(checksum)) fmt::print("(NaN in the timing runs)\n");  // keeps the work observable
  return elapsed / calls;
}

// --timing: one forward three ways, the loop over heads, the batched forward (the chapter's, or
// yours with --mine) and the fused QKV.
Timing time_forwards(const Kernels& k, const Tensor<3>& x, const MhaWeights& w, const Sizes& n) {
  const Matrix w_qkv = attn::fuse_qkv(w);  // (C, 3C)
  Timing t;
  t.looped =
      microseconds_per_call([&] { return attn::mha_forward_per_head(x, w, n.H, n.causal).out; });
  t.batched = microseconds_per_call([&] { return k.mha_forward(x, w, n.H, n.causal); });
  t.fused = microseconds_per_call(
      [&] { return attn::mha_forward_fused(x, w_qkv, w.w_o, n.H, n.causal, false).out; });
  return t;
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

    // Weights first, like a model that is built before it sees data; then the input.
    attn::Rng rng(options.seed);
    const float init_std = 1.0f / std::sqrt(static_cast<float>(n.C));
    const MhaWeights w = attn::mha_init(rng, n.C, init_std);   // 4 x (C, C)
    const Tensor<3> x = attn::randn<3>(rng, {n.B, n.T, n.C});  // (B, T, C), N(0, 1)
    show_header(n, options.seed, options.mine, corpus_origin, init_std);

    show_why(n);                                                    // 1
    const Traced traced = trace_shapes(k, x, w, n);                 // 2
    show_loop_vs_batched(n, loop_vs_batched(x, w, n, traced.out));  // 3
    show_fused(n, fuse_and_compare(x, w, n, traced.out));           // 4
    show_heads(n, traced.weights,                                   // 5
               contrast_with_gpt2_init(k, x, w, n, traced.weights, init_std));
    show_parameters(w, n);                                 // 6
    show_head_counts(n, compare_head_counts(k, x, w, n));  // 7
    if (options.svg_dir) save_figures(*options.svg_dir, traced.weights, n);

    if (options.timing) show_timing(n, time_forwards(k, x, w, n));
  });
}
