// Don't edit: these tests check your exercises.
// tests/exercises/ch04_test.cpp: chapter 04 (single-head attention, docs/04-single-head.md).
// Every expected value is worked out by hand or by a plain double-precision loop below, never by
// the attn:: function the reference solution forwards to. Run them with
// build/default/bin/attn-check 04.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"
#include "exercises.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Matrix;

// Tolerances for float results compared with exact or double-precision values.
constexpr double kAtol = 1e-5;
constexpr double kRtol = 1e-5;

// A fixed (R, K) matrix with no visible pattern: m(i, j) = amp * sin(a i + b j + phase).
Matrix wiggly(std::size_t R, std::size_t K, double a, double b, double phase, double amp = 1.0) {
  Matrix m({R, K});
  for (std::size_t i = 0; i < R; ++i)
    for (std::size_t j = 0; j < K; ++j)
      m(i, j) = static_cast<float>(
          amp * std::sin(a * static_cast<double>(i) + b * static_cast<double>(j) + phase));
  return m;
}

// (M, K) @ (K, N) in double, written out.
Matrix product_by_hand(const Matrix& a, const Matrix& b) {
  const std::size_t M = a.shape()[0];
  const std::size_t K = a.shape()[1];
  const std::size_t N = b.shape()[1];
  Matrix out({M, N});
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      double sum = 0.0;
      for (std::size_t c = 0; c < K; ++c)
        sum += static_cast<double>(a(i, c)) * static_cast<double>(b(c, j));
      out(i, j) = static_cast<float>(sum);
    }
  return out;
}

// scores(t, s) = q[t] . k[s] / sqrt(hs), in double.
std::vector<std::vector<double>> scores_by_hand(const Matrix& q, const Matrix& k) {
  const std::size_t T = q.shape()[0];
  const std::size_t S = k.shape()[0];
  const std::size_t hs = q.shape()[1];
  std::vector<std::vector<double>> scores(T, std::vector<double>(S, 0.0));
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t s = 0; s < S; ++s) {
      double dot = 0.0;
      for (std::size_t j = 0; j < hs; ++j)
        dot += static_cast<double>(q(t, j)) * static_cast<double>(k(s, j));
      scores[t][s] = dot / std::sqrt(static_cast<double>(hs));
    }
  return scores;
}

Matrix to_matrix(const std::vector<std::vector<double>>& rows) {
  Matrix m({rows.size(), rows.empty() ? 0 : rows.front().size()});
  for (std::size_t i = 0; i < m.shape()[0]; ++i)
    for (std::size_t j = 0; j < m.shape()[1]; ++j) m(i, j) = static_cast<float>(rows[i][j]);
  return m;
}

struct ByHand {
  Matrix weights;  // (T, S)
  Matrix out;      // (T, hs)
};

// One head from the definition, in double: softmax over the visible keys of each row (key s is
// visible to query t when s <= t, or always without the causal mask), then the weighted sum.
ByHand attention_by_hand(const Matrix& q, const Matrix& k, const Matrix& v, bool causal) {
  const std::size_t T = q.shape()[0];
  const std::size_t S = k.shape()[0];
  const std::size_t D = v.shape()[1];
  const auto scores = scores_by_hand(q, k);
  std::vector<std::vector<double>> weights(T, std::vector<double>(S, 0.0));
  std::vector<std::vector<double>> out(T, std::vector<double>(D, 0.0));
  for (std::size_t t = 0; t < T; ++t) {
    const std::size_t visible = causal ? t + 1 : S;
    double m = -std::numeric_limits<double>::infinity();
    for (std::size_t s = 0; s < visible; ++s) m = std::max(m, scores[t][s]);
    double sum = 0.0;
    for (std::size_t s = 0; s < visible; ++s) sum += std::exp(scores[t][s] - m);
    for (std::size_t s = 0; s < visible; ++s) weights[t][s] = std::exp(scores[t][s] - m) / sum;
    for (std::size_t d = 0; d < D; ++d)
      for (std::size_t s = 0; s < S; ++s) out[t][d] += weights[t][s] * static_cast<double>(v(s, d));
  }
  return {to_matrix(weights), to_matrix(out)};
}

// Rows 0..n-1 of m, as their own matrix.
Matrix first_rows(const Matrix& m, std::size_t n) {
  Matrix out({n, m.shape()[1]});
  std::copy_n(m.data(), n * m.shape()[1], out.data());
  return out;
}

double row_sum(const Matrix& m, std::size_t i) {
  double sum = 0.0;
  for (std::size_t j = 0; j < m.shape()[1]; ++j) sum += static_cast<double>(m(i, j));
  return sum;
}

}  // namespace

TEST_SUITE("ex04.1 Project") {
TEST_CASE("the output has one row per token and one column per output feature") {
  for (const auto& [T, C, hs] :
       {std::array<std::size_t, 3>{5, 3, 2}, std::array<std::size_t, 3>{1, 8, 4},
        std::array<std::size_t, 3>{7, 4, 16}}) {
    CAPTURE(T);
    CAPTURE(C);
    CAPTURE(hs);
    const Matrix y = ex04::project(wiggly(T, C, 0.7, 0.3, 0.1), wiggly(C, hs, 0.2, 0.9, 0.5));
    CHECK(y.shape()[0] == T);
    CHECK(y.shape()[1] == hs);
  }
}

TEST_CASE("a small product worked out by hand") {
  // Row 0: [1, 2] @ [[1, 0, -1], [2, 1, 0]] = [1 + 4, 0 + 2, -1 + 0] = [5, 2, -1].
  const Matrix x = {{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 6.0f}};  // (T, C) = (3, 2)
  const Matrix w = {{1.0f, 0.0f, -1.0f}, {2.0f, 1.0f, 0.0f}};   // (C, hs) = (2, 3)
  const Matrix want = {{5.0f, 2.0f, -1.0f}, {11.0f, 4.0f, -3.0f}, {17.0f, 6.0f, -5.0f}};
  CHECK_TENSOR_NEAR(ex04::project(x, w), want, 0.0, 0.0);
}

TEST_CASE("every entry is the dot product of a row of x with a column of w") {
  const Matrix x = wiggly(7, 6, 0.9, 0.4, 0.3, 2.0);   // (T, C)
  const Matrix w = wiggly(6, 4, 1.3, 0.6, -0.2, 0.5);  // (C, hs)
  CHECK_TENSOR_NEAR(ex04::project(x, w), product_by_hand(x, w), kAtol, kRtol);
}

TEST_CASE("a one-hot token picks out one row of w") {
  // An embedding lookup is a projection of one-hot vectors: e_i @ w = w[i].
  Matrix x = xt::zeros<float>({3, 4});
  x(0, 2) = 1.0f;
  x(1, 0) = 1.0f;
  x(2, 3) = 1.0f;
  const Matrix w = {{0.5f, -1.0f}, {2.0f, 3.0f}, {-4.0f, 0.25f}, {7.0f, 8.0f}};
  const Matrix want = {{-4.0f, 0.25f}, {0.5f, -1.0f}, {7.0f, 8.0f}};
  CHECK_TENSOR_NEAR(ex04::project(x, w), want, 0.0, 0.0);
}

TEST_CASE("a w whose rows do not match the columns of x is rejected") {
  const Matrix x = wiggly(3, 2, 0.5, 0.5, 0.0);
  CHECK_THROWS_AS(ex04::project(x, wiggly(3, 2, 0.5, 0.5, 0.0)), std::invalid_argument);
  CHECK_THROWS_AS(ex04::project(x, wiggly(1, 4, 0.5, 0.5, 0.0)), std::invalid_argument);
}
}

TEST_SUITE("ex04.2 Attention scores") {
TEST_CASE("scores have one row per query and one column per key") {
  const Matrix s1 =
      ex04::attention_scores(wiggly(4, 8, 0.3, 0.7, 0.0), wiggly(6, 8, 0.5, 0.2, 1.0));
  CHECK(s1.shape()[0] == 4);
  CHECK(s1.shape()[1] == 6);
  const Matrix s2 =
      ex04::attention_scores(wiggly(1, 3, 0.3, 0.7, 0.0), wiggly(1, 3, 0.5, 0.2, 1.0));
  CHECK(s2.shape()[0] == 1);
  CHECK(s2.shape()[1] == 1);
}

TEST_CASE("a small example worked out by hand") {
  // hs = 4, so every dot product is divided by sqrt(4) = 2.
  // q0 = [1, 0, 0, 0]: dots with the keys [2, 1, 1] -> [1, 0.5, 0.5]
  // q1 = [1, 1, 1, 1]: dots with the keys [2, 0, 4] -> [1, 0, 2]
  const Matrix q = {{1.0f, 0.0f, 0.0f, 0.0f}, {1.0f, 1.0f, 1.0f, 1.0f}};  // (T, hs) = (2, 4)
  const Matrix k = {{2.0f, 0.0f, 0.0f, 0.0f},
                    {1.0f, -1.0f, 1.0f, -1.0f},
                    {1.0f, 1.0f, 1.0f, 1.0f}};  // (S, hs) = (3, 4)
  const Matrix want = {{1.0f, 0.5f, 0.5f}, {1.0f, 0.0f, 2.0f}};
  CHECK_TENSOR_NEAR(ex04::attention_scores(q, k), want, 1e-6, 0.0);
}

TEST_CASE("the scale is 1 / sqrt(hs), not 1 / hs and not 1") {
  // ones . ones = hs; divided by sqrt(hs) that is sqrt(hs): 4 for hs = 16, 8 for hs = 64.
  const Matrix s16 = ex04::attention_scores(xt::ones<float>({1, 16}), xt::ones<float>({1, 16}));
  const Matrix s64 = ex04::attention_scores(xt::ones<float>({2, 64}), xt::ones<float>({3, 64}));
  CHECK_TENSOR_NEAR(s16, Matrix({{4.0f}}), 1e-6, 0.0);
  CHECK_TENSOR_NEAR(s64, Matrix(8.0f * xt::ones<float>({2, 3})), 1e-6, 0.0);
}

TEST_CASE("every score matches a double-precision loop") {
  const Matrix q = wiggly(5, 6, 0.8, 1.1, 0.2, 1.5);  // (T, hs)
  const Matrix k = wiggly(7, 6, 0.4, 2.3, -0.7);      // (S, hs)
  CHECK_TENSOR_NEAR(ex04::attention_scores(q, k), to_matrix(scores_by_hand(q, k)), kAtol, kRtol);
}

TEST_CASE("unit-variance queries and keys give scores of variance close to 1") {
  // Unscaled, q . k would have variance hs = 64; divided by sqrt(64) it has variance 1.
  attn::Rng rng(2024);
  const Matrix q = attn::randn(rng, 256, 64);  // (T, hs)
  const Matrix k = attn::randn(rng, 256, 64);  // (S, hs)
  const Matrix s = ex04::attention_scores(q, k);
  REQUIRE(s.size() == 256u * 256u);
  double sum = 0.0;
  double sum_sq = 0.0;
  for (const float value : s) {
    sum += static_cast<double>(value);
    sum_sq += static_cast<double>(value) * static_cast<double>(value);
  }
  const double n = static_cast<double>(s.size());
  const double mean = sum / n;
  const double variance = sum_sq / n - mean * mean;
  CHECK(std::abs(mean) < 0.05);
  CHECK(variance == doctest::Approx(1.0).epsilon(0.1));
}

TEST_CASE("queries and keys of different widths are rejected") {
  const Matrix q = wiggly(3, 4, 0.1, 0.2, 0.3);  // hs = 4
  const Matrix k = wiggly(3, 5, 0.1, 0.2, 0.3);  // hs = 5
  CHECK_THROWS_AS(ex04::attention_scores(q, k), std::invalid_argument);
}
}

TEST_SUITE("ex04.3 Single-head attention") {
TEST_CASE("self-attention gives (T, T) weights and a (T, hs) output") {
  const Matrix x = wiggly(5, 3, 0.6, 0.9, 0.1);
  const ex04::AttentionResult r = ex04::single_head_attention(x, x, x, true);
  CHECK(r.weights.shape()[0] == 5);
  CHECK(r.weights.shape()[1] == 5);
  CHECK(r.out.shape()[0] == 5);
  CHECK(r.out.shape()[1] == 3);
}

TEST_CASE("cross-attention gives (T, S) weights and a (T, hs) output") {
  const Matrix q = wiggly(3, 4, 0.6, 0.9, 0.1);
  const Matrix kv = wiggly(5, 4, 1.7, 0.3, 0.8);
  const ex04::AttentionResult r = ex04::single_head_attention(q, kv, kv, false);
  CHECK(r.weights.shape()[0] == 3);
  CHECK(r.weights.shape()[1] == 5);
  CHECK(r.out.shape()[0] == 3);
  CHECK(r.out.shape()[1] == 4);
}

// Two tokens, hs = 2. Query [1, 1] against key [0, 0] scores 0; against [a, a] it scores
// 2a / sqrt(2), which is ln 3 for a = ln 3 / sqrt(2). softmax([0, ln 3]) = [1, 3] / 4.
struct TwoTokens {
  float a = static_cast<float>(std::log(3.0) / std::sqrt(2.0));
  Matrix q = {{1.0f, 1.0f}, {1.0f, 1.0f}};
  Matrix k = {{0.0f, 0.0f}, {a, a}};
  Matrix v = {{4.0f, 0.0f}, {0.0f, 8.0f}};
};

TEST_CASE("two tokens by hand, causal: token 0 sees only itself") {
  const TwoTokens in;
  const ex04::AttentionResult r = ex04::single_head_attention(in.q, in.k, in.v, true);
  CHECK_TENSOR_NEAR(r.weights, Matrix({{1.0f, 0.0f}, {0.25f, 0.75f}}), 1e-6, 0.0);
  // out[1] = 0.25 * [4, 0] + 0.75 * [0, 8] = [1, 6]
  CHECK_TENSOR_NEAR(r.out, Matrix({{4.0f, 0.0f}, {1.0f, 6.0f}}), 1e-5, 0.0);
}

TEST_CASE("two tokens by hand, no mask: token 0 sees token 1 too") {
  const TwoTokens in;
  const ex04::AttentionResult r = ex04::single_head_attention(in.q, in.k, in.v, false);
  CHECK_TENSOR_NEAR(r.weights, Matrix({{0.25f, 0.75f}, {0.25f, 0.75f}}), 1e-6, 0.0);
  CHECK_TENSOR_NEAR(r.out, Matrix({{1.0f, 6.0f}, {1.0f, 6.0f}}), 1e-5, 0.0);
}

TEST_CASE("the scores are divided by sqrt(hs) before the softmax") {
  // hs = 4: q . k1 = 2 ln 3, divided by sqrt(4) = 2 gives ln 3, so the weights are [1, 3] / 4.
  // Without the scale they would be [1, 9] / 10; divided by hs = 4, [0.366, 0.634].
  const float l = static_cast<float>(std::log(3.0));
  const Matrix q = {{1.0f, 1.0f, 0.0f, 0.0f}};                            // (T, hs) = (1, 4)
  const Matrix k = {{0.0f, 0.0f, 0.0f, 0.0f}, {l, l, 0.0f, 0.0f}};        // (S, hs) = (2, 4)
  const Matrix v = {{1.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f, 0.0f}};  // (S, hs)
  const ex04::AttentionResult r = ex04::single_head_attention(q, k, v, false);
  CHECK_TENSOR_NEAR(r.weights, Matrix({{0.25f, 0.75f}}), 1e-6, 0.0);
  CHECK_TENSOR_NEAR(r.out, Matrix({{0.25f, 0.75f, 0.0f, 0.0f}}), 1e-6, 0.0);
}

TEST_CASE("causal: query 0 sees only itself, the future gets exactly 0, rows sum to 1") {
  const std::size_t T = 6;
  const Matrix q = wiggly(T, 4, 0.8, 1.1, 0.2, 2.0);
  const Matrix k = wiggly(T, 4, 0.4, 2.3, -0.7, 2.0);
  const Matrix v = wiggly(T, 4, 1.9, 0.5, 0.4);
  const ex04::AttentionResult r = ex04::single_head_attention(q, k, v, true);
  REQUIRE(r.weights.shape()[0] == T);
  REQUIRE(r.weights.shape()[1] == T);
  CHECK(r.weights(0, 0) == doctest::Approx(1.0));
  for (std::size_t t = 0; t < T; ++t) {
    CAPTURE(t);
    CHECK(row_sum(r.weights, t) == doctest::Approx(1.0).epsilon(1e-5));
    for (std::size_t s = t + 1; s < T; ++s) {
      CAPTURE(s);
      CHECK(r.weights(t, s) == 0.0f);
    }
  }
}

TEST_CASE("causal weights and output match a double-precision loop") {
  const Matrix q = wiggly(6, 4, 0.8, 1.1, 0.2, 2.0);
  const Matrix k = wiggly(6, 4, 0.4, 2.3, -0.7, 2.0);
  const Matrix v = wiggly(6, 4, 1.9, 0.5, 0.4);
  const ByHand want = attention_by_hand(q, k, v, true);
  const ex04::AttentionResult r = ex04::single_head_attention(q, k, v, true);
  CHECK_TENSOR_NEAR(r.weights, want.weights, kAtol, kRtol);
  CHECK_TENSOR_NEAR(r.out, want.out, kAtol, kRtol);
}

TEST_CASE("without the mask every query sees every key, like an encoder") {
  const Matrix q = wiggly(5, 3, 0.8, 1.1, 0.2, 2.0);
  const Matrix k = wiggly(5, 3, 0.4, 2.3, -0.7, 2.0);
  const Matrix v = wiggly(5, 3, 1.9, 0.5, 0.4);
  const ByHand want = attention_by_hand(q, k, v, false);
  const ex04::AttentionResult r = ex04::single_head_attention(q, k, v, false);
  CHECK_TENSOR_NEAR(r.weights, want.weights, kAtol, kRtol);
  CHECK_TENSOR_NEAR(r.out, want.out, kAtol, kRtol);
  CHECK(r.weights(0, 4) > 0.0f);  // query 0 reads the last token
}

TEST_CASE("cross-attention: keys and values from another sequence of length S != T") {
  const Matrix q = wiggly(3, 4, 0.8, 1.1, 0.2, 2.0);   // (T, hs) from x
  const Matrix k = wiggly(5, 4, 0.4, 2.3, -0.7, 2.0);  // (S, hs) from y
  const Matrix v = wiggly(5, 4, 1.9, 0.5, 0.4);        // (S, hs) from y
  const ByHand want = attention_by_hand(q, k, v, false);
  const ex04::AttentionResult r = ex04::single_head_attention(q, k, v, false);
  CHECK_TENSOR_NEAR(r.weights, want.weights, kAtol, kRtol);
  CHECK_TENSOR_NEAR(r.out, want.out, kAtol, kRtol);
}

TEST_CASE("a future token never changes a causal output") {
  const std::size_t T = 6;
  const Matrix q = wiggly(T, 4, 0.8, 1.1, 0.2, 2.0);
  Matrix k = wiggly(T, 4, 0.4, 2.3, -0.7, 2.0);
  Matrix v = wiggly(T, 4, 1.9, 0.5, 0.4);
  const ex04::AttentionResult before = ex04::single_head_attention(q, k, v, true);
  for (std::size_t j = 0; j < 4; ++j) {  // rewrite the last token's key and value
    k(T - 1, j) = 50.0f;
    v(T - 1, j) = -1000.0f;
  }
  const ex04::AttentionResult after = ex04::single_head_attention(q, k, v, true);
  CHECK_TENSOR_NEAR(first_rows(after.weights, T - 1), first_rows(before.weights, T - 1), 0.0, 0.0);
  CHECK_TENSOR_NEAR(first_rows(after.out, T - 1), first_rows(before.out, T - 1), 0.0, 0.0);
}

TEST_CASE("equal keys give chapter 02's uniform weights and the running mean of v") {
  // Every score of a row is the same, so the causal softmax is 1 / (t + 1) on keys 0..t.
  const std::size_t T = 5;
  const std::size_t hs = 3;
  const Matrix q = wiggly(T, hs, 0.8, 1.1, 0.2, 2.0);
  const Matrix k = xt::ones<float>({T, hs});
  const Matrix v = wiggly(T, hs, 1.9, 0.5, 0.4);
  Matrix weights = xt::zeros<float>({T, T});
  Matrix mean = xt::zeros<float>({T, hs});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t d = 0; d < hs; ++d) {
      double sum = 0.0;
      for (std::size_t s = 0; s <= t; ++s) {
        weights(t, s) = static_cast<float>(1.0 / static_cast<double>(t + 1));
        sum += static_cast<double>(v(s, d));
      }
      mean(t, d) = static_cast<float>(sum / static_cast<double>(t + 1));
    }
  const ex04::AttentionResult r = ex04::single_head_attention(q, k, v, true);
  CHECK_TENSOR_NEAR(r.weights, weights, 1e-6, 1e-6);
  CHECK_TENSOR_NEAR(r.out, mean, kAtol, kRtol);
}

TEST_CASE("shapes that do not fit together are rejected") {
  const Matrix q = wiggly(4, 3, 0.1, 0.2, 0.3);
  const Matrix k5 = wiggly(5, 3, 0.4, 0.5, 0.6);
  // q and k of different widths
  CHECK_THROWS_AS(ex04::single_head_attention(q, wiggly(4, 2, 0.1, 0.2, 0.3),
                                              wiggly(4, 2, 0.1, 0.2, 0.3), false),
                  std::invalid_argument);
  // 5 keys but 4 values
  CHECK_THROWS_AS(ex04::single_head_attention(q, k5, wiggly(4, 3, 0.7, 0.8, 0.9), false),
                  std::invalid_argument);
  // causal needs S == T: 4 queries, 5 keys
  CHECK_THROWS_AS(ex04::single_head_attention(q, k5, k5, true), std::invalid_argument);
}
}
