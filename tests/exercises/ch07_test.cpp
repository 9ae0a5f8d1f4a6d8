// Don't edit: these tests check your exercises.
// tests/exercises/ch07_test.cpp: chapter 07 (the causal language model, docs/07-causal-lm.md).
// Every expected value is worked out by hand, by a plain double-precision loop below, or as a
// frequency over many draws from a fixed seed; never by the attn:: function the reference
// solution forwards to. Run them with build/default/bin/attn-check 07.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attn/model/block.hpp"
#include "attn/model/model.hpp"
#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"
#include "exercises.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Matrix;
using attn::Tensor;
using Tokens = xt::xtensor<int, 2>;

// Tolerances for float results compared with double-precision loops.
constexpr double kAtol = 1e-5;
constexpr double kRtol = 1e-4;

// A fixed (R, K) matrix with no visible pattern: m(i, j) = amp * sin(a i + b j + phase).
Matrix wiggly(std::size_t R, std::size_t K, double a, double b, double phase, double amp = 1.0) {
  Matrix m({R, K});
  for (std::size_t i = 0; i < R; ++i)
    for (std::size_t j = 0; j < K; ++j)
      m(i, j) = static_cast<float>(
          amp * std::sin(a * static_cast<double>(i) + b * static_cast<double>(j) + phase));
  return m;
}

// The same for a (B, T, C) tensor.
Tensor<3> wiggly3(std::size_t B, std::size_t T, std::size_t C) {
  Tensor<3> x({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t c = 0; c < C; ++c)
        x(b, t, c) = static_cast<float>(std::cos(1.3 * static_cast<double>(b) +
                                                 0.7 * static_cast<double>(t) +
                                                 2.1 * static_cast<double>(c) + 0.4));
  return x;
}

// ---- A tiny model: V = 7, C = 8, H = 2, T_max = 6, with weights large enough (std 0.3) that
// the logits are of order one, and LayerNorm parameters that are not the identity.
attn::ModelSpec tiny_config(std::size_t n_layers) {
  attn::ModelChoices choices;
  choices.vocab_size = 7;
  choices.block_size = 6;
  choices.n_embd = 8;
  choices.n_heads = 2;
  choices.n_layers = n_layers;
  return attn::resolve_spec(choices);
}

attn::Vector wiggly_vector(std::size_t C, double phase, double offset) {
  attn::Vector v(attn::Vector::shape_type{C});
  for (std::size_t c = 0; c < C; ++c)
    v(c) = static_cast<float>(offset + 0.3 * std::sin(1.7 * static_cast<double>(c) + phase));
  return v;
}

attn::LmWeights tiny_weights(const attn::ModelSpec& config) {
  const std::size_t V = config.vocab_size, C = config.n_embd, T_max = config.block_size;
  attn::LmWeights w;
  w.wte = wiggly(V, C, 0.9, 2.3, 0.1, 0.3);
  w.wpe = wiggly(T_max, C, 1.9, 0.7, 1.2, 0.3);
  attn::Rng rng(7);
  for (std::size_t l = 0; l < config.n_layers; ++l) {
    attn::BlockWeights block = attn::block_init(rng, C, 4 * C);
    for (Matrix* m : {&block.attn.w_q, &block.attn.w_k, &block.attn.w_v, &block.attn.w_o,
                      &block.ffn.w1, &block.ffn.w2})
      *m *= 15.0f;  // std 0.02 -> 0.3
    block.ln1_gamma = wiggly_vector(C, 0.5, 1.0);
    block.ln1_beta = wiggly_vector(C, 1.5, 0.0);
    block.ln2_gamma = wiggly_vector(C, 2.5, 1.0);
    block.ln2_beta = wiggly_vector(C, 3.5, 0.0);
    w.blocks.push_back(block);
  }
  w.ln_f_gamma = wiggly_vector(C, 4.5, 1.0);
  w.ln_f_beta = wiggly_vector(C, 5.5, 0.1);
  return w;
}

// x[b, t] = wte[id] + wpe[t], written out.
Tensor<3> embed_by_hand(const Tokens& tokens, const attn::LmWeights& w) {
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1], C = w.wte.shape()[1];
  Tensor<3> x({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t c = 0; c < C; ++c)
        x(b, t, c) = w.wte(static_cast<std::size_t>(tokens(b, t)), c) + w.wpe(t, c);
  return x;
}

// logits = LayerNorm(x; ln_f) @ wte^T, in double: mean and biased variance over C, eps 1e-5.
Tensor<3> head_by_hand(const Tensor<3>& x, const attn::LmWeights& w) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  const std::size_t V = w.wte.shape()[0];
  Tensor<3> logits({B, T, V});
  std::vector<double> h(C);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      double mean = 0.0;
      for (std::size_t c = 0; c < C; ++c) mean += static_cast<double>(x(b, t, c));
      mean /= static_cast<double>(C);
      double var = 0.0;
      for (std::size_t c = 0; c < C; ++c) {
        const double d = static_cast<double>(x(b, t, c)) - mean;
        var += d * d;
      }
      var /= static_cast<double>(C);
      for (std::size_t c = 0; c < C; ++c)
        h[c] = (static_cast<double>(x(b, t, c)) - mean) / std::sqrt(var + 1e-5) *
                   static_cast<double>(w.ln_f_gamma(c)) +
               static_cast<double>(w.ln_f_beta(c));
      for (std::size_t v = 0; v < V; ++v) {
        double sum = 0.0;
        for (std::size_t c = 0; c < C; ++c) sum += h[c] * static_cast<double>(w.wte(v, c));
        logits(b, t, v) = static_cast<float>(sum);
      }
    }
  return logits;
}

// Fraction of `n` draws from ex07::sample_top_k that gave each id.
std::vector<double> frequencies(const std::vector<float>& logits, float temperature,
                                std::size_t top_k, std::size_t n, std::uint64_t seed) {
  attn::Rng rng(seed);
  std::vector<double> freq(logits.size(), 0.0);
  std::size_t out_of_range = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const int id = ex07::sample_top_k(logits, temperature, top_k, rng);
    if (id < 0 || static_cast<std::size_t>(id) >= logits.size()) {
      ++out_of_range;
      continue;
    }
    freq[static_cast<std::size_t>(id)] += 1.0 / static_cast<double>(n);
  }
  CHECK_MESSAGE(out_of_range == 0, "ids outside [0, V): " << out_of_range);
  return freq;
}

}  // namespace

TEST_SUITE("ex07.1 Token and position embedding") {
// wte rows 1, 10, 100 apart; wpe rows small and distinct, so every sum shows both parts.
const Matrix wte = {{1.0f, 2.0f}, {10.0f, 20.0f}, {100.0f, 200.0f}};  // (V, C) = (3, 2)
const Matrix wpe = {{0.125f, 0.25f}, {0.375f, 0.5f}, {0.625f, 0.75f}, {0.875f, 1.0f}};  // (4, 2)

TEST_CASE("each vector is the token's row plus the position's row") {
  const Tokens tokens = {{2, 0, 1}, {1, 1, 0}};  // (B, T) = (2, 3)
  const Tensor<3> want = {{{100.125f, 200.25f}, {1.375f, 2.5f}, {10.625f, 20.75f}},
                          {{10.125f, 20.25f}, {10.375f, 20.5f}, {1.625f, 2.75f}}};
  CHECK_TENSOR_NEAR(ex07::embed(tokens, wte, wpe), want, 1e-6, 1e-6);
}

TEST_CASE("the same token at two positions differs by the difference of the position rows") {
  const Tokens tokens = {{1, 2, 1, 1}};  // token 1 at positions 0, 2 and 3
  const Tensor<3> x = ex07::embed(tokens, wte, wpe);
  REQUIRE(x.shape()[2] == 2);
  for (std::size_t c = 0; c < 2; ++c) {
    CAPTURE(c);
    CHECK(x(0, 2, c) - x(0, 0, c) == doctest::Approx(wpe(2, c) - wpe(0, c)));
    CHECK(x(0, 3, c) - x(0, 2, c) == doctest::Approx(wpe(3, c) - wpe(2, c)));
  }
}

TEST_CASE("a sequence as long as the position table fits, one token more is rejected") {
  const Tensor<3> x = ex07::embed(Tokens{{0, 1, 2, 0}}, wte, wpe);  // T = T_max = 4
  CHECK(x.shape()[1] == 4);
  CHECK(x(0, 3, 1) == doctest::Approx(1.0 + 2.0));
  CHECK_THROWS_AS(ex07::embed(Tokens{{0, 1, 2, 0, 1}}, wte, wpe), std::invalid_argument);
}

TEST_CASE("a token outside the vocabulary is rejected") {
  CHECK_THROWS_AS(ex07::embed(Tokens{{0, 3}}, wte, wpe), std::invalid_argument);  // V = 3
  CHECK_THROWS_AS(ex07::embed(Tokens{{-1, 0}}, wte, wpe), std::invalid_argument);
}

TEST_CASE("tables of different widths are rejected") {
  const Matrix wpe3 = {{0.0f, 0.0f, 0.0f}, {1.0f, 1.0f, 1.0f}};  // (2, 3): C = 3, not 2
  CHECK_THROWS_AS(ex07::embed(Tokens{{0, 1}}, wte, wpe3), std::invalid_argument);
}
}

TEST_SUITE("ex07.2 Tied output projection") {
TEST_CASE("small inputs give the hand-computed logits") {
  // wte rows e0 = (1, 0), e1 = (0, 1), e2 = (1, 1): logit v = x . e_v
  const Tensor<3> x = {{{1.0f, 2.0f}, {3.0f, -1.0f}}};                 // (1, 2, 2)
  const Matrix wte = {{1.0f, 0.0f}, {0.0f, 1.0f}, {1.0f, 1.0f}};       // (3, 2)
  const Tensor<3> want = {{{1.0f, 2.0f, 3.0f}, {3.0f, -1.0f, 2.0f}}};  // (1, 2, 3)
  CHECK_TENSOR_NEAR(ex07::tied_logits(x, wte), want, 1e-6, 1e-6);
}

TEST_CASE("every logit is the dot product of a vector with one row of the embedding") {
  const std::size_t B = 2, T = 3, C = 5, V = 7;
  const Tensor<3> x = wiggly3(B, T, C);
  const Matrix wte = wiggly(V, C, 0.8, 1.9, 0.3);
  Tensor<3> want({B, T, V});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t v = 0; v < V; ++v) {
        double sum = 0.0;
        for (std::size_t c = 0; c < C; ++c)
          sum += static_cast<double>(x(b, t, c)) * static_cast<double>(wte(v, c));
        want(b, t, v) = static_cast<float>(sum);
      }
  CHECK_TENSOR_NEAR(ex07::tied_logits(x, wte), want, kAtol, kRtol);
}

TEST_CASE("a vector scores highest on the token whose row it is, when the rows are orthogonal") {
  // The rows of wte are orthonormal: feeding row 2 back in scores 1 for token 2, 0 elsewhere.
  const Matrix wte = {{1.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f}, {0.0f, 0.0f, 1.0f}};
  const Tensor<3> x = {{{0.0f, 0.0f, 1.0f}}};
  const Tensor<3> want = {{{0.0f, 0.0f, 1.0f}}};
  CHECK_TENSOR_NEAR(ex07::tied_logits(x, wte), want, 0.0, 0.0);
}

TEST_CASE("mismatched widths are rejected") {
  const Tensor<3> x = wiggly3(1, 2, 4);            // C = 4
  const Matrix wte = wiggly(5, 3, 0.1, 0.2, 0.3);  // C = 3
  CHECK_THROWS_AS(ex07::tied_logits(x, wte), std::invalid_argument);
}
}

TEST_SUITE("ex07.3 The decoder forward pass") {
TEST_CASE("with blocks adding nothing the logits are the final LayerNorm of embed times wte^T") {
  // A model has at least one block; with zero output projections (w_o, w2, b2) a pre-norm block
  // adds exactly 0 to the stream: the logits are those of the embeddings alone.
  const attn::ModelSpec config = tiny_config(1);
  attn::LmWeights w = tiny_weights(config);
  for (attn::BlockWeights& block : w.blocks) {
    block.attn.w_o.fill(0.0f);
    block.ffn.w2.fill(0.0f);
    block.ffn.b2.fill(0.0f);
  }
  const Tokens tokens = {{3, 0, 6, 6, 1}, {5, 2, 4, 0, 0}};  // (2, 5)
  const Tensor<3> want = head_by_hand(embed_by_hand(tokens, w), w);
  CHECK_TENSOR_NEAR(ex07::lm_forward(tokens, w, config), want, kAtol, kRtol);
}

TEST_CASE("with blocks the logits match the steps done one by one") {
  const attn::ModelSpec config = tiny_config(2);
  const attn::LmWeights w = tiny_weights(config);
  const Tokens tokens = {{1, 4, 4, 2, 0, 6}};  // T = T_max = 6
  attn::BlockConfig block_config;
  block_config.spec = config;  // its heads and GELU; causal, pre-norm, eps 1e-5 by default
  Tensor<3> x = embed_by_hand(tokens, w);
  for (const attn::BlockWeights& block : w.blocks)
    x = attn::block_forward(x, block, block_config).out;
  const Tensor<3> want = head_by_hand(x, w);
  CHECK_TENSOR_NEAR(ex07::lm_forward(tokens, w, config), want, 1e-4, 1e-4);
}

TEST_CASE("the logits at position t do not depend on the tokens after t") {
  const attn::ModelSpec config = tiny_config(2);
  const attn::LmWeights w = tiny_weights(config);
  const Tensor<3> a = ex07::lm_forward(Tokens{{2, 3, 5, 1, 0}}, w, config);
  const Tensor<3> b = ex07::lm_forward(Tokens{{2, 3, 5, 6, 4}}, w, config);  // last two differ
  REQUIRE(a.shape()[1] == 5);
  REQUIRE(b.shape()[1] == 5);
  const Tensor<3> a_past = xt::view(a, xt::all(), xt::range(0, 3), xt::all());
  const Tensor<3> b_past = xt::view(b, xt::all(), xt::range(0, 3), xt::all());
  CHECK_TENSOR_NEAR(a_past, b_past, 1e-6, 1e-6);
  double change = 0.0;  // while position 3 sees a different token, so its logits move
  for (std::size_t v = 0; v < 7; ++v)
    change += std::abs(static_cast<double>(a(0, 3, v)) - static_cast<double>(b(0, 3, v)));
  CHECK(change > 1e-3);
}

TEST_CASE("each sequence of a batch gets the logits it gets alone") {
  const attn::ModelSpec config = tiny_config(1);
  const attn::LmWeights w = tiny_weights(config);
  const Tensor<3> both = ex07::lm_forward(Tokens{{0, 1, 2}, {6, 5, 4}}, w, config);
  const Tensor<3> first = ex07::lm_forward(Tokens{{0, 1, 2}}, w, config);
  const Tensor<3> second = ex07::lm_forward(Tokens{{6, 5, 4}}, w, config);
  REQUIRE(both.shape()[0] == 2);
  CHECK_TENSOR_NEAR(Tensor<3>(xt::view(both, xt::range(0, 1), xt::all(), xt::all())), first, 1e-5,
                    1e-5);
  CHECK_TENSOR_NEAR(Tensor<3>(xt::view(both, xt::range(1, 2), xt::all(), xt::all())), second, 1e-5,
                    1e-5);
}

TEST_CASE("a sequence longer than the block size is rejected") {
  const attn::ModelSpec config = tiny_config(1);
  const attn::LmWeights w = tiny_weights(config);
  CHECK_THROWS_AS(ex07::lm_forward(Tokens{{0, 1, 2, 3, 4, 5, 6}}, w, config),  // T = 7 > 6
                  std::invalid_argument);
}
}

TEST_SUITE("ex07.4 Top-k sampling") {
// 20000 draws: the standard error of a frequency is below 0.0036, so 0.015 never flakes.
TEST_CASE("the draws follow the softmax renormalised over the k largest logits") {
  // logits log([4, 1, 5, 2, 3]), k = 3 keeps ids 2, 0, 4: probabilities 5, 4, 3 over 12.
  const std::vector<float> logits{std::log(4.0f), std::log(1.0f), std::log(5.0f), std::log(2.0f),
                                  std::log(3.0f)};
  const std::vector<double> freq = frequencies(logits, 1.0f, 3, 20000, 11);
  const std::vector<double> want{4.0 / 12, 0.0, 5.0 / 12, 0.0, 3.0 / 12};
  for (std::size_t j = 0; j < 5; ++j) {
    CAPTURE(j);
    CHECK(std::abs(freq[j] - want[j]) < 0.015);
  }
  CHECK(freq[1] == 0.0);  // outside the top 3: never drawn, not just rarely
  CHECK(freq[3] == 0.0);
}

TEST_CASE("the temperature divides the logits before the renormalisation") {
  // Temperature 1/2 squares the kept probabilities: 25, 16, 9 over 50.
  const std::vector<float> logits{std::log(4.0f), std::log(1.0f), std::log(5.0f), std::log(2.0f),
                                  std::log(3.0f)};
  const std::vector<double> freq = frequencies(logits, 0.5f, 3, 20000, 12);
  const std::vector<double> want{16.0 / 50, 0.0, 25.0 / 50, 0.0, 9.0 / 50};
  for (std::size_t j = 0; j < 5; ++j) {
    CAPTURE(j);
    CHECK(std::abs(freq[j] - want[j]) < 0.015);
  }
}

TEST_CASE("k equal to V is plain sampling from the softmax") {
  const std::vector<float> logits{std::log(1.0f), std::log(2.0f), std::log(3.0f), std::log(4.0f)};
  const std::vector<double> freq = frequencies(logits, 1.0f, 4, 20000, 13);
  const std::vector<double> want{0.1, 0.2, 0.3, 0.4};
  for (std::size_t j = 0; j < 4; ++j) {
    CAPTURE(j);
    CHECK(std::abs(freq[j] - want[j]) < 0.015);
  }
}

TEST_CASE("k equal to one always picks the largest logit") {
  const std::vector<float> logits{0.3f, 2.0f, -1.0f, 1.9f};
  const std::vector<double> freq = frequencies(logits, 1.0f, 1, 500, 14);
  CHECK(freq[1] == doctest::Approx(1.0));
}

TEST_CASE("on a tie the lower id is kept") {
  // Three equal logits, k = 2: ids 0 and 2 are kept (the lower two of 0, 2, 3), half each.
  const std::vector<float> logits{1.0f, 0.0f, 1.0f, 1.0f};
  const std::vector<double> freq = frequencies(logits, 1.0f, 2, 20000, 15);
  CHECK(std::abs(freq[0] - 0.5) < 0.015);
  CHECK(std::abs(freq[2] - 0.5) < 0.015);
  CHECK(freq[3] == 0.0);
  CHECK(freq[1] == 0.0);
}

TEST_CASE("a tiny temperature picks the largest kept logit without overflow") {
  // 2.0 / 0.001 = 2000: exp(2000) overflows unless the maximum is subtracted first.
  const std::vector<float> logits{0.5f, 2.0f, 1.9f, -1.0f};
  const std::vector<double> freq = frequencies(logits, 1e-3f, 3, 1000, 16);
  CHECK(freq[1] == doctest::Approx(1.0));
}

TEST_CASE("the same seed gives the same draws") {
  const std::vector<float> logits{0.1f, 0.7f, -0.3f, 0.4f, 0.2f, 0.0f};
  attn::Rng first(42), second(42);
  std::vector<int> a, b;
  for (int i = 0; i < 200; ++i) {
    a.push_back(ex07::sample_top_k(logits, 0.8f, 4, first));
    b.push_back(ex07::sample_top_k(logits, 0.8f, 4, second));
  }
  CHECK(a == b);
}

TEST_CASE("a top_k of 0 or above V is rejected") {
  const std::vector<float> logits{0.1f, 0.2f, 0.3f, 0.4f};  // V = 4
  attn::Rng rng(1);
  CHECK_THROWS_AS(ex07::sample_top_k(logits, 1.0f, 0, rng), std::invalid_argument);
  CHECK_THROWS_AS(ex07::sample_top_k(logits, 1.0f, 5, rng), std::invalid_argument);
}

TEST_CASE("a temperature that is not a positive number is rejected") {
  const std::vector<float> logits{0.1f, 0.2f, 0.3f, 0.4f};
  attn::Rng rng(1);
  CHECK_THROWS_AS(ex07::sample_top_k(logits, 0.0f, 2, rng), std::invalid_argument);
  CHECK_THROWS_AS(ex07::sample_top_k(logits, -1.0f, 2, rng), std::invalid_argument);
  CHECK_THROWS_AS(ex07::sample_top_k(logits, std::numeric_limits<float>::quiet_NaN(), 2, rng),
                  std::invalid_argument);
}
}
