// chapters/04_single_head/main.cpp: chapter 04, one head of self-attention. Queries, keys and
// values project the tokens; weights = softmax(q k^T / sqrt(hs)), out = weights @ v. Each section
// computes here (the math lives in common/src/ops/linear.cpp and attention.cpp) and is printed by
// its show_ function in show.cpp. Page: docs/04-single-head.md
#include <algorithm>
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
#include "attn/ops/attention.hpp"
#include "attn/core/check.hpp"
#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/ops/linear.hpp"
#include "attn/ops/matmul.hpp"
#include "attn/term/narrate.hpp"
#include "attn/core/random.hpp"
#include "attn/ops/softmax.hpp"
#include "attn/io/text.hpp"
#include "exercises.hpp"
#include "walkthrough.hpp"

// Population variance of every entry of m, in double (declared in walkthrough.hpp).
double ch04::entry_variance(const Matrix& m) {
  double sum = 0.0;
  double sum_sq = 0.0;
  for (const float value : m) {
    sum += static_cast<double>(value);
    sum_sq += static_cast<double>(value) * static_cast<double>(value);
  }
  const double n = static_cast<double>(m.size());
  return sum_sq / n - (sum / n) * (sum / n);
}

namespace {

using namespace ch04;  // the sections' results and their show functions (walkthrough.hpp)

constexpr std::size_t kMaxTimeSteps = 64;  // every (T, T) matrix is printed
constexpr std::size_t kMaxWidth = 4096;    // --channels and --head-size

// --- The functions this chapter teaches: attn:: (the reference) or ex04:: (--mine). ----------

attn::Tensor<4> as_4d(const Matrix& m) {  // (R, K) -> (1, 1, R, K): one batch, one head
  attn::Tensor<4> t({1, 1, m.shape()[0], m.shape()[1]});
  std::copy(m.begin(), m.end(), t.begin());
  return t;
}

Matrix as_2d(const attn::Tensor<4>& t) {  // (1, 1, R, K) -> (R, K)
  Matrix m({t.shape()[2], t.shape()[3]});
  std::copy(t.begin(), t.end(), m.begin());
  return m;
}

// q (T, hs), k (S, hs) -> q @ k^T / sqrt(hs) (T, S): one GEMM, the scale as its alpha.
Matrix reference_scores(const Matrix& q, const Matrix& k) {
  const std::size_t T = q.shape()[0];
  const std::size_t S = k.shape()[0];
  const std::size_t hs = q.shape()[1];
  if (k.shape()[1] != hs) {
    attn::shape_error("attention_scores", "q (T, hs) and k (S, hs) with the same hs",
                      attn::shape_str(q.shape()) + " and " + attn::shape_str(k.shape()));
  }
  Matrix scores({T, S});
  attn::fast::gemm(T, S, hs, 1.0f / std::sqrt(static_cast<float>(hs)), q.data(), false, k.data(),
                   true, 0.0f, scores.data());
  return scores;
}

// One head is scaled_dot_product_attention with B = H = 1.
ex04::AttentionResult reference_attention(const Matrix& q, const Matrix& k, const Matrix& v,
                                          bool causal) {
  const attn::AttentionResult r =
      attn::scaled_dot_product_attention(as_4d(q), as_4d(k), as_4d(v), causal);
  return {as_2d(r.out), as_2d(r.weights)};  // (T, hs), (T, S)
}

struct Kernels {
  Matrix (*project)(const Matrix& x, const Matrix& w);           // (T, C) @ (C, hs) -> (T, hs)
  Matrix (*attention_scores)(const Matrix& q, const Matrix& k);  // (T, hs), (S, hs) -> (T, S)
  ex04::AttentionResult (*attention)(const Matrix& q, const Matrix& k, const Matrix& v,
                                     bool causal);  // -> out (T, hs), weights (T, S)
};

Kernels reference_kernels() {
  return {&attn::fast::matmul_blas, &reference_scores, &reference_attention};
}

Kernels learner_kernels() {
  return {&ex04::project, &ex04::attention_scores, &ex04::single_head_attention};
}

// ---- The walkthrough: what each section computes (show.cpp prints it).

// The first T characters of the corpus, and the S after them, embedded by a random (V, C) table.
Tokens embed_corpus(const attn::Corpus& corpus, std::size_t T, std::size_t S, std::size_t C,
                    attn::Rng& rng) {
  const std::u32string chars = attn::decode_utf8(corpus.text);
  if (chars.size() < T + S) {
    // A property of the file (the flags are within their bounds): exit code 1, as in every
    // chapter whose corpus is too short.
    throw std::runtime_error(
        fmt::format("--block-size + --source-steps needs {} characters, but the corpus has only {}",
                    T + S, chars.size()));
  }
  const attn::Vocab vocab = attn::Vocab::from_text(corpus.text);
  const Matrix table = attn::randn(rng, vocab.size(), C);  // (V, C), Normal(0, 1)
  Tokens tokens;
  tokens.x_chars = chars.substr(0, T);
  tokens.y_chars = chars.substr(T, S);
  tokens.vocab_size = vocab.size();
  auto rows_of = [&](const std::u32string& text) {
    Matrix out({text.size(), C});  // (len, C): row i = table[id of character i]
    for (std::size_t i = 0; i < text.size(); ++i) {
      const auto id = static_cast<std::size_t>(vocab.id_of(text[i]));
      std::copy_n(table.data() + id * C, C, out.data() + i * C);
    }
    return out;
  };
  tokens.x = rows_of(tokens.x_chars);
  tokens.y = rows_of(tokens.y_chars);
  return tokens;
}

// 2. Three projections of every token: (T, C) @ (C, hs) -> (T, hs) each.
Qkv project_tokens(const Kernels& kern, const Tokens& tokens, const Head& head) {
  return {kern.project(tokens.x, head.w_q), kern.project(tokens.x, head.w_k),
          kern.project(tokens.x, head.w_v)};
}

// 3. Scores, scale, mask, softmax, weighted sum: one causal head.
SelfAttention attend_causal(const Kernels& kern, const Qkv& p) {
  SelfAttention a;
  a.raw = attn::fast::matmul_blas(p.q, xt::transpose(p.k));   // (T, hs) @ (hs, T) -> (T, T)
  a.scores = kern.attention_scores(p.q, p.k);                 // (T, T): raw / sqrt(hs)
  a.causal = kern.attention(p.q, p.k, p.v, /*causal=*/true);  // out (T, hs), weights (T, T)
  a.check = attn::matmul(a.causal.weights, p.v);              // (T, T) @ (T, hs), plain loops
  return a;
}

// 4. Why 1/sqrt(hs), measured: for each head size, kRows random queries scored against kKeys
// random keys, unscaled and scaled, and the softmax of every row (walkthrough.hpp, ScaleRow).
ScaleRow softmax_statistics(const Matrix& z, std::size_t hs, bool scaled) {  // z (rows, keys)
  const Matrix w = attn::softmax<2>(z);                                      // (rows, keys)
  double max_weight = 0.0;
  double entropy = 0.0;
  for (std::size_t r = 0; r < kRows; ++r) {
    double row_max = 0.0;
    for (std::size_t s = 0; s < kKeys; ++s) {
      const double p = static_cast<double>(w(r, s));
      row_max = std::max(row_max, p);
      if (p > 0.0) entropy -= p * std::log(p);
    }
    max_weight += row_max;
  }
  const double n = static_cast<double>(kRows);
  return {hs, scaled, entry_variance(z), max_weight / n, entropy / n};
}

ScaleExperiment measure_scale(const Kernels& kern, std::uint64_t seed) {
  attn::Rng rng(seed, 4);  // its own stream: the table does not depend on the other flags
  ScaleExperiment e;
  for (const std::size_t hs : kHeadSizes) {
    Matrix raw({kRows, kKeys});     // (rows, keys): q . k
    Matrix scaled({kRows, kKeys});  // (rows, keys): q . k / sqrt(hs)
    for (std::size_t r = 0; r < kRows; ++r) {
      const Matrix q = attn::randn(rng, 1, hs);      // (1, hs)
      const Matrix k = attn::randn(rng, kKeys, hs);  // (keys, hs)
      const Matrix kt = xt::transpose(k);            // (hs, keys)
      const Matrix dots = attn::matmul(q, kt);       // (1, hs) @ (hs, keys) -> (1, keys)
      const Matrix s = kern.attention_scores(q, k);  // (1, keys)
      std::copy(dots.begin(), dots.end(), raw.data() + r * kKeys);
      std::copy(s.begin(), s.end(), scaled.data() + r * kKeys);
    }
    e.rows.push_back(softmax_statistics(raw, hs, false));
    e.rows.push_back(softmax_statistics(scaled, hs, true));
    if (hs == 64) {
      e.example_raw = xt::view(raw, xt::range(0, 1), xt::all());
      e.example_scaled = xt::view(scaled, xt::range(0, 1), xt::all());
    }
  }
  return e;
}

// 7. Cross-attention: queries from x, keys and values from y, projected by the same W_k, W_v.
CrossAttention cross_attend(const Kernels& kern, const Tokens& tokens, const Head& head,
                            const Qkv& p) {
  CrossAttention c;
  c.k = kern.project(tokens.y, head.w_k);                      // (S, C) @ (C, hs) -> (S, hs)
  c.v = kern.project(tokens.y, head.w_v);                      // (S, C) @ (C, hs) -> (S, hs)
  c.result = kern.attention(p.q, c.k, c.v, /*causal=*/false);  // weights (T, S)
  if (tokens.y.shape()[0] != tokens.x.shape()[0]) {            // the causal rule s <= t needs S = T
    try {
      kern.attention(p.q, c.k, c.v, true);
    } catch (const std::invalid_argument&) {
      c.causal_rejected = true;
    }
  }
  return c;
}

void show_timing(const Kernels& kern, const Qkv& p) {
  constexpr int kRepeats = 1000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRepeats; ++i) {
    const ex04::AttentionResult r = kern.attention(p.q, p.k, p.v, true);  // through a pointer
  }
  const auto stop = std::chrono::steady_clock::now();
  const double us = std::chrono::duration<double, std::micro>(stop - start).count() / kRepeats;
  std::printf(
      "\ntiming: causal single-head attention on q, k, v (%zu, %zu): %.2f us per call "
      "(mean of %d calls)\n",
      p.q.shape()[0], p.q.shape()[1], us, kRepeats);
}

}  // namespace

int main(int argc, char** argv) {
  attn::Cli cli("04_single_head",
                "Chapter 04: single-head attention. Queries, keys and values from the tokens, "
                "weights = softmax(q k^T / sqrt(hs)) with a causal mask, out = weights @ v; why "
                "1/sqrt(hs) (measured), encoder vs decoder, self- vs cross-attention.");
  std::size_t T = 8;
  std::size_t C = 32;
  std::size_t hs = 16;
  std::size_t S = 5;
  cli.add_size("--block-size", T, "sequence length T: the first T characters of the corpus", 1,
               kMaxTimeSteps, "every (T, T) matrix is printed");
  cli.add_size("--n-embd", C, "channels C: the width of a token vector", 1, kMaxWidth);
  cli.add_size("--head-size", hs, "head size hs: the width of q, k and v", 1, kMaxWidth);
  cli.add_size("--source-steps", S,
               "length S of the other sequence of cross-attention, the S characters after the "
               "first T",
               1, kMaxTimeSteps, "every (T, S) matrix is printed");
  cli.add_alias("time-steps", "block-size");  // the names before the lecture's vocabulary
  cli.add_alias("channels", "n-embd");

  return cli.run(argc, argv, [&](const attn::CommonOptions& options) {
    const Kernels kern = options.mine ? learner_kernels() : reference_kernels();
    const attn::Corpus corpus = attn::load_corpus(options.data);
    attn::Rng rng(options.seed);
    const Tokens tokens = embed_corpus(corpus, T, S, C, rng);
    const float w_std = 1.0f / std::sqrt(static_cast<float>(C));
    Head head;
    head.w_q = attn::randn(rng, C, hs, w_std);  // (C, hs)
    head.w_k = attn::randn(rng, C, hs, w_std);  // (C, hs)
    head.w_v = attn::randn(rng, C, hs, w_std);  // (C, hs)

    fmt::print("Chapter 04: single-head attention\n");
    fmt::print("T = {}, C = {}, hs = {}, S = {}, seed = {}, functions: {}\n", T, C, hs, S,
               options.seed, options.mine ? "yours (ex04::, --mine)" : "the reference (attn::)");

    show_averaging(tokens, corpus.origin);             // 1
    const Qkv p = project_tokens(kern, tokens, head);  // 2
    show_projections(tokens, head, p);
    const SelfAttention self = attend_causal(kern, p);  // 3
    show_attention(tokens, p, self);
    show_scale(measure_scale(kern, options.seed));  // 4
    show_heatmap(tokens, self.causal);              // 5
    const ex04::AttentionResult encoder = kern.attention(p.q, p.k, p.v, /*causal=*/false);
    show_encoder(tokens, encoder, self.causal);  // 6
    const CrossAttention cross = cross_attend(kern, tokens, head, p);
    show_cross(tokens, p, cross);  // 7
    if (options.svg_dir) save_figures(*options.svg_dir, tokens, self.causal, encoder, cross.result);
    if (options.timing) show_timing(kern, p);
  });
}
