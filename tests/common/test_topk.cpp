// Tests for attn::sample_top_k (attn/model/sample.hpp): top-k sampling for generation (chapter 07).
// Statistical checks use a fixed seed and bounds of several standard errors, so they are
// deterministic and far from flaky.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/model/sample.hpp"

TEST_SUITE("topk") {

TEST_CASE("k = 1 always returns the argmax") {
  const std::vector<float> logits = {0.5f, -1.0f, 2.5f, 2.4f, 0.0f};
  attn::Rng rng(11);
  for (int i = 0; i < 500; ++i) CHECK(attn::sample_top_k(logits, 1.0f, 1, rng) == 2);
  // Even at a huge temperature, where plain sampling is nearly uniform.
  for (int i = 0; i < 500; ++i) CHECK(attn::sample_top_k(logits, 1000.0f, 1, rng) == 2);
}

TEST_CASE("ties are broken by the lower index") {
  const std::vector<float> logits = {1.0f, 3.0f, 0.0f, 3.0f, 3.0f};
  attn::Rng rng(5);
  for (int i = 0; i < 200; ++i) CHECK(attn::sample_top_k(logits, 1.0f, 1, rng) == 1);
  std::set<int> seen;
  for (int i = 0; i < 2000; ++i) seen.insert(attn::sample_top_k(logits, 1.0f, 2, rng));
  CHECK(seen == std::set<int>{1, 3});
}

TEST_CASE("never samples outside the top k") {
  // Nearly flat logits: without the cut every id would appear many times in 20000 draws.
  std::vector<float> logits(20);
  for (std::size_t v = 0; v < logits.size(); ++v) {
    logits[v] = 0.01f * static_cast<float>((v * 7) % 20);  // a permutation of 0, 0.01, ..., 0.19
  }
  // The 5 largest: 0.19, 0.18, 0.17, 0.16, 0.15 at v with (7v) % 20 in {19, 18, 17, 16, 15}.
  std::set<int> top5;
  for (std::size_t v = 0; v < logits.size(); ++v) {
    if ((v * 7) % 20 >= 15) top5.insert(static_cast<int>(v));
  }
  REQUIRE(top5.size() == 5);
  attn::Rng rng(2024);
  std::set<int> seen;
  int outside = 0;
  for (int i = 0; i < 20000; ++i) {
    const int t = attn::sample_top_k(logits, 2.0f, 5, rng);
    seen.insert(t);
    if (top5.count(t) == 0) ++outside;
  }
  CHECK(outside == 0);
  CHECK(seen == top5);  // and every one of the k is reachable
}

TEST_CASE("the k kept tokens are drawn with their renormalised softmax probabilities") {
  const std::vector<float> logits = {2.0f, -1.0f, 1.0f, 0.0f, -3.0f};
  const float temperature = 0.7f;
  // Keep {0, 2, 3}: p_i = exp(l_i / T) / sum over the kept ids.
  const std::vector<int> kept = {0, 2, 3};
  double z = 0.0;
  for (const int v : kept)
    z += std::exp(static_cast<double>(logits[static_cast<std::size_t>(v)]) / 0.7);
  const int n = 200000;
  std::vector<int> counts(logits.size(), 0);
  attn::Rng rng(99);
  for (int i = 0; i < n; ++i)
    ++counts[static_cast<std::size_t>(attn::sample_top_k(logits, temperature, 3, rng))];
  CHECK(counts[1] == 0);
  CHECK(counts[4] == 0);
  for (const int v : kept) {
    const double p = std::exp(static_cast<double>(logits[static_cast<std::size_t>(v)]) / 0.7) / z;
    const double freq = counts[static_cast<std::size_t>(v)] / static_cast<double>(n);
    const double se = std::sqrt(p * (1.0 - p) / n);
    CAPTURE(v);
    CHECK(std::abs(freq - p) < 5.0 * se);
  }
}

TEST_CASE("k = V is plain sampling: the same draws as sample_logits from the same seed") {
  const std::vector<float> logits = {0.3f, -0.2f, 1.5f, 0.0f, 0.7f, -4.0f};
  attn::Rng a(42);
  attn::Rng b(42);
  for (int i = 0; i < 2000; ++i) {
    CHECK(attn::sample_top_k(logits, 0.9f, logits.size(), a) ==
          attn::sample_logits(logits, 0.9f, b));
  }
}

TEST_CASE("equal seeds give equal samples") {
  const std::vector<float> logits = {0.3f, -0.2f, 1.5f, 0.0f, 0.7f};
  attn::Rng a(7);
  attn::Rng b(7);
  for (int i = 0; i < 100; ++i) {
    CHECK(attn::sample_top_k(logits, 1.2f, 3, a) == attn::sample_top_k(logits, 1.2f, 3, b));
  }
}

TEST_CASE("top_k outside [1, V] and bad temperatures are errors") {
  const std::vector<float> logits(65, 0.5f);
  attn::Rng rng(1);
  CHECK_THROWS_WITH_AS(attn::sample_top_k(logits, 1.0f, 0, rng),
                       "attn::sample_top_k: top_k must be in [1, 65], got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(attn::sample_top_k(logits, 1.0f, 66, rng),
                       "attn::sample_top_k: top_k must be in [1, 65], got 66",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(attn::sample_top_k(logits, 0.0f, 5, rng),
                       "attn::sample_top_k: temperature must be > 0, got 0", std::invalid_argument);
  CHECK_THROWS_AS(attn::sample_top_k(logits, -1.0f, 5, rng), std::invalid_argument);
  CHECK_THROWS_AS(attn::sample_top_k(logits, std::numeric_limits<float>::quiet_NaN(), 5, rng),
                  std::invalid_argument);
  CHECK_THROWS_AS(attn::sample_top_k(logits, std::numeric_limits<float>::infinity(), 5, rng),
                  std::invalid_argument);
  CHECK_THROWS_WITH_AS(attn::sample_top_k(std::vector<float>{}, 1.0f, 1, rng),
                       "attn::sample_top_k: logits must not be empty", std::invalid_argument);
}

TEST_CASE("a NaN logit is reported, not silently skipped") {
  const std::vector<float> logits = {1.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f};
  attn::Rng rng(3);
  CHECK_THROWS_AS(attn::sample_top_k(logits, 1.0f, 2, rng), std::invalid_argument);
}

}  // TEST_SUITE
