// chapters/03_masked_softmax/main.cpp: chapter 03, scores -> causal mask -> softmax.
// Walks through the masked softmax of a random (T, T) score matrix, then through what goes wrong
// with -1e9, with large logits and with the triu(ones, 1) * -inf mask. The math itself lives in
// common/src/ops/mask.cpp and common/src/ops/softmax.cpp; each section computes here and is
// printed by its show_ function in show.cpp. Page: docs/03-masked-softmax.md
#include <chrono>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/ops/mask.hpp"
#include "attn/term/narrate.hpp"
#include "attn/core/random.hpp"
#include "attn/ops/softmax.hpp"
#include "exercises.hpp"
#include "show.hpp"

namespace {

using namespace ch03;  // the sections' results and their show functions (show.hpp)

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr std::size_t kMaxTimeSteps = 16;  // every (T, T) matrix is printed
constexpr float kMaxScale = 1000.0f;       // far past saturation, far below float overflow

// The four functions this chapter teaches: from attn:: (the reference) or, with --mine, from the
// learner's ex03:: exercises.
struct Kernels {
  Mask (*causal_mask)(std::size_t T);                                // (T, T) bool
  Matrix (*causal_mask_additive)(std::size_t T);                     // (T, T) 0 / -inf
  Matrix (*softmax)(const Matrix& x);                                // (T, S) -> (T, S)
  Matrix (*masked_softmax)(const Matrix& scores, const Mask& mask);  // (T, S) -> (T, S)
};

Kernels reference_kernels() {
  return {&attn::causal_mask, &attn::causal_mask_additive, &attn::softmax<2>,
          &attn::masked_softmax<2>};
}

Kernels learner_kernels() {
  return {&ex03::causal_mask, &ex03::causal_mask_additive, &ex03::softmax, &ex03::masked_softmax};
}

// ---- The walkthrough: what each section computes (show.cpp prints it).

// 2. The causal mask, boolean and additive, and the scores with the additive one.
CausalMask causal_mask(const Kernels& k, const Matrix& scores) {
  const std::size_t T = scores.shape()[0];
  CausalMask m;
  m.mask = k.causal_mask(T);               // (T, T) bool
  m.additive = k.causal_mask_additive(T);  // (T, T) 0 / -inf
  m.masked = scores + m.additive;          // (T, T) + (T, T) -> (T, T)
  return m;
}

// 3. The weights, each row's sum (in double) and the future entries that are exactly 0.
Weights masked_weights(const Kernels& k, const Matrix& scores, const Mask& mask) {
  Weights w;
  w.weights = k.masked_softmax(scores, mask);  // (T, T)
  const std::size_t T = w.weights.shape()[0];
  w.sums.assign(T, 0.0f);
  for (std::size_t t = 0; t < T; ++t) {
    double sum = 0.0;
    for (std::size_t s = 0; s < T; ++s) {
      sum += static_cast<double>(w.weights(t, s));
      if (s > t) {
        ++w.future;
        w.future_zero += w.weights(t, s) == 0.0f ? 1 : 0;
      }
    }
    w.sums[t] = static_cast<float>(sum);
  }
  return w;
}

// 4. The same causal rule with -1e9 instead of -inf, on the ordinary rows and on a row where
// every key is masked.
MinusBillion compare_minus_1e9(const Kernels& k, const Matrix& scores, const CausalMask& c) {
  MinusBillion m;
  m.with_1e9 = k.softmax(scores + xt::where(c.mask, 0.0f, -1e9f));  // (T, T)
  m.with_inf = k.softmax(scores + c.additive);                      // (T, T)
  m.ordinary = attn::max_abs_diff(m.with_1e9, m.with_inf);
  Mask padded = c.mask;
  for (std::size_t s = 0; s < padded.shape()[1]; ++s) padded(0, s) = false;
  const Matrix pad_additive = xt::where(padded, 0.0f, -kInf);      // (T, T)
  m.pad_1e9 = k.softmax(scores + xt::where(padded, 0.0f, -1e9f));  // (T, T)
  m.pad_inf = k.softmax(scores + pad_additive);                    // (T, T)
  m.pad_naive = attn::softmax_naive<2>(scores + pad_additive);     // (T, T)
  m.pad_bool = k.masked_softmax(scores, padded);                   // (T, T)
  const std::size_t T = scores.shape()[0];
  for (std::size_t s = 0; s < T; ++s) {
    if (m.pad_1e9(0, s) > 1e-6f) m.leak.push_back(s);
    m.all_small = m.all_small && std::abs(scores(0, s)) < 32.0f;
    m.uniform = m.uniform && std::abs(m.pad_1e9(0, s) - 1.0f / static_cast<float>(T)) < 1e-6f;
  }
  return m;
}

// 5. Large logits through the naive and the stable softmax.
Overflow overflow(const Kernels& k) {
  Overflow o;
  o.big = {{1000.0f, 1001.0f, 1002.0f}};  // (1, 3)
  o.small = {{-1000.0f, -1001.0f}};       // (1, 2)
  o.naive_big = attn::softmax_naive<2>(o.big);
  o.stable_big = k.softmax(o.big);
  o.naive_small = attn::softmax_naive<2>(o.small);
  o.stable_small = k.softmax(o.small);
  return o;
}

// 7. The additive mask built as triu(ones, 1) * -inf, and the fix.
NanTrap triu_times_inf(const Kernels& k, const Matrix& scores) {
  const std::size_t T = scores.shape()[0];
  NanTrap trap;
  trap.naive_mask = attn::causal_mask_additive_naive(T);  // (T, T)
  // Always the library's softmax: it lets a NaN through on purpose (NaN in, NaN out). A softmax
  // whose row maximum is std::max(m, z) skips NaN and would hide the trap behind zeros.
  trap.broken = attn::softmax<2>(scores + trap.naive_mask);
  trap.fixed_mask = k.causal_mask_additive(T);
  trap.fixed = k.softmax(scores + trap.fixed_mask);
  return trap;
}

Timing time_masked_softmax(const Kernels& k, const Matrix& scores, const Mask& mask) {
  constexpr int kRepeats = 1000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRepeats; ++i) {
    const Matrix weights = k.masked_softmax(scores, mask);  // (T, T), through a pointer: not elided
  }
  const auto stop = std::chrono::steady_clock::now();
  const double us = std::chrono::duration<double, std::micro>(stop - start).count() / kRepeats;
  return {scores.shape()[0], scores.shape()[1], us, kRepeats};
}

}  // namespace

int main(int argc, char** argv) {
  attn::Cli cli("03_masked_softmax",
                "Chapter 03: masked softmax. Scores -> causal mask -> softmax, why the mask is "
                "-inf (not -1e9), why softmax subtracts the row maximum, and the "
                "triu(ones, 1) * -inf trap (0 * inf = NaN).");
  std::size_t T = 6;
  float scale = 2.0f;
  cli.add_size("--block-size", T,
               "sequence length T: the scores, the mask and the weights are (T, T)", 1,
               kMaxTimeSteps, "every (T, T) matrix is printed");
  cli.add_float("--scale", scale, "standard deviation of the random scores", 0.0f, kMaxScale);
  cli.add_alias("time-steps", "block-size");  // the name before the lecture's vocabulary

  return cli.run(argc, argv, [&](const attn::CommonOptions& options) {
    const Kernels k = options.mine ? learner_kernels() : reference_kernels();
    // The scores here are random, so no text is needed; a bad --data is still an error.
    const std::string corpus_origin = options.data ? attn::load_corpus(options.data).origin : "";
    show_header(T, scale, options.seed, options.mine, corpus_origin);

    attn::Rng rng(options.seed);
    const Matrix scores = attn::randn(rng, T, T, scale);  // (T, T)
    show_scores(scores, scale);                           // 1
    const CausalMask mask = causal_mask(k, scores);       // 2
    show_mask(mask);
    const Weights w = masked_weights(k, scores, mask.mask);  // 3
    show_weights(w);
    show_minus_1e9(scores, compare_minus_1e9(k, scores, mask));      // 4
    show_overflow(overflow(k));                                      // 5
    show_forms_agree(w.weights, k.softmax(scores + mask.additive));  // 6: the additive form
    const NanTrap trap = triu_times_inf(k, scores);                  // 7
    show_nan_trap(w.weights, trap);

    if (options.svg_dir) save_figures(*options.svg_dir, w.weights, trap.broken);
    if (options.timing) show_timing(time_masked_softmax(k, scores, mask.mask));
  });
}
