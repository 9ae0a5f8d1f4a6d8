// chapters/04_single_head/show.cpp: chapter 04's narration, the functions that print what
// main.cpp computes, one per section, in teaching order. Every sentence that depends on a number
// is chosen by that number; claims check the rest.

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/term/narrate.hpp"
#include "attn/term/plot.hpp"
#include "attn/term/print.hpp"
#include "attn/io/text.hpp"
#include "attn/ops/averaging.hpp"
#include "attn/ops/softmax.hpp"
#include "walkthrough.hpp"

namespace ch04 {
namespace {

using attn::difference_text;
using attn::max_abs_diff;
using attn::num;

constexpr std::size_t kShowCols = 6;  // q, k, v and out print their first columns

// One glyph per character, for labels that must stay one column wide.
std::string glyph(char32_t c) {
  if (c == U' ') return "\u2423";   // ␣
  if (c == U'\n') return "\u21b5";  // ↵
  return attn::printable(c);
}

// The text of a token sequence on one line, with the same glyphs.
std::string quoted(const std::u32string& chars) {
  std::string out = "\"";
  for (const char32_t c : chars) out += glyph(c);
  return out + "\"";
}

std::vector<std::string> glyphs(const std::u32string& chars) {
  std::vector<std::string> out;
  for (const char32_t c : chars) out.push_back(glyph(c));
  return out;
}

// "0 T", "1 H", ...: position and character, for the rows of a table.
std::vector<std::string> position_glyphs(const std::u32string& chars) {
  std::vector<std::string> out;
  for (std::size_t t = 0; t < chars.size(); ++t)
    out.push_back(std::to_string(t) + " " + glyph(chars[t]));
  return out;
}

// m as a table, with optional row and column labels.
std::string table_text(const Matrix& m, std::vector<std::string> rows = {},
                       std::vector<std::string> cols = {}, int precision = 4) {
  attn::MatrixFormat format;
  format.precision = precision;
  format.row_labels = std::move(rows);
  format.col_labels = std::move(cols);
  return attn::format_matrix(m, format);
}

// The first `cols` columns of m (all of them if it has fewer).
Matrix first_columns(const Matrix& m, std::size_t cols) {
  return xt::view(m, xt::all(), xt::range(0, std::min(cols, m.shape()[1])));
}

std::string first_columns_note(const Matrix& m) {
  return m.shape()[1] > kShowCols ? ", first " + std::to_string(kShowCols) + " columns" : "";
}

std::string row_text(const Matrix& m, std::size_t row, int precision = 4) {
  const std::size_t S = m.shape()[1];
  return attn::format_vector(std::span<const float>(m.data() + row * S, S), precision);
}

std::string yes_no(bool b) { return b ? "yes" : "no"; }

// The first character that occurs twice: positions i < j with chars[i] == chars[j], if any.
// Equal characters have equal rows of x, so equal queries, keys and values.
std::optional<std::pair<std::size_t, std::size_t>> first_repeat(const std::u32string& chars) {
  for (std::size_t j = 1; j < chars.size(); ++j)
    if (const std::size_t i = chars.find(chars[j]); i < j) return std::pair{i, j};
  return std::nullopt;
}

// What section 3 checks of causal (T, T) weights: the largest |row sum - 1|, and how many of the
// future entries (key s > query t) are exactly 0.
struct CausalRows {
  std::vector<float> sums;  // (T): one per query, summed in double
  std::size_t future = 0, future_zero = 0;
};

CausalRows causal_rows(const Matrix& weights) {
  const std::size_t T = weights.shape()[0];
  CausalRows c;
  for (std::size_t t = 0; t < T; ++t) {
    double sum = 0.0;
    for (std::size_t s = 0; s < T; ++s) {
      sum += static_cast<double>(weights(t, s));
      if (s > t) c.future_zero += weights(t, s) == 0.0f ? 1 : 0;
    }
    c.future += T - 1 - t;
    c.sums.push_back(static_cast<float>(sum));
  }
  return c;
}

attn::HeatmapOptions weights_heatmap(const std::string& title, const std::u32string& queries,
                                     const std::u32string& keys) {
  attn::HeatmapOptions options;
  options.title = title;
  options.row_labels = position_glyphs(queries);
  options.col_labels = glyphs(keys);
  options.vmin = 0.0f;  // weights are probabilities: one fixed scale for every map
  options.vmax = 1.0f;
  return options;
}

void print_heatmap(const Matrix& m, const attn::HeatmapOptions& options) {
  fmt::print("{}", attn::heatmap_text(m, options, attn::use_color(stdout)));
}

}  // namespace

// 1. Chapter 02's fixed weights, and the tokens that will choose their own.
void show_averaging(const Tokens& tokens, const std::string& corpus_origin) {
  const std::size_t T = tokens.x.shape()[0];
  const std::size_t C = tokens.x.shape()[1];
  attn::section(1, "From averaging to attention");
  fmt::print(
      "Chapter 02 let every position average the past with fixed weights: all scores 0, the\n"
      "causal mask, a softmax, so query t gives 1/(t+1) to each of keys 0..t, whatever the\n"
      "tokens are:\n");
  fmt::print("{}", table_text(attn::averaging_weights_softmax(T)));
  fmt::print(
      "A token should be able to attend more to the tokens that matter to it: the weights must\n"
      "depend on the data. From here on the scores are computed from the tokens themselves.\n");
  fmt::print("{}", "\nThe tokens: the first T = " + std::to_string(T) + " characters of " +
                       corpus_origin + ", " + quoted(tokens.x_chars) +
                       ",\neach embedded as a row of a random (V, C) = (" +
                       std::to_string(tokens.vocab_size) + ", " + std::to_string(C) +
                       ") table, N(0, 1).\n");
  fmt::print("{}", "x (T, C) = " + attn::shape_str(tokens.x.shape()) +
                       first_columns_note(tokens.x) + ":\n");
  fmt::print("{}",
             table_text(first_columns(tokens.x, kShowCols), position_glyphs(tokens.x_chars), {}));
}

// 2. Three projections of every token.
void show_projections(const Tokens& tokens, const Head& head, const Qkv& p) {
  const Matrix& x = tokens.x;
  const std::size_t C = x.shape()[1];
  const std::size_t hs = head.w_q.shape()[1];
  attn::section(2, "Queries, keys and values");
  fmt::print(
      "Each token emits three vectors, each a linear map of its own row of x:\n"
      "  query  q = x W_q   \"what am I looking for?\"\n"
      "  key    k = x W_k   \"what do I contain?\"\n"
      "  value  v = x W_v   \"what I hand over to a query that attends to me\"\n");
  fmt::print(
      "{}",
      "W_q, W_k and W_v are (C, hs) = (" + std::to_string(C) + ", " + std::to_string(hs) +
          "), drawn from N(0, 1/C): std 1/sqrt(C) = " +
          num(1.0 / std::sqrt(static_cast<double>(C))) +
          ",\nso each entry of q, k and v sums C terms of variance 1/C: variance about 1, as at\n"
          "the start of training. In training they are learned.\n");
  const std::string product =
      attn::shape_str(x.shape()) + " @ " + attn::shape_str(head.w_q.shape()) + " -> ";
  fmt::print("{}", "q = x @ W_q: " + product + attn::shape_str(p.q.shape()) + "\n");
  fmt::print("{}", "k = x @ W_k: " + product + attn::shape_str(p.k.shape()) + "\n");
  fmt::print("{}", "v = x @ W_v: " + product + attn::shape_str(p.v.shape()) + "\n");
  const auto rows = position_glyphs(tokens.x_chars);
  fmt::print("{}", "q" + first_columns_note(p.q) + ":\n");
  fmt::print("{}", table_text(first_columns(p.q, kShowCols), rows, {}));
  fmt::print("{}", "k" + first_columns_note(p.k) + ":\n");
  fmt::print("{}", table_text(first_columns(p.k, kShowCols), rows, {}));
  fmt::print("{}", "variance of the entries: q " + num(entry_variance(p.q)) + ", k " +
                       num(entry_variance(p.k)) + ", v " + num(entry_variance(p.v)) +
                       " (about 1 expected; from only T x hs = " + std::to_string(p.q.size()) +
                       " numbers each)\n");
  fmt::print("No token has looked at another yet: row t of q, k and v depends on x[t] alone.\n");
  // A repeated character has the same x row, so the same query, key and value.
  if (const auto repeat = first_repeat(tokens.x_chars)) {
    const auto [i, j] = *repeat;
    const bool same = xt::view(p.q, i, xt::all()) == xt::view(p.q, j, xt::all()) &&
                      xt::view(p.k, i, xt::all()) == xt::view(p.k, j, xt::all());
    attn::claim(same, "a repeated character has equal rows of q and k");
    fmt::print("{}", "Tokens " + std::to_string(i) + " and " + std::to_string(j) + " are both '" +
                         glyph(tokens.x_chars[j]) + "': equal rows of q and of k: " + yes_no(same) +
                         ". Nothing here\nknows where a token sits; chapter 06 adds positions.\n");
  }
}

// 3. Scores, scale, mask, softmax, weighted sum.
void show_attention(const Tokens& tokens, const Qkv& p, const SelfAttention& a) {
  const ex04::AttentionResult& r = a.causal;
  const std::size_t T = p.q.shape()[0];
  const std::size_t hs = p.q.shape()[1];
  const auto rows = position_glyphs(tokens.x_chars);
  const auto cols = glyphs(tokens.x_chars);
  attn::section(3, "Scores, scale, mask, softmax, sum");
  fmt::print(
      "Query t meets key s in a dot product: large when the two point the same way. All the\n"
      "pairs at once are one matrix product, and this is where tokens first communicate:\n");
  fmt::print("{}", "q @ k^T: " + attn::shape_str(p.q.shape()) + " @ " +
                       attn::shape_str(std::array{hs, T}) + " -> " +
                       attn::shape_str(a.raw.shape()) + ", rows = queries, columns = keys:\n");
  fmt::print("{}", table_text(a.raw, rows, cols, 2));
  fmt::print("{}", "scores = q @ k^T / sqrt(hs), sqrt(" + std::to_string(hs) + ") = " +
                       num(std::sqrt(static_cast<double>(hs))) + " (section 4 says why):\n");
  fmt::print("{}", table_text(a.scores, rows, cols));

  fmt::print(
      "Then chapter 03: the causal mask (key s > t gets -inf) and a softmax over each row.\n");
  fmt::print("weights = softmax(scores + causal mask) (T, T):\n");
  fmt::print("{}", table_text(r.weights, rows, cols));
  const CausalRows rows_check = causal_rows(r.weights);
  fmt::print("{}", "row sums: " + attn::format_vector(rows_check.sums) + "\n");
  fmt::print("{}", "future weights that are exactly 0: " + std::to_string(rows_check.future_zero) +
                       " of " + std::to_string(rows_check.future) + "\n");
  bool unequal = false;  // some row whose visible weights are not all equal
  for (std::size_t t = 1; t < T; ++t)
    for (std::size_t s = 1; s <= t; ++s)
      unequal = unequal || std::abs(r.weights(t, s) - r.weights(t, 0)) > 1e-6f;
  const bool sums_one = std::all_of(rows_check.sums.begin(), rows_check.sums.end(),
                                    [](float sum) { return std::abs(sum - 1.0f) <= 1e-5f; });
  attn::claim(sums_one && rows_check.future_zero == rows_check.future,
              "rows sum to 1 and the future is 0");
  if (unequal) {
    fmt::print(
        "Unlike chapter 02, the weights of a row are not equal: each query picks its own keys.\n");
  } else {
    fmt::print(
        "{}",
        T == 1 ? "With T = 1 the only query sees only itself: weight 1, nothing to choose.\n"
               : "Here every row happens to be uniform, as in chapter 02: the keys are equal.\n");
  }

  fmt::print("{}",
             "\nFinally each query gathers the values with its weights, one more product:\n"
             "out = weights @ v: " +
                 attn::shape_str(r.weights.shape()) + " @ " + attn::shape_str(p.v.shape()) +
                 " -> " + attn::shape_str(r.out.shape()) + first_columns_note(r.out) + ":\n");
  fmt::print("{}", table_text(first_columns(r.out, kShowCols), rows, {}));
  fmt::print("{}", "out equals weights @ v computed by plain loops (attn::matmul), to 1e-6: " +
                       yes_no(max_abs_diff(r.out, a.check) <= 1e-6) + "\n");
  attn::claim(max_abs_diff(r.out, a.check) <= 1e-6, "out equals weights @ v");
  fmt::print("{}",
             "Row 0 can only see itself, so out[0] = v[0]: max |difference| " +
                 difference_text(max_abs_diff(Matrix(xt::view(r.out, xt::range(0, 1), xt::all())),
                                              Matrix(xt::view(p.v, xt::range(0, 1), xt::all())))) +
                 "\n");
}

void show_scale(const ScaleExperiment& e) {
  attn::section(4, "Why divide by sqrt(hs)");
  fmt::print(
      "If the hs components of q and of k are independent with mean 0 and variance 1, each\n"
      "product q_j k_j has mean 0 and variance 1, and the variances of the hs terms add up:\n"
      "Var(q . k) = hs. Dividing by sqrt(hs) divides the variance by hs, back to 1.\n");
  fmt::print("{}", "Measured: " + std::to_string(kRows) + " random queries, each scored against " +
                       std::to_string(kKeys) +
                       " random keys (N(0, 1)\ncomponents), then a softmax over each row of " +
                       std::to_string(kKeys) +
                       " scores. For comparison, uniform weights have max\nweight " +
                       num(1.0 / static_cast<double>(kKeys)) + " and entropy ln " +
                       std::to_string(kKeys) + " = " + num(std::log(static_cast<double>(kKeys))) +
                       "; one-hot weights have max weight 1 and entropy 0.\n");
  fmt::print("     hs  scores            variance  mean max weight  mean entropy\n");
  double last_unscaled_max = 0.0;            // mean max weight, unscaled, at the largest hs
  double scaled_lo = 1e30, scaled_hi = 0.0;  // range of the scaled variances
  for (const ScaleRow& row : e.rows) {
    if (row.scaled) {
      scaled_lo = std::min(scaled_lo, row.variance);
      scaled_hi = std::max(scaled_hi, row.variance);
    } else {
      last_unscaled_max = row.mean_max_weight;
    }
    fmt::print("  {:>5}  {:<14}{:>12}{:>17}{:>14}\n", row.hs, row.scaled ? "q.k / sqrt(hs)" : "q.k",
               num(row.variance), num(row.mean_max_weight), num(row.mean_entropy));
  }
  // What the table shows, measured: the unscaled variance at the largest hs, the mean max weight
  // there, and the spread of the scaled variances.
  fmt::print(
      "{}",
      "Unscaled, the variance grows with hs and the softmax saturates: at hs = " +
          std::to_string(kHeadSizes[std::size(kHeadSizes) - 1]) +
          " the largest\nweight of a row is " + num(last_unscaled_max) + " on average" +
          (last_unscaled_max > 0.8 ? ", nearly one-hot" : "") + ".\nScaled, every head size " +
          (scaled_lo > 0.8 && scaled_hi < 1.25 ? "behaves like hs = 1" : "stays near variance 1") +
          " (variances " + num(scaled_lo) + " to " + num(scaled_hi) + ").\n");
  attn::claim(last_unscaled_max > 0.5 && scaled_lo > 0.7 && scaled_hi < 1.4,
              "unscaled saturates, scaled stays near variance 1");
  fmt::print("The first query at hs = 64:\n");
  fmt::print("{}", "  q.k                   " + row_text(e.example_raw, 0, 2) + "\n");
  fmt::print("{}",
             "  softmax(q.k)          " + row_text(attn::softmax<2>(e.example_raw), 0) + "\n");
  fmt::print("{}",
             "  softmax(q.k / 8)      " + row_text(attn::softmax<2>(e.example_scaled), 0) + "\n");
  fmt::print(
      "A nearly one-hot row also learns slowly: d w_i / d z_j = w_i (delta_ij - w_j) is close to\n"
      "0 for every i, j when one weight is close to 1, so the scores get almost no gradient.\n");
}

// 5. The weights as a picture.
void show_heatmap(const Tokens& tokens, const ex04::AttentionResult& causal) {
  const std::u32string& chars = tokens.x_chars;
  const std::size_t T = chars.size();
  attn::section(5, "The weights as a heatmap");
  fmt::print(
      "{}",
      T > 1 ? "Rows are queries, columns are keys, darker is more weight. Every query has its own\n"
              "pattern, chosen by its data; the upper triangle is empty (the future).\n"
            : "Rows are queries, columns are keys, darker is more weight. With T = 1 there is\n"
              "one cell: the only query gives all its weight to itself.\n");
  print_heatmap(causal.weights,
                weights_heatmap("causal self-attention weights " + quoted(chars), chars, chars));
  // Equal keys get equal weights: the repeated character, if there is one.
  if (const auto repeat = first_repeat(chars)) {
    const auto [i, j] = *repeat;
    attn::claim(causal.weights(j, i) == causal.weights(j, j), "equal keys get equal weights");
    fmt::print("{}", "Query " + std::to_string(j) + " ('" + glyph(chars[j]) + "') gives keys " +
                         std::to_string(i) + " and " + std::to_string(j) +
                         ", the same character, the same weight: " +
                         attn::format_number(causal.weights(j, i)) + " and " +
                         attn::format_number(causal.weights(j, j)) + ".\n");
  }
  fmt::print(
      "The weights are random-looking because W_q and W_k are random; training shapes them.\n");
}

// 6. Encoder (no mask) vs decoder (causal).
void show_encoder(const Tokens& tokens, const ex04::AttentionResult& enc,
                  const ex04::AttentionResult& causal) {
  const std::size_t T = enc.weights.shape()[0];
  const auto rows = position_glyphs(tokens.x_chars);
  const auto cols = glyphs(tokens.x_chars);
  attn::section(6, "No mask (encoder) vs causal (decoder)");
  fmt::print(
      "The mask is a choice, not part of attention. A decoder predicts the next token, so it\n"
      "must not read ahead. An encoder reads a whole input first, e.g. to classify the\n"
      "sentiment of a sentence, and every token may attend to every other: same head, no mask.\n");
  fmt::print("encoder weights = softmax(scores) (T, T):\n");
  fmt::print("{}", table_text(enc.weights, rows, cols));
  fmt::print("decoder weights (section 3), for comparison:\n");
  fmt::print("{}", table_text(causal.weights, rows, cols));
  const std::size_t last = T - 1;
  fmt::print("{}", "Row 0, encoder: " + row_text(enc.weights, 0) + "\n");
  fmt::print("{}", "Row 0, decoder: " + row_text(causal.weights, 0) + "\n");
  const Matrix enc_last = xt::view(enc.weights, xt::range(last, T), xt::all());
  const Matrix dec_last = xt::view(causal.weights, xt::range(last, T), xt::all());
  attn::claim(max_abs_diff(enc_last, dec_last) <= 1e-6, "the last row is the same");
  fmt::print("{}", "The last query sees every key either way: row " + std::to_string(last) +
                       " is the same in both, to 1e-6: " +
                       yes_no(max_abs_diff(enc_last, dec_last) <= 1e-6) + ".\n");
  print_heatmap(enc.weights, weights_heatmap("encoder self-attention weights (no mask)",
                                             tokens.x_chars, tokens.x_chars));
}

// 7. Cross-attention: keys and values from another sequence.
void show_cross(const Tokens& tokens, const Qkv& p, const CrossAttention& c) {
  const ex04::AttentionResult& cross = c.result;
  const Matrix& ky = c.k;
  const Matrix& vy = c.v;
  const std::size_t T = tokens.x.shape()[0];
  const std::size_t S = tokens.y.shape()[0];
  attn::section(7, "Self-attention vs cross-attention");
  fmt::print(
      "{}",
      "Self-attention: q, k and v all come from x. Cross-attention keeps the queries from x and\n"
      "takes the keys and values from another sequence y, e.g. the encoded source sentence a\n"
      "translator is reading. Here y is the next S = " +
          std::to_string(S) + " characters of the corpus, " + quoted(tokens.y_chars) +
          ",\nembedded by the same table and projected by the same W_k and W_v.\n");
  fmt::print("{}", "y " + attn::shape_str(tokens.y.shape()) + " -> k " +
                       attn::shape_str(ky.shape()) + ", v " + attn::shape_str(vy.shape()) + "; q " +
                       attn::shape_str(p.q.shape()) + " from x as before.\n");
  fmt::print("{}", "weights = softmax(q k^T / sqrt(hs)): " + attn::shape_str(p.q.shape()) + " x " +
                       attn::shape_str(ky.shape()) + " -> " +
                       attn::shape_str(cross.weights.shape()) +
                       ", one row per query of x,\none column per key of y:\n");
  fmt::print("{}",
             table_text(cross.weights, position_glyphs(tokens.x_chars), glyphs(tokens.y_chars)));
  fmt::print("{}", "out = weights @ v: " + attn::shape_str(cross.weights.shape()) + " @ " +
                       attn::shape_str(vy.shape()) + " -> " + attn::shape_str(cross.out.shape()) +
                       ": still one row per token of x.\n");
  print_heatmap(cross.weights, weights_heatmap("cross-attention weights (x queries, y keys)",
                                               tokens.x_chars, tokens.y_chars));
  fmt::print(
      "No mask here: key s of y is not \"the future\" of query t of x, they are two sequences");
  if (S != T) {
    const bool rejected = c.causal_rejected;
    fmt::print(
        "{}",
        ",\nand the causal rule s <= t needs S = T: asking for it with T = " + std::to_string(T) +
            ", S = " + std::to_string(S) + " is\n" +
            (rejected ? "rejected (std::invalid_argument)" : "NOT rejected (it should throw)") +
            ".\n");
  } else {
    fmt::print(".\n");
  }
}

void save_figures(const std::filesystem::path& dir, const Tokens& tokens,
                  const ex04::AttentionResult& causal, const ex04::AttentionResult& encoder,
                  const ex04::AttentionResult& cross) {
  const std::u32string& xc = tokens.x_chars;
  const std::u32string& yc = tokens.y_chars;
  const auto save = [&](const char* file, const Matrix& weights, const std::string& title,
                        const std::u32string& keys) {
    const auto path = dir / file;
    attn::write_svg(path, attn::heatmap_svg(weights, weights_heatmap(title, xc, keys)));
    return path.string();
  };
  const std::string causal_svg =
      save("weights_causal.svg", causal.weights, "causal self-attention weights " + quoted(xc), xc);
  const std::string encoder_svg =
      save("weights_encoder.svg", encoder.weights, "encoder self-attention weights (no mask)", xc);
  const std::string cross_svg =
      save("weights_cross.svg", cross.weights,
           "cross-attention weights " + quoted(xc) + " -> " + quoted(yc), yc);
  fmt::print("{}", "\nwrote " + causal_svg + ", " + encoder_svg + " and " + cross_svg + "\n");
}

}  // namespace ch04
