// Don't edit: these tests check your exercises.
// tests/exercises/ch10_test.cpp: chapter 10 (generating fast with a KV cache,
// docs/10-generation.md). Expected values come from hand-made caches, plain double-precision
// loops, or attn::lm_generate (the loop without a cache), never from the attn:: function the
// reference solution forwards to. Run them with build/default/bin/attn-check 10.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/model/block.hpp"
#include "attn/model/kvcache.hpp"
#include "attn/model/model.hpp"
#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"
#include "exercises.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Matrix;
using attn::Tensor;

constexpr float kSentinel = -7.25f;  // what an untouched cache entry holds

Tensor<4> sentinel_cache(std::size_t B, std::size_t H, std::size_t T_max, std::size_t hs) {
  Tensor<4> cache(std::array<std::size_t, 4>{B, H, T_max, hs});
  cache.fill(kSentinel);
  return cache;
}

// A (R, K) matrix with no visible pattern: m(i, j) = amp * sin(a i + b j + phase).
Matrix wiggly(std::size_t R, std::size_t K, double a, double b, double phase, double amp = 1.0) {
  Matrix m(std::array<std::size_t, 2>{R, K});
  for (std::size_t i = 0; i < R; ++i)
    for (std::size_t j = 0; j < K; ++j)
      m(i, j) = static_cast<float>(
          amp * std::sin(a * static_cast<double>(i) + b * static_cast<double>(j) + phase));
  return m;
}

// A cache whose first n positions hold wiggly numbers and whose others hold NaN: a solution
// that reads past n returns NaN somewhere.
Tensor<4> filled_cache(std::size_t B, std::size_t H, std::size_t T_max, std::size_t hs,
                       std::size_t n, double phase) {
  Tensor<4> cache(std::array<std::size_t, 4>{B, H, T_max, hs});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T_max; ++t)
        for (std::size_t j = 0; j < hs; ++j)
          cache(b, h, t, j) =
              t < n ? static_cast<float>(1.3 * std::sin(0.7 * static_cast<double>(b) +
                                                        1.1 * static_cast<double>(h) +
                                                        0.9 * static_cast<double>(t) +
                                                        2.3 * static_cast<double>(j) + phase))
                    : std::numeric_limits<float>::quiet_NaN();
  return cache;
}

// The attention of one query per (b, h) over n keys, in double.
Matrix attend_by_hand(const Matrix& q, const Tensor<4>& keys, const Tensor<4>& values,
                      std::size_t n) {
  const std::size_t B = keys.shape()[0], H = keys.shape()[1], hs = keys.shape()[3];
  Matrix out(std::array<std::size_t, 2>{B, H * hs});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h) {
      std::vector<double> s(n);
      double m = -std::numeric_limits<double>::infinity();
      for (std::size_t t = 0; t < n; ++t) {
        double dot = 0.0;
        for (std::size_t j = 0; j < hs; ++j)
          dot += static_cast<double>(q(b, h * hs + j)) * static_cast<double>(keys(b, h, t, j));
        s[t] = dot / std::sqrt(static_cast<double>(hs));
        m = std::max(m, s[t]);
      }
      double z = 0.0;
      for (double& v : s) z += (v = std::exp(v - m));
      for (std::size_t j = 0; j < hs; ++j) {
        double acc = 0.0;
        for (std::size_t t = 0; t < n; ++t)
          acc += s[t] / z * static_cast<double>(values(b, h, t, j));
        out(b, h * hs + j) = static_cast<float>(acc);
      }
    }
  return out;
}

// ---- A tiny model for the generation loop: V = 7, T_max = 6, C = 8, H = 2, 2 layers, with
// weights large enough (std 0.3, 0.5 tables) that the distributions are far from uniform.
attn::ModelChoices tiny_choices() {
  attn::ModelChoices choices;
  choices.vocab_size = 7;
  choices.block_size = 6;
  choices.n_embd = 8;
  choices.n_heads = 2;
  choices.n_layers = 2;
  return choices;
}
attn::ModelSpec tiny_config() { return attn::resolve_spec(tiny_choices()); }

attn::LmWeights tiny_weights(const attn::ModelSpec& config, std::uint64_t seed) {
  attn::Rng rng(seed);
  attn::LmWeights w = attn::lm_init(rng, config);
  w.wte = attn::randn(rng, config.vocab_size, config.n_embd, 0.5f);
  w.wpe = attn::randn(rng, config.block_size, config.n_embd, 0.5f);
  for (attn::BlockWeights& b : w.blocks)
    for (Matrix* m : {&b.attn.w_q, &b.attn.w_k, &b.attn.w_v, &b.attn.w_o, &b.ffn.w1, &b.ffn.w2})
      *m *= 15.0f;  // std 0.02 -> 0.3
  return w;
}

std::vector<int> generate(const attn::LmWeights& w, const attn::ModelSpec& config,
                          const std::vector<int>& prompt, const attn::GenerateOptions& o,
                          std::uint64_t seed, bool cached) {
  attn::Rng rng(seed);
  if (!cached) return attn::lm_generate(w, config, prompt, o, rng);
  attn::KvCache cache = attn::kv_cache_init(config, 1);
  return ex10::generate_cached(cache, w, config, prompt, o, rng, {});
}

// Tokens in words: "[3, 1, 4]".
std::string tokens_text(const std::vector<int>& tokens) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < tokens.size(); ++i) out << (i ? ", " : "") << tokens[i];
  out << "]";
  return out.str();
}

// Fails, in words, at the first token where `got` (the cached loop) differs from `want`.
void check_same_tokens(const std::vector<int>& got, const std::vector<int>& want,
                       const std::string& expected_from) {
  if (got == want) return;
  std::size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  if (got.size() != want.size() && i == std::min(got.size(), want.size())) {
    FAIL_CHECK("expected " << want.size() << " new tokens (" << expected_from << "), got "
                           << got.size() << ": " << tokens_text(got));
    return;
  }
  FAIL_CHECK("new token " << i + 1 << " of " << want.size() << " differs: got " << got[i]
                          << ", expected " << want[i] << " (" << expected_from << "); got "
                          << tokens_text(got) << ", expected " << tokens_text(want));
}

// The positions a cached loop pushes through the model, worked out from the rule of the
// exercise: a prefill of the (cropped) prompt, then for every token but the last one position
// (a step) while the cache has room, T_max (a re-fill) once it is full.
std::uint64_t positions_of_cached_loop(std::size_t prompt, std::size_t new_tokens,
                                       std::size_t T_max) {
  if (new_tokens == 0) return 0;
  std::size_t length = std::min(prompt, T_max);
  std::uint64_t positions = length;
  for (std::size_t i = 1; i < new_tokens; ++i) {
    if (length < T_max) {
      positions += 1;
      ++length;
    } else {
      positions += T_max;
    }
  }
  return positions;
}

}  // namespace

TEST_SUITE("ex10.1 Append to the cache") {
TEST_CASE("each head of each row lands at its position, and nothing else changes" *
          doctest::description("hint 1")) {
  Tensor<4> cache = sentinel_cache(2, 3, 4, 2);  // B 2, H 3, T_max 4, hs 2
  const Matrix rows = wiggly(2, 6, 0.8, 1.9, 0.3);
  ex10::kv_append(cache, rows, 2);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t h = 0; h < 3; ++h)
      for (std::size_t t = 0; t < 4; ++t)
        for (std::size_t j = 0; j < 2; ++j) {
          CAPTURE(b);
          CAPTURE(h);
          CAPTURE(t);
          CAPTURE(j);
          CHECK(cache(b, h, t, j) == (t == 2 ? rows(b, h * 2 + j) : kSentinel));
        }
}

TEST_CASE("appending position after position fills the cache in order" *
          doctest::description("hint 1")) {
  Tensor<4> cache = sentinel_cache(1, 2, 3, 2);
  for (std::size_t t = 0; t < 3; ++t) {
    Matrix row(std::array<std::size_t, 2>{1, 4});
    for (std::size_t c = 0; c < 4; ++c) row(0, c) = static_cast<float>(10 * t + c);
    ex10::kv_append(cache, row, t);
  }
  // Head 0 holds columns 0 and 1, head 1 columns 2 and 3.
  CHECK(cache(0, 0, 0, 0) == 0.0f);
  CHECK(cache(0, 0, 1, 1) == 11.0f);
  CHECK(cache(0, 1, 2, 0) == 22.0f);
  CHECK(cache(0, 1, 2, 1) == 23.0f);
  CHECK(cache(0, 1, 0, 1) == 3.0f);
}

TEST_CASE("a position at or past T_max is rejected" * doctest::description("hint 2")) {
  Tensor<4> cache = sentinel_cache(1, 2, 3, 2);
  const Matrix row = wiggly(1, 4, 0.5, 0.5, 0.0);
  CHECK_THROWS_AS(ex10::kv_append(cache, row, 3), std::invalid_argument);
  CHECK_THROWS_AS(ex10::kv_append(cache, row, 100), std::invalid_argument);
}

TEST_CASE("rows of the wrong width or batch are rejected" * doctest::description("hint 2")) {
  Tensor<4> cache = sentinel_cache(2, 2, 3, 2);
  CHECK_THROWS_AS(ex10::kv_append(cache, wiggly(2, 5, 0.5, 0.5, 0.0), 0), std::invalid_argument);
  CHECK_THROWS_AS(ex10::kv_append(cache, wiggly(1, 4, 0.5, 0.5, 0.0), 0), std::invalid_argument);
}
}

TEST_SUITE("ex10.2 One query over the cache") {
TEST_CASE("with a single cached position the output is its value" *
          doctest::description("hint 1")) {
  const Tensor<4> keys = filled_cache(1, 2, 4, 3, 1, 0.2);
  const Tensor<4> values = filled_cache(1, 2, 4, 3, 1, 1.7);
  const Matrix out = ex10::attend_cache(wiggly(1, 6, 0.4, 1.2, 0.9, 3.0), keys, values, 1);
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t j = 0; j < 3; ++j)
      CHECK(out(0, h * 3 + j) == doctest::Approx(values(0, h, 0, j)));
}

TEST_CASE("the output matches a double-precision loop, never reading past n" *
          doctest::description("hint 1")) {
  for (const std::size_t n : {std::size_t{2}, std::size_t{5}, std::size_t{7}}) {
    CAPTURE(n);
    const Tensor<4> keys = filled_cache(2, 3, 7, 4, n, 0.3);
    const Tensor<4> values = filled_cache(2, 3, 7, 4, n, 2.1);
    const Matrix q = wiggly(2, 12, 0.6, 1.3, 0.4, 2.0);
    CHECK_TENSOR_NEAR(ex10::attend_cache(q, keys, values, n), attend_by_hand(q, keys, values, n),
                      1e-5, 1e-4);
  }
}

TEST_CASE("the scores are scaled by 1/sqrt(hs)" * doctest::description("hint 2")) {
  // hs = 4, one head: q . k0 = 4, q . k1 = 0, so the weights are softmax([4/2, 0]).
  Tensor<4> keys(std::array<std::size_t, 4>{1, 1, 2, 4});
  keys.fill(0.0f);
  keys(0, 0, 0, 0) = 1.0f;
  Tensor<4> values(std::array<std::size_t, 4>{1, 1, 2, 4});
  values.fill(0.0f);
  values(0, 0, 0, 0) = 1.0f;  // the output's first feature is the weight of position 0
  Matrix q(std::array<std::size_t, 2>{1, 4});
  q.fill(0.0f);
  q(0, 0) = 4.0f;
  const Matrix out = ex10::attend_cache(q, keys, values, 2);
  CHECK(out(0, 0) == doctest::Approx(std::exp(2.0) / (std::exp(2.0) + 1.0)).epsilon(1e-6));
}

TEST_CASE("equal keys give the mean of the values, and huge scores do not overflow" *
          doctest::description("hint 2")) {
  Tensor<4> keys(std::array<std::size_t, 4>{1, 1, 3, 2});
  keys.fill(30.0f);  // q . k = 2 * 30 * 30 = 1800 for every position
  const Tensor<4> values = filled_cache(1, 1, 3, 2, 3, 0.5);
  Matrix q(std::array<std::size_t, 2>{1, 2});
  q.fill(30.0f);
  const Matrix out = ex10::attend_cache(q, keys, values, 3);
  for (std::size_t j = 0; j < 2; ++j) {
    const double mean =
        (static_cast<double>(values(0, 0, 0, j)) + static_cast<double>(values(0, 0, 1, j)) +
         static_cast<double>(values(0, 0, 2, j))) /
        3.0;
    CHECK(std::isfinite(out(0, j)));
    CHECK(out(0, j) == doctest::Approx(mean).epsilon(1e-5));
  }
}

TEST_CASE("all-negative scores still give a softmax (a max started at 0 gives 0/0)" *
          doctest::description("hint 2")) {
  // q . k is about -1270 for every position: exp(s) underflows to 0 unless the row's own max is
  // subtracted first.
  Tensor<4> keys = filled_cache(1, 2, 4, 2, 4, 0.4);
  keys += 30.0f;
  const Tensor<4> values = filled_cache(1, 2, 4, 2, 4, 1.1);
  Matrix q(std::array<std::size_t, 2>{1, 4});
  q.fill(-30.0f);
  q(0, 1) = -31.0f;
  const Matrix out = ex10::attend_cache(q, keys, values, 4);
  INFO("every score is below -1200: the weights are softmax(s - max s), not exp(s) / sum exp(s)");
  CHECK_TENSOR_NEAR(out, attend_by_hand(q, keys, values, 4), 1e-5, 1e-4);
}

TEST_CASE("unfilled positions holding large finite numbers are never read" *
          doctest::description("hint 1")) {
  // Positions n..T_max-1 hold keys of 100 and values of 1e6: a max (or a sum) taken over the
  // whole buffer instead of the first n positions changes the output.
  for (const std::size_t n : {std::size_t{1}, std::size_t{3}}) {
    CAPTURE(n);
    Tensor<4> keys = filled_cache(2, 2, 5, 3, n, 0.8);
    Tensor<4> values = filled_cache(2, 2, 5, 3, n, 2.9);
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t t = n; t < 5; ++t)
          for (std::size_t j = 0; j < 3; ++j) {
            keys(b, h, t, j) = 100.0f;
            values(b, h, t, j) = 1e6f;
          }
    Matrix q = wiggly(2, 6, 0.3, 0.7, 0.2, 0.5);
    q += 1.0f;  // every q_j > 0: the unfilled keys would win any max
    CHECK_TENSOR_NEAR(ex10::attend_cache(q, keys, values, n), attend_by_hand(q, keys, values, n),
                      1e-5, 1e-4);
  }
}

TEST_CASE("n = 0, n above T_max and mismatched shapes are rejected" *
          doctest::description("hint 2")) {
  const Tensor<4> keys = filled_cache(1, 2, 4, 3, 4, 0.1);
  const Matrix q = wiggly(1, 6, 0.4, 1.2, 0.9);
  CHECK_THROWS_AS(ex10::attend_cache(q, keys, keys, 0), std::invalid_argument);
  CHECK_THROWS_AS(ex10::attend_cache(q, keys, keys, 5), std::invalid_argument);
  CHECK_THROWS_AS(ex10::attend_cache(wiggly(1, 5, 0.4, 1.2, 0.9), keys, keys, 2),
                  std::invalid_argument);
  CHECK_THROWS_AS(ex10::attend_cache(q, keys, filled_cache(1, 2, 5, 3, 4, 0.1), 2),
                  std::invalid_argument);
}

TEST_CASE("a query batch that differs from the cache's is rejected" *
          doctest::description("hint 2")) {
  // q holds 2 sequences, the caches 1 (and the other way round): whichever batch the loop takes,
  // one side has no row for it.
  const Tensor<4> keys = filled_cache(1, 2, 4, 3, 4, 0.1);
  CHECK_THROWS_AS(ex10::attend_cache(wiggly(2, 6, 0.4, 1.2, 0.9), keys, keys, 2),
                  std::invalid_argument);
  const Tensor<4> keys2 = filled_cache(2, 2, 4, 3, 4, 0.1);
  CHECK_THROWS_AS(ex10::attend_cache(wiggly(1, 6, 0.4, 1.2, 0.9), keys2, keys2, 2),
                  std::invalid_argument);
  CHECK_THROWS_AS(
      ex10::attend_cache(wiggly(2, 6, 0.4, 1.2, 0.9), keys2, filled_cache(1, 2, 4, 3, 4, 0.1), 2),
      std::invalid_argument);
}
}

TEST_SUITE("ex10.3 The generation loop with prefill") {
TEST_CASE("sampled tokens equal lm_generate's, from a short prompt to well past T_max" *
          doctest::description("hint 1")) {
  const attn::ModelSpec config = tiny_config();
  for (const std::uint64_t seed : {1u, 2u, 3u}) {
    const attn::LmWeights w = tiny_weights(config, seed);
    attn::GenerateOptions o;
    o.max_new_tokens = 25;  // T_max = 6: most tokens need a re-fill
    CAPTURE(seed);
    check_same_tokens(generate(w, config, {1, 4}, o, seed, true),
                      generate(w, config, {1, 4}, o, seed, false),
                      "lm_generate's, prompt [1, 4], 25 tokens, T_max 6");
  }
}

TEST_CASE("greedy decoding from a prompt longer than T_max gives lm_generate's tokens" *
          doctest::description("hint 1")) {
  const attn::ModelSpec config = tiny_config();
  const attn::LmWeights w = tiny_weights(config, 9);
  attn::GenerateOptions o;
  o.max_new_tokens = 12;
  o.greedy = true;
  const std::vector<int> prompt = {6, 5, 4, 3, 2, 1, 0, 1, 2};
  check_same_tokens(generate(w, config, prompt, o, 4, true),
                    generate(w, config, prompt, o, 4, false),
                    "lm_generate's, greedy, a 9-token prompt cropped to T_max 6");
}

TEST_CASE("temperature, top-k and top-p are honoured as lm_generate honours them" *
          doctest::description("hint 2")) {
  const attn::ModelSpec config = tiny_config();
  const attn::LmWeights w = tiny_weights(config, 11);
  attn::GenerateOptions o;
  o.max_new_tokens = 20;
  o.temperature = 0.7f;
  o.top_k = 4;
  o.top_p = 0.8f;
  for (const std::vector<int>& prompt : {std::vector<int>{3}, std::vector<int>{1, 2, 3, 4, 5, 6}}) {
    check_same_tokens(
        generate(w, config, prompt, o, 5, true), generate(w, config, prompt, o, 5, false),
        "lm_generate's with temperature 0.7, top-k 4, top-p 0.8, prompt " + tokens_text(prompt));
  }
}

TEST_CASE("on_token sees every new token, in order, as it is drawn" *
          doctest::description("hint 2")) {
  const attn::ModelSpec config = tiny_config();
  const attn::LmWeights w = tiny_weights(config, 12);
  attn::GenerateOptions o;
  o.max_new_tokens = 10;
  std::vector<int> seen;
  attn::Rng rng(8);
  attn::KvCache cache = attn::kv_cache_init(config, 1);
  const std::vector<int> got = ex10::generate_cached(cache, w, config, std::vector<int>{2}, o, rng,
                                                     [&seen](int t) { seen.push_back(t); });
  CHECK(got.size() == 10);
  check_same_tokens(seen, got, "on_token called once per returned token, in order");
}

// The work the handed cache did, in words, and the mistake it points to when it is not the
// cached loop's: an idle cache (a cache of the loop's own, or no cache at all), or a prefill of
// the whole context for every token.
void check_cache_work(const attn::KvWork& work, std::size_t prompt, std::size_t tokens,
                      std::size_t T_max) {
  const std::uint64_t want = positions_of_cached_loop(prompt, tokens, T_max);
  INFO("prompt of " << prompt << " tokens, " << tokens << " new tokens, T_max " << T_max
                    << ": expected " << want << " positions in the cache you were handed; it"
                    << " computed " << work.positions << " in " << work.prefills << " prefills and "
                    << work.steps << " steps");
  if (work.positions == 0) {
    FAIL_CHECK(
        "the cache you were handed did no work: your loop generates through a cache of "
        "its own (a fresh one per token?) or none at all (lm_generate); call "
        "attn::lm_prefill and attn::lm_step on `cache`");
    return;
  }
  if (work.steps == 0 && work.prefills > 1) {
    FAIL_CHECK(
        "every token was a prefill and none a step: your loop prefills the whole context "
        "again for every token; while the cache has room, attn::lm_step adds one "
        "position");
  }
  CHECK(work.positions == want);
}

TEST_CASE("the cache is used: one position per new token while it has room" *
          doctest::description("hint 2")) {
  // The positions the model computes, counted by the cache handed to the loop (cache.work): a
  // prefill of the prompt, one step per token; a loop that runs the whole context again for
  // every token gives the same tokens at many times the work, and a loop that makes its own
  // caches leaves the handed one idle.
  const attn::ModelSpec config = [] {
    attn::ModelChoices c = tiny_choices();
    c.block_size = 40;
    return attn::resolve_spec(c);
  }();
  const attn::LmWeights w = tiny_weights(config, 21);
  struct Run {
    std::vector<int> prompt;
    std::size_t tokens;
  };
  for (const Run& run : {Run{{3}, 20}, Run{{1, 2, 3, 4, 5, 6, 0, 1}, 12}, Run{{2, 5}, 1}}) {
    attn::GenerateOptions o;
    o.max_new_tokens = run.tokens;
    attn::Rng rng(3);
    attn::KvCache cache = attn::kv_cache_init(config, 1);
    const std::vector<int> got = ex10::generate_cached(cache, w, config, run.prompt, o, rng, {});
    CHECK(got.size() == run.tokens);
    check_cache_work(cache.work, run.prompt.size(), run.tokens, 40);
    CHECK(cache.work.prefills == 1);
  }
}

TEST_CASE("past T_max the cache is re-filled once per token, from the cropped context" *
          doctest::description("hint 1")) {
  const attn::ModelSpec config = tiny_config();  // T_max 6
  const attn::LmWeights w = tiny_weights(config, 22);
  attn::GenerateOptions o;
  o.max_new_tokens = 9;
  attn::Rng rng(4);
  attn::KvCache cache = attn::kv_cache_init(config, 1);
  ex10::generate_cached(cache, w, config, std::vector<int>{1, 2, 3}, o, rng, {});
  // 3 (prefill) + 3 steps (positions 3, 4, 5) + 5 re-fills of 6 positions.
  INFO("expected 1 prefill, 3 steps and 5 re-fills");
  check_cache_work(cache.work, 3, 9, 6);
  CHECK(cache.work.steps == 3);
  CHECK(cache.work.prefills == 6);
}

TEST_CASE("no new tokens gives nothing; an empty prompt is rejected" *
          doctest::description("hint 2")) {
  const attn::ModelSpec config = tiny_config();
  const attn::LmWeights w = tiny_weights(config, 13);
  attn::GenerateOptions o;
  o.max_new_tokens = 0;
  attn::Rng rng(1);
  attn::KvCache cache = attn::kv_cache_init(config, 1);
  CHECK(ex10::generate_cached(cache, w, config, std::vector<int>{1}, o, rng, {}).empty());
  o.max_new_tokens = 3;
  CHECK_THROWS_AS(ex10::generate_cached(cache, w, config, std::vector<int>{}, o, rng, {}),
                  std::invalid_argument);
}
}

TEST_SUITE("ex10.4 The top-p cut") {

// Checks every id of `got` against `want`, in words.
void check_probs(const std::vector<float>& got, const std::vector<double>& want,
                 const std::string& what) {
  INFO(what);
  REQUIRE_MESSAGE(got.size() == want.size(),
                  "expected " << want.size() << " probabilities (one per id), got " << got.size());
  for (std::size_t v = 0; v < want.size(); ++v) {
    // A cut id is exactly 0; a kept one its renormalised probability.
    const bool ok = want[v] == 0.0
                        ? got[v] == 0.0f
                        : std::abs(static_cast<double>(got[v]) - want[v]) <= 1e-6 * want[v];
    if (!ok) FAIL_CHECK("id " << v << ": expected " << want[v] << ", got " << got[v]);
  }
}

TEST_CASE("the nucleus, worked by hand, stays in the order of the ids" *
          doctest::description("hint 1")) {
  // Ranked: id 1 (0.4), id 3 (0.3), id 2 (0.2), id 0 (0.1). 0.4 < 0.5, 0.4 + 0.3 >= 0.5: ids 1
  // and 3, renormalised by 0.7.
  const std::vector<float> probs = {0.1f, 0.4f, 0.2f, 0.3f};
  check_probs(ex10::top_p_filter(probs, 0.5f), {0.0, 0.4 / 0.7, 0.0, 0.3 / 0.7},
              "probs (0.1, 0.4, 0.2, 0.3), top_p 0.5: ids 1 and 3 kept");
  check_probs(ex10::top_p_filter(probs, 0.8f), {0.0, 0.4 / 0.9, 0.2 / 0.9, 0.3 / 0.9},
              "probs (0.1, 0.4, 0.2, 0.3), top_p 0.8: ids 1, 3 and 2 kept");
}

TEST_CASE("a mass that reaches top_p exactly stops there: the fewest ids" *
          doctest::description("hint 2")) {
  const std::vector<float> probs = {0.25f, 0.5f, 0.125f, 0.125f};  // exact in binary
  check_probs(ex10::top_p_filter(probs, 0.5f), {0.0, 1.0, 0.0, 0.0},
              "probs (0.25, 0.5, 0.125, 0.125), top_p 0.5: id 1 alone reaches 0.5");
  check_probs(ex10::top_p_filter(probs, 0.75f), {1.0 / 3.0, 2.0 / 3.0, 0.0, 0.0},
              "top_p 0.75: ids 1 and 0 reach 0.75 exactly");
}

TEST_CASE("equal probabilities: the lower id is kept first" * doctest::description("hint 2")) {
  const std::vector<float> probs = {0.125f, 0.25f, 0.25f, 0.25f, 0.125f};
  check_probs(ex10::top_p_filter(probs, 0.5f), {0.0, 0.5, 0.5, 0.0, 0.0},
              "probs (0.125, 0.25, 0.25, 0.25, 0.125), top_p 0.5: ids 1 and 2 (not 3)");
  check_probs(ex10::top_p_filter(probs, 0.8f), {1.0 / 7.0, 2.0 / 7.0, 2.0 / 7.0, 2.0 / 7.0, 0.0},
              "top_p 0.8: ids 1, 2, 3, then id 0 (not 4)");
}

TEST_CASE("the most likely id is always kept, top_p = 1 keeps every id" *
          doctest::description("hint 1")) {
  const std::vector<float> probs = {0.2f, 0.7f, 0.1f};
  check_probs(ex10::top_p_filter(probs, 1e-6f), {0.0, 1.0, 0.0},
              "probs (0.2, 0.7, 0.1), top_p 1e-6: the most likely id alone");
  check_probs(ex10::top_p_filter(probs, 0.6f), {0.0, 1.0, 0.0},
              "top_p 0.6, below the most likely id's 0.7: that id alone");
  check_probs(ex10::top_p_filter(probs, 1.0f), {0.2, 0.7, 0.1}, "top_p 1: every id, unchanged");
}

TEST_CASE("the result is a distribution: the kept ids renormalised to sum to 1" *
          doctest::description("hint 3")) {
  // A 40-id softmax-like distribution, sorted nowhere.
  std::vector<double> e(40);
  double z = 0.0;
  for (std::size_t v = 0; v < e.size(); ++v)
    z += (e[v] = std::exp(2.5 * std::sin(1.7 * static_cast<double>(v))));
  std::vector<float> probs(e.size());
  for (std::size_t v = 0; v < e.size(); ++v) probs[v] = static_cast<float>(e[v] / z);
  for (const float top_p : {0.3f, 0.9f}) {
    CAPTURE(top_p);
    const std::vector<float> got = ex10::top_p_filter(probs, top_p);
    REQUIRE(got.size() == probs.size());
    double sum = 0.0, kept_before = 0.0;
    for (std::size_t v = 0; v < got.size(); ++v) {
      sum += static_cast<double>(got[v]);
      if (got[v] > 0.0f) kept_before += static_cast<double>(probs[v]);
    }
    INFO("the kept ids held " << kept_before << " of the mass before the cut");
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
    CHECK(kept_before >= static_cast<double>(top_p) - 1e-6);
  }
}

TEST_CASE("the mass is added up in double: a float running sum stops at the wrong id" *
          doctest::description("hint 2")) {
  // id 0 holds 0.5, then 2000 ids hold 0.5 / 2000 each. Added up in float, each of the 2000
  // additions near 0.5 .. 1 rounds by up to 3e-8 and the errors pile up the same way; top_p is
  // put between the float running sum and the exact one, so a float sum stops one id off.
  const std::size_t n = 2000;
  std::vector<float> probs(n + 1, static_cast<float>(0.5 / static_cast<double>(n)));
  probs[0] = 0.5f;
  float top_p = 0.0f;
  std::size_t keep = 0;  // the fewest ids whose exact mass reaches top_p
  float mass_f = probs[0];
  double mass_d = static_cast<double>(probs[0]);
  for (std::size_t k = 2; k <= n && keep == 0; ++k) {
    mass_f += probs[k - 1];
    mass_d += static_cast<double>(probs[k - 1]);
    const double gap = static_cast<double>(mass_f) - mass_d;
    if (gap > 0.0) {  // float reaches top_p = mass_f after k ids, the exact sum after k + 1
      top_p = mass_f;
      keep = k + 1;
    } else if (gap < 0.0) {  // exact reaches top_p after k ids, float needs more
      const float up = std::nextafter(mass_f, 1.0f);
      if (static_cast<double>(up) <= mass_d) {
        top_p = up;
        keep = k;
      }
    }
  }
  REQUIRE_MESSAGE(keep != 0, "the test found no top_p where float and double disagree");
  double kept_mass = 0.0;
  for (std::size_t v = 0; v < keep; ++v) kept_mass += static_cast<double>(probs[v]);
  std::vector<double> want(n + 1, 0.0);
  for (std::size_t v = 0; v < keep; ++v) want[v] = static_cast<double>(probs[v]) / kept_mass;
  const std::vector<float> got = ex10::top_p_filter(probs, top_p);
  std::size_t kept = 0;
  for (const float g : got) kept += g > 0.0f ? 1 : 0;
  INFO("top_p " << top_p << " over 1 id of 0.5 and " << n << " of " << probs[1]
                << ": the exact mass first reaches it with " << keep << " ids; kept " << kept
                << ". Add the probabilities up in double");
  check_probs(got, want, "the nucleus found with the mass added up in double");
}

TEST_CASE("empty probs and top_p outside (0, 1] are rejected" * doctest::description("hint 2")) {
  const std::vector<float> probs = {0.5f, 0.5f};
  for (const float bad : {0.0f, -0.5f, 1.01f, std::numeric_limits<float>::quiet_NaN()}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(ex10::top_p_filter(probs, bad), std::invalid_argument);
  }
  CHECK_THROWS_AS(ex10::top_p_filter(std::vector<float>{}, 0.5f), std::invalid_argument);
}

}  // TEST_SUITE
