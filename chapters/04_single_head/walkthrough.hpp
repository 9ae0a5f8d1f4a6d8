// chapters/04_single_head/walkthrough.hpp: what chapter 04's sections compute (main.cpp) and
// how they are shown (show.cpp): one struct of results per section, one show_ function each.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "attn/core/xt.hpp"
#include "exercises.hpp"

namespace ch04 {

using attn::Matrix;

// Section 4's experiment: kRows random queries, each scored against kKeys random keys.
inline constexpr std::size_t kRows = 1000;
inline constexpr std::size_t kKeys = 8;
inline constexpr std::size_t kHeadSizes[] = {4, 16, 64, 256};

struct Tokens {
  std::u32string x_chars;  // T characters: the sequence that attends
  std::u32string y_chars;  // S characters: the other sequence of section 7
  Matrix x;                // (T, C)
  Matrix y;                // (S, C)
  std::size_t vocab_size = 0;
};

struct Head {
  Matrix w_q, w_k, w_v;  // (C, hs) each
};

// 2. Queries, keys and values.
struct Qkv {
  Matrix q, k, v;  // (T, hs) each
};

// 3. One causal head, step by step.
struct SelfAttention {
  Matrix raw;                    // (T, T): q @ k^T
  Matrix scores;                 // (T, T): q @ k^T / sqrt(hs)
  ex04::AttentionResult causal;  // weights (T, T) with the causal mask, out (T, hs)
  Matrix check;                  // (T, hs): weights @ v by plain loops (attn::matmul)
};

// 4. Why 1/sqrt(hs): measured, not asserted. For each head size, kRows random queries are
// scored against kKeys random keys, unscaled (q . k) and scaled (q . k / sqrt(hs)), and each row
// of scores goes through a softmax. One row of the table per (hs, scaled or not).
struct ScaleRow {
  std::size_t hs = 0;
  bool scaled = false;
  double variance = 0.0;         // of every score
  double mean_max_weight = 0.0;  // the largest weight of a row, averaged over the rows
  double mean_entropy = 0.0;     // -sum w ln w of a row, averaged over the rows (nats)
};

struct ScaleExperiment {
  std::vector<ScaleRow> rows;
  Matrix example_raw, example_scaled;  // (1, kKeys): the first query at hs = 64, both ways
};

// 7. Cross-attention: keys and values from the other sequence y.
struct CrossAttention {
  Matrix k, v;                   // (S, hs) each
  ex04::AttentionResult result;  // weights (T, S), out (T, hs)
  bool causal_rejected = false;  // asking for the causal rule with S != T threw invalid_argument
};

double entry_variance(const Matrix& m);  // main.cpp: population variance of every entry

// ---- show.cpp: one function per section, in teaching order.
void show_averaging(const Tokens& tokens, const std::string& corpus_origin);      // 1
void show_projections(const Tokens& tokens, const Head& head, const Qkv& p);      // 2
void show_attention(const Tokens& tokens, const Qkv& p, const SelfAttention& a);  // 3
void show_scale(const ScaleExperiment& e);                                        // 4
void show_heatmap(const Tokens& tokens, const ex04::AttentionResult& causal);     // 5
void show_encoder(const Tokens& tokens, const ex04::AttentionResult& enc,         // 6
                  const ex04::AttentionResult& causal);
void show_cross(const Tokens& tokens, const Qkv& p, const CrossAttention& c);  // 7
// --svg: the three weight maps as SVG files in `dir`.
void save_figures(const std::filesystem::path& dir, const Tokens& tokens,
                  const ex04::AttentionResult& causal, const ex04::AttentionResult& encoder,
                  const ex04::AttentionResult& cross);

}  // namespace ch04
