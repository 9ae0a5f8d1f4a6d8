// chapters/03_masked_softmax/show.cpp: the narration of chapter 03. Each function prints what
// one section of main.cpp computed, and checks the sentences its numbers could contradict
// (attn::claim).
#include "show.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attn/term/narrate.hpp"
#include "attn/term/plot.hpp"
#include "attn/term/print.hpp"

namespace ch03 {

namespace {

using attn::difference_text;
using attn::max_abs_diff;

constexpr float kInf = std::numeric_limits<float>::infinity();

std::string matrix_text(const Matrix& m, int precision = 4) {
  attn::MatrixFormat format;
  format.precision = precision;
  return attn::format_matrix(m, format);
}

std::string row_text(const Matrix& m, std::size_t row) {
  const std::size_t S = m.shape()[1];
  return attn::format_vector(std::span<const float>(m.data() + row * S, S));
}

std::size_t count_nan(const Matrix& m) {
  std::size_t n = 0;
  for (const float v : m) n += std::isnan(v) ? 1 : 0;
  return n;
}

attn::HeatmapOptions weights_heatmap(const std::string& title, std::size_t T) {
  attn::HeatmapOptions options;
  options.title = title;
  for (std::size_t t = 0; t < T; ++t) {
    options.row_labels.push_back("q" + std::to_string(t));
    options.col_labels.push_back("k" + std::to_string(t));
  }
  options.vmin = 0.0f;  // weights are probabilities: a fixed scale makes maps comparable
  options.vmax = 1.0f;
  return options;
}

void print_heatmap(const Matrix& m, const attn::HeatmapOptions& options) {
  fmt::print("{}", attn::heatmap_text(m, options, attn::use_color(stdout)));
}

}  // namespace

void show_header(std::size_t T, float scale, std::uint64_t seed, bool mine,
                 const std::string& corpus_origin) {
  fmt::print("Chapter 03: masked softmax\n");
  if (!corpus_origin.empty()) {
    fmt::print("{}", "corpus: " + corpus_origin + ", read but not used (the scores are random)\n");
  }
  fmt::print("{}", "T = " + std::to_string(T) + ", scale = " + attn::format_number(scale, 1) +
                       ", seed = " + std::to_string(seed) + ", functions: " +
                       (mine ? "yours (ex03::, --mine)" : "the reference (attn::)") + "\n");
}

// 1. The scores: one number per (query, key) pair.
void show_scores(const Matrix& scores, float scale) {
  const std::size_t T = scores.shape()[0];
  attn::section(1, "Scores");
  fmt::print(
      "{}",
      "Attention starts from a score for every pair (query t, key s): row t says how much\n"
      "position t is interested in each position. Chapter 04 computes the scores from the data\n"
      "(q . k); here they are random numbers with standard deviation " +
          attn::format_number(scale, 1) +
          ", so we can watch the mask\n"
          "and the softmax on their own.\n");
  fmt::print("{}", "scores (T, T) = (" + std::to_string(T) + ", " + std::to_string(T) +
                       "), rows = queries, columns = keys:\n");
  fmt::print("{}", matrix_text(scores));
}

// 2. The causal mask in its two forms, and the masked scores.
void show_mask(const CausalMask& m) {
  attn::section(2, "The causal mask");
  fmt::print(
      "A decoder predicts position t+1 from positions 0..t, so query t may look at the past and\n"
      "at itself, never at the future. The rule is a lower-triangular (T, T) mask.\n");
  fmt::print("Boolean form, tril(ones(T, T)): 1 = allowed, 0 = masked (the future):\n");
  fmt::print("{}", matrix_text(xt::cast<float>(m.mask), 0));
  fmt::print("Additive form, where(tril, 0, -inf): added to the scores before the softmax:\n");
  fmt::print("{}", matrix_text(m.additive));
  fmt::print("masked scores = scores + additive mask (every future score is now -inf):\n");
  fmt::print("{}", matrix_text(m.masked));
}

// 3. The masked softmax: the attention weights.
void show_weights(const Weights& w) {
  const Matrix& weights = w.weights;
  const std::size_t T = weights.shape()[0];
  attn::section(3, "Softmax over each row");
  fmt::print(
      "Each query turns its row of scores into weights that are >= 0 and sum to 1:\n"
      "  softmax(z)_i = exp(z_i - max(z)) / sum_j exp(z_j - max(z))\n"
      "A masked score is -inf and exp(-inf) = 0, so the future gets weight 0.\n");
  fmt::print("weights = masked_softmax(scores, mask) (T, T):\n");
  fmt::print("{}", matrix_text(weights));

  fmt::print("{}", "row sums: " + attn::format_vector(w.sums) + "\n");
  fmt::print("{}", "future weights that are exactly 0: " + std::to_string(w.future_zero) + " of " +
                       std::to_string(w.future) + "\n");
  fmt::print("{}", "Query 0 sees only key 0, so its weight there is " +
                       attn::format_number(weights(0, 0)) + ".\n");
  bool sums_one = true;
  for (const float sum : w.sums) sums_one = sums_one && std::abs(sum - 1.0f) < 1e-5f;
  attn::claim(sums_one && w.future_zero == w.future && weights(0, 0) == 1.0f,
              "rows sum to 1, the future gets weight 0, query 0 puts 1 on key 0");
  print_heatmap(weights,
                weights_heatmap("causal attention weights (row = query, column = key)", T));
}

// 4. Why -inf, and not -1e9.
void show_minus_1e9(const Matrix& scores, const MinusBillion& m) {
  const std::size_t T = scores.shape()[0];
  const std::size_t key = T > 1 ? 1 : 0;  // a masked key of query 0, if there is one
  const float score = scores(0, key);
  attn::section(4, "Why -inf, and not -1e9");
  fmt::print("{}", std::string("exp(-inf) == 0 exactly: ") +
                       (std::exp(-kInf) == 0.0f ? "true" : "false") +
                       ". A masked key adds nothing to the row sum. Much code masks with\n"
                       "-1e9 instead. In float32 the numbers near 1e9 are " +
                       attn::format_number(std::nextafter(1e9f, kInf) - 1e9f, 0) +
                       " apart, so a score below 32 in size,\n"
                       "added to -1e9, simply disappears (here the score of query 0 for key " +
                       std::to_string(key) + "):\n");
  const float sum = score + -1e9f;
  fmt::print("{}", "  " + attn::format_number(score) + " + (-1e9) = " + attn::format_number(sum) +
                       ", equal to -1e9: " + (sum == -1e9f ? "yes" : "no") + "\n");

  fmt::print("{}",
             "exp(-1e9 - max) underflows to 0, so on ordinary rows nothing changes:\n"
             "  softmax(scores + (-1e9 mask)) vs softmax(scores + (-inf mask))\n"
             "  max |difference|: " +
                 difference_text(m.ordinary) + "\n");
  attn::claim(m.ordinary < 1e-6, "on ordinary rows -1e9 changes nothing");

  fmt::print(
      "The difference shows on a row where every key is masked (a padding query, say).\n"
      "Mask all of row 0 and look at its weights:\n");
  fmt::print("{}", "  -1e9 mask, softmax:            " + row_text(m.pad_1e9, 0) + "\n");
  fmt::print("{}", "  -inf mask, stable softmax:     " + row_text(m.pad_inf, 0) + "\n");
  fmt::print("{}", "  boolean mask, masked_softmax:  " + row_text(m.pad_bool, 0) + "\n");
  fmt::print("{}", "  -inf mask, naive softmax:      " + row_text(m.pad_naive, 0) + "\n");
  const std::vector<std::size_t>& leak = m.leak;
  if (leak.size() == T) {
    attn::claim(m.uniform, "the -1e9 row is uniform");
    if (T == 1) {
      fmt::print(
          "With -1e9 the single key of row 0 gets weight 1: a padding query reads a value\n"
          "it was meant to ignore, a silent leak.");
    } else {
      fmt::print(
          "{}",
          std::string("With -1e9 every entry of the row rounds to the same float ") +
              (m.all_small
                   ? "(every score of row 0 is\nbelow 32 in size, so each sum is exactly -1e9)"
                   : "(the sums of row 0 all round\nto the same multiple of 64)") +
              ": the softmax is uniform over all " + std::to_string(T) +
              "\nkeys, the future ones included, a silent leak.");
    }
  } else {
    std::string keys;
    std::size_t future_keys = 0;
    for (std::size_t i = 0; i < leak.size(); ++i) {
      keys += (i == 0 ? "" : i + 1 == leak.size() ? " and " : ", ") + std::to_string(leak[i]);
      future_keys += leak[i] > 0 ? 1 : 0;
    }
    const bool one = leak.size() == 1;
    fmt::print(
        "{}",
        "With -1e9 each sum score + (-1e9) rounds to a multiple of 64, and the largest take\n"
        "everything: key" +
            std::string(one ? " " : "s ") + keys + (one ? " gets" : " share") +
            " the whole weight of row 0.\n"
            "A silent leak, and not even a uniform one: it goes to the keys with the largest\n" +
            (future_keys > 0
                 ? "scores, here " + std::to_string(future_keys) + " future key" +
                       (future_keys == 1 ? "" : "s") + " of query 0."
                 : std::string("scores, here key 0 only; other scores send it to future keys.")));
  }
  fmt::print(
      "\nWith -inf (or a boolean mask) the stable softmax returns a row of zeros, the\n"
      "convention of this course: documented, never NaN. The naive formula computes\n"
      "exp(-inf) = 0 for every key, then 0 / 0 = NaN.\n");
}

// 5. Overflow and underflow: why the stable softmax subtracts the row maximum.
void show_overflow(const Overflow& o) {
  attn::section(5, "Why subtract the maximum");
  const float overflow_at = std::log(std::numeric_limits<float>::max());  // 88.72
  fmt::print("{}", "float32 exp overflows to inf above z = " + attn::format_number(overflow_at, 2) +
                       " and underflows to 0 below about -104.\n");
  fmt::print("{}", "logits " + row_text(o.big, 0) + "\n");
  fmt::print("{}",
             "  naive  exp(z) / sum exp(z):   " + row_text(o.naive_big, 0) + "   (inf / inf)\n");
  fmt::print("{}", "  stable, subtract max = 1002:  " + row_text(o.stable_big, 0) + "\n");
  fmt::print("{}", "logits " + row_text(o.small, 0) + "\n");
  fmt::print("{}",
             "  naive  exp(z) / sum exp(z):   " + row_text(o.naive_small, 0) + "   (0 / 0)\n");
  fmt::print("{}", "  stable, subtract max = -1000: " + row_text(o.stable_small, 0) + "\n");
  fmt::print(
      "Subtracting m from every logit multiplies the numerator and the denominator by the same\n"
      "exp(-m), so the answer is unchanged; but now the largest exponent is exp(0) = 1, the sum\n"
      "is at least 1, and nothing overflows or divides by zero.\n");
}

// 6. The boolean and the additive mask are the same rule.
void show_forms_agree(const Matrix& weights, const Matrix& from_additive) {
  attn::section(6, "Two masks, one answer");
  fmt::print("{}",
             "boolean:  masked_softmax(scores, tril)\n"
             "additive: softmax(scores + where(tril, 0, -inf))\n"
             "max |difference|: " +
                 difference_text(max_abs_diff(weights, from_additive)) + "\n");
  attn::claim(max_abs_diff(weights, from_additive) < 1e-6, "two masks, one answer");
}

// 7. The trap: triu(ones, 1) * -inf, and the fix.
void show_nan_trap(const Matrix& weights, const NanTrap& trap) {
  const std::size_t T = weights.shape()[0];
  const Matrix& broken = trap.broken;
  attn::section(7, "The trap: triu(ones, 1) * -inf");
  fmt::print(
      "A popular one-liner for the additive mask is mask = triu(ones(T, T), k=1) * -inf: 1 above\n"
      "the diagonal, 0 elsewhere, times -inf. Above the diagonal 1 * -inf = -inf, as intended.\n"
      "Elsewhere it computes 0 * -inf, and IEEE 754 defines 0 * inf as NaN (no answer is right,\n"
      "so the result is Not a Number):\n");
  const float zero = 0.0f;
  fmt::print("{}", "  0 * -inf = " + attn::format_number(zero * -kInf) + "\n");
  fmt::print("naive mask (T, T): NaN exactly where attention should be allowed:\n");
  fmt::print("{}", matrix_text(trap.naive_mask));
  fmt::print(
      "NaN spreads: a NaN score makes its row maximum and its row sum NaN, so every weight of\n"
      "the \"causal attention\" is NaN:\n");
  fmt::print("{}", matrix_text(broken));
  fmt::print("{}", "NaN weights: " + std::to_string(count_nan(broken)) + " of " +
                       std::to_string(broken.size()) + "\n");
  attn::claim(count_nan(broken) == broken.size(), "every weight of the trap is NaN");
  print_heatmap(broken, weights_heatmap("weights with the triu(ones, 1) * -inf mask", T));

  fmt::print(
      "The fix chooses instead of multiplying: where(tril, 0, -inf) puts 0 or -inf in each cell\n"
      "and never multiplies by infinity:\n");
  fmt::print("{}", matrix_text(trap.fixed_mask));
  fmt::print("{}", "weights with it, NaN count " + std::to_string(count_nan(trap.fixed)) + ":\n");
  fmt::print("{}", matrix_text(trap.fixed));
  fmt::print("{}", "max |difference| from the weights of section 3: " +
                       difference_text(max_abs_diff(trap.fixed, weights)) + "\n");
}

void save_figures(const std::filesystem::path& dir, const Matrix& weights, const Matrix& broken) {
  const std::size_t T = weights.shape()[0];
  const auto causal_path = dir / "causal_weights.svg";
  const auto trap_path = dir / "nan_trap.svg";
  attn::write_svg(causal_path,
                  attn::heatmap_svg(weights, weights_heatmap("causal attention weights", T)));
  attn::write_svg(
      trap_path,
      attn::heatmap_svg(broken, weights_heatmap("weights with triu(ones, 1) * -inf: NaN", T)));
  fmt::print("{}", "\nwrote " + causal_path.string() + " and " + trap_path.string() + "\n");
}

void show_timing(const Timing& t) {
  std::printf("\ntiming: masked_softmax on (%zu, %zu): %.2f us per call (mean of %d calls)\n",
              t.rows, t.cols, t.us, t.repeats);
}

}  // namespace ch03
