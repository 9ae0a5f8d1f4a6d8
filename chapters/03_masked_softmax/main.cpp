// chapters/03_masked_softmax/main.cpp: chapter 03, scores -> causal mask -> softmax.
// Walks through the masked softmax of a random (T, T) score matrix, then through what goes wrong
// with -1e9, with large logits and with the triu(ones, 1) * -inf mask. The math itself lives in
// common/src/ops/mask.cpp and common/src/ops/softmax.cpp; this file only calls it and narrates.
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/ops/mask.hpp"
#include "attn/term/narrate.hpp"
#include "attn/term/plot.hpp"
#include "attn/term/print.hpp"
#include "attn/core/random.hpp"
#include "attn/ops/softmax.hpp"
#include "exercises.hpp"

namespace {

using attn::Mask;
using attn::Matrix;

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

using attn::difference_text;
using attn::max_abs_diff;
using attn::print;

std::string matrix_text(const Matrix& m, int precision = 4) {
  attn::MatrixFormat format;
  format.precision = precision;
  return attn::format_matrix(m, format);
}

std::string row_text(const Matrix& m, std::size_t row) {
  const std::size_t S = m.shape()[1];
  return attn::format_vector(std::span<const float>(m.data() + row * S, S));
}

std::string size_text(std::size_t n) { return std::to_string(n); }

std::size_t count_nan(const Matrix& m) {
  std::size_t n = 0;
  for (const float v : m) n += std::isnan(v) ? 1 : 0;
  return n;
}

attn::HeatmapOptions weights_heatmap(const std::string& title, std::size_t T) {
  attn::HeatmapOptions options;
  options.title = title;
  for (std::size_t t = 0; t < T; ++t) {
    options.row_labels.push_back("q" + size_text(t));
    options.col_labels.push_back("k" + size_text(t));
  }
  options.vmin = 0.0f;  // weights are probabilities: a fixed scale makes maps comparable
  options.vmax = 1.0f;
  return options;
}

void print_heatmap(const Matrix& m, const attn::HeatmapOptions& options) {
  print(attn::heatmap_text(m, options, attn::use_color(stdout)));
}

// 1. The scores: one number per (query, key) pair.
void show_scores(const Matrix& scores, float scale) {
  const std::size_t T = scores.shape()[0];
  attn::section(1, "Scores");
  print(
      "Attention starts from a score for every pair (query t, key s): row t says how much\n"
      "position t is interested in each position. Chapter 04 computes the scores from the data\n"
      "(q . k); here they are random numbers with standard deviation " +
      attn::format_number(scale, 1) +
      ", so we can watch the mask\n"
      "and the softmax on their own.\n");
  print("scores (T, T) = (" + size_text(T) + ", " + size_text(T) +
        "), rows = queries, columns = keys:\n");
  print(matrix_text(scores));
}

// 2. The causal mask in its two forms, and the masked scores.
void show_mask(const Mask& mask, const Matrix& additive, const Matrix& scores) {
  attn::section(2, "The causal mask");
  print(
      "A decoder predicts position t+1 from positions 0..t, so query t may look at the past and\n"
      "at itself, never at the future. The rule is a lower-triangular (T, T) mask.\n");
  print("Boolean form, tril(ones(T, T)): 1 = allowed, 0 = masked (the future):\n");
  print(matrix_text(xt::cast<float>(mask), 0));
  print("Additive form, where(tril, 0, -inf): added to the scores before the softmax:\n");
  print(matrix_text(additive));
  const Matrix masked = scores + additive;  // (T, T) + (T, T) -> (T, T)
  print("masked scores = scores + additive mask (every future score is now -inf):\n");
  print(matrix_text(masked));
}

// What section 3 checks of causal (T, T) weights: each row's sum (in double), and how many of
// the future entries (key s > query t) are exactly 0.
struct RowFacts {
  std::vector<float> sums;      // (T): one per query
  std::size_t future = 0;       // entries above the diagonal
  std::size_t future_zero = 0;  // of which exactly 0
};

RowFacts row_facts(const Matrix& weights) {
  const std::size_t T = weights.shape()[0];
  RowFacts f;
  f.sums.assign(T, 0.0f);
  for (std::size_t t = 0; t < T; ++t) {
    double sum = 0.0;
    for (std::size_t s = 0; s < T; ++s) {
      sum += static_cast<double>(weights(t, s));
      if (s > t) {
        ++f.future;
        f.future_zero += weights(t, s) == 0.0f ? 1 : 0;
      }
    }
    f.sums[t] = static_cast<float>(sum);
  }
  return f;
}

// 3. The masked softmax: the attention weights.
void show_weights(const Matrix& weights) {
  const std::size_t T = weights.shape()[0];
  attn::section(3, "Softmax over each row");
  print(
      "Each query turns its row of scores into weights that are >= 0 and sum to 1:\n"
      "  softmax(z)_i = exp(z_i - max(z)) / sum_j exp(z_j - max(z))\n"
      "A masked score is -inf and exp(-inf) = 0, so the future gets weight 0.\n");
  print("weights = masked_softmax(scores, mask) (T, T):\n");
  print(matrix_text(weights));

  const RowFacts facts = row_facts(weights);
  print("row sums: " + attn::format_vector(facts.sums) + "\n");
  print("future weights that are exactly 0: " + size_text(facts.future_zero) + " of " +
        size_text(facts.future) + "\n");
  print("Query 0 sees only key 0, so its weight there is " + attn::format_number(weights(0, 0)) +
        ".\n");
  bool sums_one = true;
  for (const float sum : facts.sums) sums_one = sums_one && std::abs(sum - 1.0f) < 1e-5f;
  attn::claim(sums_one && facts.future_zero == facts.future && weights(0, 0) == 1.0f,
              "rows sum to 1, the future gets weight 0, query 0 puts 1 on key 0");
  print_heatmap(weights,
                weights_heatmap("causal attention weights (row = query, column = key)", T));
}

// 4. Why -inf, and what -1e9 changes: the same causal rule with -1e9 instead of -inf, on the
// ordinary rows and on a row where every key is masked (a padding query, say).
struct MinusBillion {
  Matrix with_1e9, with_inf;  // (T, T): softmax(scores + -1e9 mask), softmax(scores + -inf mask)
  // (T, T) each, row 0 entirely masked: -1e9 mask, -inf mask, -inf with the naive softmax, and
  // the boolean mask through masked_softmax.
  Matrix pad_1e9, pad_inf, pad_naive, pad_bool;
};

MinusBillion compare_minus_1e9(const Kernels& k, const Matrix& scores, const Mask& mask,
                               const Matrix& additive) {
  MinusBillion m;
  m.with_1e9 = k.softmax(scores + xt::where(mask, 0.0f, -1e9f));  // (T, T)
  m.with_inf = k.softmax(scores + additive);                      // (T, T)
  Mask padded = mask;
  for (std::size_t s = 0; s < padded.shape()[1]; ++s) padded(0, s) = false;
  const Matrix pad_additive = xt::where(padded, 0.0f, -kInf);      // (T, T)
  m.pad_1e9 = k.softmax(scores + xt::where(padded, 0.0f, -1e9f));  // (T, T)
  m.pad_inf = k.softmax(scores + pad_additive);                    // (T, T)
  m.pad_naive = attn::softmax_naive<2>(scores + pad_additive);     // (T, T)
  m.pad_bool = k.masked_softmax(scores, padded);                   // (T, T)
  return m;
}

void show_minus_1e9(const Matrix& scores, const MinusBillion& m) {
  const std::size_t T = scores.shape()[0];
  const std::size_t key = T > 1 ? 1 : 0;  // a masked key of query 0, if there is one
  const float score = scores(0, key);
  attn::section(4, "Why -inf, and not -1e9");
  print(std::string("exp(-inf) == 0 exactly: ") + (std::exp(-kInf) == 0.0f ? "true" : "false") +
        ". A masked key adds nothing to the row sum. Much code masks with\n"
        "-1e9 instead. In float32 the numbers near 1e9 are " +
        attn::format_number(std::nextafter(1e9f, kInf) - 1e9f, 0) +
        " apart, so a score below 32 in size,\n"
        "added to -1e9, simply disappears (here the score of query 0 for key " +
        size_text(key) + "):\n");
  const float sum = score + -1e9f;
  print("  " + attn::format_number(score) + " + (-1e9) = " + attn::format_number(sum) +
        ", equal to -1e9: " + (sum == -1e9f ? "yes" : "no") + "\n");

  const double ordinary = max_abs_diff(m.with_1e9, m.with_inf);
  print(
      "exp(-1e9 - max) underflows to 0, so on ordinary rows nothing changes:\n"
      "  softmax(scores + (-1e9 mask)) vs softmax(scores + (-inf mask))\n"
      "  max |difference|: " +
      difference_text(ordinary) + "\n");
  attn::claim(ordinary < 1e-6, "on ordinary rows -1e9 changes nothing");

  const Matrix& pad_1e9 = m.pad_1e9;
  print(
      "The difference shows on a row where every key is masked (a padding query, say).\n"
      "Mask all of row 0 and look at its weights:\n");
  print("  -1e9 mask, softmax:            " + row_text(pad_1e9, 0) + "\n");
  print("  -inf mask, stable softmax:     " + row_text(m.pad_inf, 0) + "\n");
  print("  boolean mask, masked_softmax:  " + row_text(m.pad_bool, 0) + "\n");
  print("  -inf mask, naive softmax:      " + row_text(m.pad_naive, 0) + "\n");
  // Which keys the -1e9 row leaks to: score + (-1e9) rounds to a multiple of 64 near -1e9, and
  // the softmax gives all its weight to the largest of those (shared equally on a tie).
  std::vector<std::size_t> leak;  // keys with a visible share (exp(-64) and below do not show)
  bool all_small = true;          // every score of row 0 below 32 in size: all round to -1e9
  for (std::size_t s = 0; s < T; ++s) {
    if (pad_1e9(0, s) > 1e-6f) leak.push_back(s);
    all_small = all_small && std::abs(scores(0, s)) < 32.0f;
  }
  if (leak.size() == T) {
    bool uniform = true;
    for (std::size_t s = 0; s < T; ++s)
      uniform = uniform && std::abs(pad_1e9(0, s) - 1.0f / static_cast<float>(T)) < 1e-6f;
    attn::claim(uniform, "the -1e9 row is uniform");
    if (T == 1) {
      print(
          "With -1e9 the single key of row 0 gets weight 1: a padding query reads a value\n"
          "it was meant to ignore, a silent leak.");
    } else {
      print(std::string("With -1e9 every entry of the row rounds to the same float ") +
            (all_small ? "(every score of row 0 is\nbelow 32 in size, so each sum is exactly -1e9)"
                       : "(the sums of row 0 all round\nto the same multiple of 64)") +
            ": the softmax is uniform over all " + size_text(T) +
            "\nkeys, the future ones included, a silent leak.");
    }
  } else {
    std::string keys;
    std::size_t future_keys = 0;
    for (std::size_t i = 0; i < leak.size(); ++i) {
      keys += (i == 0 ? "" : i + 1 == leak.size() ? " and " : ", ") + size_text(leak[i]);
      future_keys += leak[i] > 0 ? 1 : 0;
    }
    const bool one = leak.size() == 1;
    print(
        "With -1e9 each sum score + (-1e9) rounds to a multiple of 64, and the largest take\n"
        "everything: key" +
        std::string(one ? " " : "s ") + keys + (one ? " gets" : " share") +
        " the whole weight of row 0.\n"
        "A silent leak, and not even a uniform one: it goes to the keys with the largest\n" +
        (future_keys > 0
             ? "scores, here " + size_text(future_keys) + " future key" +
                   (future_keys == 1 ? "" : "s") + " of query 0."
             : std::string("scores, here key 0 only; other scores send it to future keys.")));
  }
  print(
      "\nWith -inf (or a boolean mask) the stable softmax returns a row of zeros, the\n"
      "convention of this course: documented, never NaN. The naive formula computes\n"
      "exp(-inf) = 0 for every key, then 0 / 0 = NaN.\n");
}

// 5. Overflow and underflow: why the stable softmax subtracts the row maximum.
void show_overflow(const Kernels& k) {
  attn::section(5, "Why subtract the maximum");
  const float overflow_at = std::log(std::numeric_limits<float>::max());  // 88.72
  print("float32 exp overflows to inf above z = " + attn::format_number(overflow_at, 2) +
        " and underflows to 0 below about -104.\n");
  const Matrix big = {{1000.0f, 1001.0f, 1002.0f}};  // (1, 3)
  const Matrix small = {{-1000.0f, -1001.0f}};       // (1, 2)
  print("logits " + row_text(big, 0) + "\n");
  print("  naive  exp(z) / sum exp(z):   " + row_text(attn::softmax_naive<2>(big), 0) +
        "   (inf / inf)\n");
  print("  stable, subtract max = 1002:  " + row_text(k.softmax(big), 0) + "\n");
  print("logits " + row_text(small, 0) + "\n");
  print("  naive  exp(z) / sum exp(z):   " + row_text(attn::softmax_naive<2>(small), 0) +
        "   (0 / 0)\n");
  print("  stable, subtract max = -1000: " + row_text(k.softmax(small), 0) + "\n");
  print(
      "Subtracting m from every logit multiplies the numerator and the denominator by the same\n"
      "exp(-m), so the answer is unchanged; but now the largest exponent is exp(0) = 1, the sum\n"
      "is at least 1, and nothing overflows or divides by zero.\n");
}

// 6. The boolean and the additive mask are the same rule.
void show_forms_agree(const Matrix& weights, const Matrix& from_additive) {
  attn::section(6, "Two masks, one answer");
  print(
      "boolean:  masked_softmax(scores, tril)\n"
      "additive: softmax(scores + where(tril, 0, -inf))\n"
      "max |difference|: " +
      difference_text(max_abs_diff(weights, from_additive)) + "\n");
  attn::claim(max_abs_diff(weights, from_additive) < 1e-6, "two masks, one answer");
}

// 7. The trap: building the additive mask by multiplying with -inf, and the fix.
struct NanTrap {
  Matrix naive_mask;  // (T, T): triu(ones, 1) * -inf, NaN where attention is allowed
  Matrix broken;      // (T, T): softmax(scores + naive_mask)
  Matrix fixed_mask;  // (T, T): where(tril, 0, -inf)
  Matrix fixed;       // (T, T): softmax(scores + fixed_mask)
};

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

void show_nan_trap(const Matrix& weights, const NanTrap& trap) {
  const std::size_t T = weights.shape()[0];
  const Matrix& broken = trap.broken;
  attn::section(7, "The trap: triu(ones, 1) * -inf");
  print(
      "A popular one-liner for the additive mask is mask = triu(ones(T, T), k=1) * -inf: 1 above\n"
      "the diagonal, 0 elsewhere, times -inf. Above the diagonal 1 * -inf = -inf, as intended.\n"
      "Elsewhere it computes 0 * -inf, and IEEE 754 defines 0 * inf as NaN (no answer is right,\n"
      "so the result is Not a Number):\n");
  const float zero = 0.0f;
  print("  0 * -inf = " + attn::format_number(zero * -kInf) + "\n");
  print("naive mask (T, T): NaN exactly where attention should be allowed:\n");
  print(matrix_text(trap.naive_mask));
  print(
      "NaN spreads: a NaN score makes its row maximum and its row sum NaN, so every weight of\n"
      "the \"causal attention\" is NaN:\n");
  print(matrix_text(broken));
  print("NaN weights: " + size_text(count_nan(broken)) + " of " + size_text(broken.size()) + "\n");
  attn::claim(count_nan(broken) == broken.size(), "every weight of the trap is NaN");
  print_heatmap(broken, weights_heatmap("weights with the triu(ones, 1) * -inf mask", T));

  print(
      "The fix chooses instead of multiplying: where(tril, 0, -inf) puts 0 or -inf in each cell\n"
      "and never multiplies by infinity:\n");
  print(matrix_text(trap.fixed_mask));
  print("weights with it, NaN count " + size_text(count_nan(trap.fixed)) + ":\n");
  print(matrix_text(trap.fixed));
  print("max |difference| from the weights of section 3: " +
        difference_text(max_abs_diff(trap.fixed, weights)) + "\n");
}

void show_timing(const Kernels& k, const Matrix& scores, const Mask& mask) {
  constexpr int kRepeats = 1000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRepeats; ++i) {
    const Matrix weights = k.masked_softmax(scores, mask);  // (T, T), through a pointer: not elided
  }
  const auto stop = std::chrono::steady_clock::now();
  const double us = std::chrono::duration<double, std::micro>(stop - start).count() / kRepeats;
  std::printf("\ntiming: masked_softmax on (%zu, %zu): %.2f us per call (mean of %d calls)\n",
              scores.shape()[0], scores.shape()[1], us, kRepeats);
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
    print("Chapter 03: masked softmax\n");
    if (!corpus_origin.empty()) {
      print("corpus: " + corpus_origin + ", read but not used (the scores are random)\n");
    }
    print("T = " + size_text(T) + ", scale = " + attn::format_number(scale, 1) +
          ", seed = " + std::to_string(options.seed) + ", functions: " +
          (options.mine ? "yours (ex03::, --mine)" : "the reference (attn::)") + "\n");

    attn::Rng rng(options.seed);
    const Matrix scores = attn::randn(rng, T, T, scale);  // (T, T)
    show_scores(scores, scale);

    const Mask mask = k.causal_mask(T);                 // (T, T) bool
    const Matrix additive = k.causal_mask_additive(T);  // (T, T) 0 / -inf
    show_mask(mask, additive, scores);

    const Matrix weights = k.masked_softmax(scores, mask);  // (T, T)
    show_weights(weights);
    show_minus_1e9(scores, compare_minus_1e9(k, scores, mask, additive));
    show_overflow(k);
    show_forms_agree(weights, k.softmax(scores + additive));  // (T, T): the additive form
    const NanTrap trap = triu_times_inf(k, scores);
    show_nan_trap(weights, trap);
    const Matrix& broken = trap.broken;

    if (options.svg_dir) {
      const auto causal_path = *options.svg_dir / "causal_weights.svg";
      const auto trap_path = *options.svg_dir / "nan_trap.svg";
      attn::write_svg(causal_path,
                      attn::heatmap_svg(weights, weights_heatmap("causal attention weights", T)));
      attn::write_svg(
          trap_path,
          attn::heatmap_svg(broken, weights_heatmap("weights with triu(ones, 1) * -inf: NaN", T)));
      print("\nwrote " + causal_path.string() + " and " + trap_path.string() + "\n");
    }
    if (options.timing) show_timing(k, scores, mask);
  });
}
