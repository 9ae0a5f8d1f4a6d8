// Tests for attn/model/sample.hpp: temperature and sampling (chapters 01 and 07).
// Sampling is checked statistically with a fixed seed and bounds of several standard errors,
// so the tests are deterministic and far from flaky.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/model/sample.hpp"
#include "test_helpers.hpp"

TEST_SUITE("sample") {

TEST_CASE("temperature 1 is the plain softmax") {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  const attn::Vector want = {0.09003057f, 0.24472847f, 0.66524096f};
  CHECK_TENSOR_NEAR(attn::probs_with_temperature(logits, 1.0f), want, 1e-7, 1e-6);
}

TEST_CASE("temperature divides the logits before the softmax") {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  // softmax([0.5, 1, 1.5])
  const attn::Vector want = {0.18632372f, 0.30719589f, 0.50648039f};
  CHECK_TENSOR_NEAR(attn::probs_with_temperature(logits, 2.0f), want, 1e-7, 1e-6);
  const attn::Vector flat = attn::probs_with_temperature(logits, 1000.0f);
  for (const float p : flat) CHECK(p == doctest::Approx(1.0 / 3.0).epsilon(1e-2));
}

TEST_CASE("a tiny temperature is nearly argmax") {
  const std::vector<float> logits = {1.0f, 3.0f, 2.9f, -5.0f};
  const attn::Vector p = attn::probs_with_temperature(logits, 1e-3f);
  CHECK(p(1) == doctest::Approx(1.0).epsilon(1e-6));
  attn::Rng rng(3);
  for (int i = 0; i < 1000; ++i) CHECK(attn::sample_logits(logits, 1e-3f, rng) == 1);
}

TEST_CASE("a temperature so small that logits / T overflows gives the exact limit, argmax") {
  // 3 / 1e-38 is inf in float: the softmax of the plain quotient would be NaN (issue 7).
  const std::vector<float> logits = {1.0f, 3.0f, 2.9f, -5.0f};
  for (const float t : {1e-38f, 1e-45f, std::numeric_limits<float>::denorm_min()}) {
    const attn::Vector p = attn::probs_with_temperature(logits, t);
    CHECK(p(0) == 0.0f);
    CHECK(p(1) == 1.0f);
    CHECK(p(2) == 0.0f);
    CHECK(p(3) == 0.0f);
    attn::Rng rng(5);
    for (int i = 0; i < 100; ++i) CHECK(attn::sample_logits(logits, t, rng) == 1);
    for (int i = 0; i < 100; ++i) CHECK(attn::sample_top_k(logits, t, 2, rng) == 1);
  }
  // Tied maxima share the limit equally, as softmax(x / T) does for every T.
  const std::vector<float> tied = {2.0f, -1.0f, 2.0f};
  const attn::Vector p = attn::probs_with_temperature(tied, 1e-38f);
  CHECK(p(0) == 0.5f);
  CHECK(p(1) == 0.0f);
  CHECK(p(2) == 0.5f);
  // Huge logits overflow at an ordinary temperature too.
  const std::vector<float> huge = {3e38f, -3e38f, 1e38f};
  const attn::Vector q = attn::probs_with_temperature(huge, 0.5f);
  CHECK(q(0) == 1.0f);
  CHECK(q(1) == 0.0f);
  CHECK(q(2) == 0.0f);
}

TEST_CASE("the generation loops' TokenSampler has the same overflow guard (issue 18)") {
  // Chapters 07 and 10 sample through TokenSampler: at 1e-38 its plain quotient was inf, the
  // softmax NaN, and the draw failed inside attn::Rng::categorical.
  const std::vector<float> logits = {1.0f, 3.0f, 2.9f, -5.0f};
  attn::TokenSampler sampler(logits.size());
  attn::Rng rng(5);
  for (const float t : {1e-38f, 1e-45f, std::numeric_limits<float>::denorm_min()}) {
    for (const std::size_t k : {std::size_t{0}, std::size_t{2}}) {
      for (const float top_p : {1.0f, 0.5f}) {
        const attn::SamplingOptions o{t, k, top_p, false};
        for (int i = 0; i < 20; ++i) CHECK(sampler.next(logits, o, rng) == 1);
        CHECK(sampler.last_probs()[1] == 1.0f);
      }
    }
  }
}

TEST_CASE("at temperature 1 the frequencies approach the softmax") {
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, -1.0f};
  const attn::Vector p = attn::probs_with_temperature(logits, 1.0f);
  const int n = 200000;
  std::vector<int> counts(4, 0);
  attn::Rng rng(2024);
  for (int i = 0; i < n; ++i)
    ++counts[static_cast<std::size_t>(attn::sample_logits(logits, 1.0f, rng))];
  for (std::size_t k = 0; k < 4; ++k) {
    const double pk = static_cast<double>(p(k));
    const double freq = counts[k] / static_cast<double>(n);
    const double se = std::sqrt(pk * (1.0 - pk) / n);
    CAPTURE(k);
    CHECK(std::abs(freq - pk) < 5.0 * se);
  }
}

TEST_CASE("equal seeds give equal samples") {
  const std::vector<float> logits = {0.3f, -0.2f, 1.5f, 0.0f, 0.7f};
  attn::Rng a(99);
  attn::Rng b(99);
  for (int i = 0; i < 100; ++i)
    CHECK(attn::sample_logits(logits, 0.8f, a) == attn::sample_logits(logits, 0.8f, b));
}

TEST_CASE("a temperature that is not > 0, or not finite, is an error") {
  const std::vector<float> logits = {1.0f, 2.0f};
  attn::Rng rng(1);
  CHECK_THROWS_WITH_AS(attn::sample_logits(logits, 0.0f, rng),
                       "attn::sample_logits: temperature must be > 0, got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(attn::probs_with_temperature(logits, -0.5f),
                       "attn::probs_with_temperature: temperature must be > 0, got -0.5",
                       std::invalid_argument);
  CHECK_THROWS_AS(attn::sample_logits(logits, std::numeric_limits<float>::quiet_NaN(), rng),
                  std::invalid_argument);
  CHECK_THROWS_AS(attn::sample_logits(logits, std::numeric_limits<float>::infinity(), rng),
                  std::invalid_argument);
  CHECK_THROWS_WITH_AS(attn::sample_logits(std::vector<float>{}, 1.0f, rng),
                       "attn::sample_logits: logits must not be empty", std::invalid_argument);
}

}  // TEST_SUITE

TEST_CASE("top_p_filter keeps the nucleus TokenSampler keeps, renormalised") {
  // TokenSampler::next cuts the same tail in its own buffer (last_probs, not renormalised).
  const std::vector<float> logits = {0.3f, 2.0f, -1.0f, 1.2f, 1.2f, 0.0f};
  attn::TokenSampler sampler(logits.size());
  for (const float top_p : {0.05f, 0.4f, 0.6f, 0.8f, 0.95f, 1.0f}) {
    CAPTURE(top_p);
    attn::Rng rng(1);
    sampler.next(logits, attn::SamplingOptions{1.0f, 0, 1.0f, false}, rng);
    const std::vector<float> probs(sampler.last_probs().begin(), sampler.last_probs().end());
    sampler.next(logits, attn::SamplingOptions{1.0f, 0, top_p, false}, rng);
    const std::span<const float> cut = sampler.last_probs();
    double kept = 0.0;
    for (float p : cut) kept += static_cast<double>(p);
    const std::vector<float> got = attn::top_p_filter(probs, top_p);
    REQUIRE(got.size() == cut.size());
    for (std::size_t v = 0; v < got.size(); ++v) {
      CAPTURE(v);
      CHECK(got[v] == doctest::Approx(static_cast<double>(cut[v]) / kept).epsilon(1e-6));
    }
  }
}

TEST_CASE("top_p_filter: ties go to the lower id, and bad arguments are refused") {
  const std::vector<float> probs = {0.5f, 0.25f, 0.25f};
  const std::vector<float> got = attn::top_p_filter(probs, 0.75f);
  CHECK(got[0] == doctest::Approx(2.0 / 3.0));
  CHECK(got[1] == doctest::Approx(1.0 / 3.0));
  CHECK(got[2] == 0.0f);
  CHECK_THROWS_AS(attn::top_p_filter(probs, 0.0f), std::invalid_argument);
  CHECK_THROWS_AS(attn::top_p_filter(probs, 1.5f), std::invalid_argument);
  CHECK_THROWS_AS(attn::top_p_filter(std::vector<float>{}, 0.5f), std::invalid_argument);
}

namespace {
int g_filter_calls = 0;
// Keeps only the least likely id: a cut no correct nucleus makes, so its effect shows.
std::vector<float> keep_least_likely(std::span<const float> probs, float) {
  ++g_filter_calls;
  std::size_t least = 0;
  for (std::size_t v = 1; v < probs.size(); ++v)
    if (probs[v] < probs[least]) least = v;
  std::vector<float> kept(probs.size(), 0.0f);
  kept[least] = 1.0f;
  return kept;
}
std::vector<float> wrong_size(std::span<const float> probs, float) {
  return std::vector<float>(probs.size() + 1, 1.0f);
}
}  // namespace

TEST_CASE("set_top_p_filter: the filter given decides which ids stay, nullptr restores the cut") {
  const std::vector<float> logits = {2.0f, 1.0f, 0.5f, -1.0f};  // id 3 the least likely
  attn::TokenSampler sampler(logits.size());
  attn::SamplingOptions o;
  o.top_p = 0.9f;
  g_filter_calls = 0;
  const bool none_before = attn::set_top_p_filter(&keep_least_likely) == nullptr;
  REQUIRE(none_before);
  attn::Rng rng(5);
  for (int i = 0; i < 20; ++i) CHECK(sampler.next(logits, o, rng) == 3);
  CHECK(g_filter_calls == 20);
  o.top_p = 1.0f;  // no nucleus: the filter is not asked
  (void)sampler.next(logits, o, rng);
  CHECK(g_filter_calls == 20);
  o.top_p = 0.9f;
  const bool previous_returned = attn::set_top_p_filter(&wrong_size) == &keep_least_likely;
  CHECK(previous_returned);
  CHECK_THROWS_AS((void)sampler.next(logits, o, rng), std::invalid_argument);
  const bool wrong_size_returned = attn::set_top_p_filter(nullptr) == &wrong_size;
  CHECK(wrong_size_returned);
  bool drew_other = false;  // the built-in cut keeps the likely ids, never the least likely
  for (int i = 0; i < 50; ++i) drew_other = drew_other || sampler.next(logits, o, rng) != 3;
  CHECK(drew_other);
}

TEST_CASE("set_top_p_filter(attn::top_p_filter) draws what the built-in cut draws") {
  // Chapter 10's --mine on a correct ex10.4 prints the reference's text because of this.
  attn::Rng make(11);
  std::vector<float> logits(65);
  for (float& l : logits) l = 2.0f * make.normal();
  attn::TokenSampler sampler(logits.size());
  for (const float top_p : {0.05f, 0.5f, 0.9f, 0.99f}) {
    CAPTURE(top_p);
    for (const std::size_t top_k : {std::size_t{0}, std::size_t{5}}) {
      CAPTURE(top_k);
      const attn::SamplingOptions o{0.8f, top_k, top_p, false};
      attn::Rng built_in(3), filtered(3);
      std::vector<int> a, b;
      for (int i = 0; i < 200; ++i) a.push_back(sampler.next(logits, o, built_in));
      attn::set_top_p_filter(&attn::top_p_filter);
      for (int i = 0; i < 200; ++i) b.push_back(sampler.next(logits, o, filtered));
      attn::set_top_p_filter(nullptr);
      CHECK(a == b);
    }
  }
}
