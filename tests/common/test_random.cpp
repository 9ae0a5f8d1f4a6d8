// Tests for attn/core/random.hpp: the PCG32 generator behind every "random" number of the course.
// Reference values come from the published pcg32 demo; the statistical checks use fixed seeds
// and bounds of several standard errors, so they are deterministic and far from flaky.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attn/core/random.hpp"
#include "test_helpers.hpp"

namespace {

// Pearson's chi-square statistic of observed counts against expected probabilities.
double chi_square(const std::vector<std::size_t>& counts, const std::vector<double>& probs,
                  std::size_t n) {
  double chi2 = 0.0;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    const double expected = probs[k] * static_cast<double>(n);
    const double diff = static_cast<double>(counts[k]) - expected;
    chi2 += diff * diff / expected;
  }
  return chi2;
}

}  // namespace

TEST_SUITE("random") {

TEST_CASE("Rng(42, 54) reproduces the published pcg32 demo output") {
  // pcg32-demo.c from pcg-random.org: pcg32_srandom_r(&rng, 42u, 54u), then six draws.
  attn::Rng rng(42, 54);
  const std::array<std::uint32_t, 6> expected = {0xa15c02b7u, 0x7b47f409u, 0xba1d3330u,
                                                 0x83d2f293u, 0xbfa4784bu, 0xcbed606eu};
  for (std::uint32_t want : expected) CHECK(rng.next_u32() == want);
}

TEST_CASE("equal seeds give equal streams, different seeds or streams differ") {
  attn::Rng a(1337);
  attn::Rng b(1337);
  attn::Rng c(1338);
  attn::Rng d(1337, 55);
  int same_ab = 0;
  int same_ac = 0;
  int same_ad = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::uint32_t va = a.next_u32();
    same_ab += va == b.next_u32();
    same_ac += va == c.next_u32();
    same_ad += va == d.next_u32();
  }
  CHECK(same_ab == 1000);
  CHECK(same_ac < 5);  // independent 32-bit values almost never collide
  CHECK(same_ad < 5);
}

TEST_CASE("the default seed is 1337 on stream 54") {
  attn::Rng a;
  attn::Rng b(1337, 54);
  for (int i = 0; i < 10; ++i) CHECK(a.next_u32() == b.next_u32());
}

TEST_CASE("uniform() is the top 24 bits of one draw times 2^-24, exactly") {
  attn::Rng rng(7);
  attn::Rng twin(7);
  for (int i = 0; i < 10000; ++i) {
    const float u = rng.uniform();
    const std::uint32_t x = twin.next_u32();
    CHECK(u >= 0.0f);
    CHECK(u < 1.0f);
    // The integer k = u * 2^24 is exact in float, so the comparison is exact too.
    CHECK(static_cast<std::uint32_t>(u * 16777216.0f) == (x >> 8));
  }
}

TEST_CASE("uniform(lo, hi) stays in [lo, hi) and covers it") {
  attn::Rng rng(11);
  float lo_seen = 10.0f;
  float hi_seen = -10.0f;
  for (int i = 0; i < 100000; ++i) {
    const float v = rng.uniform(-2.0f, 3.0f);
    CHECK(v >= -2.0f);
    CHECK(v < 3.0f);
    lo_seen = std::min(lo_seen, v);
    hi_seen = std::max(hi_seen, v);
  }
  CHECK(lo_seen < -1.99f);
  CHECK(hi_seen > 2.99f);
}

TEST_CASE("uniform_double() has 53 exact bits in [0, 1) and a mean of one half") {
  attn::Rng rng(5);
  double sum = 0.0;
  constexpr int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double u = rng.uniform_double();
    CHECK(u >= 0.0);
    CHECK(u < 1.0);
    const double scaled = u * 0x1.0p53;
    CHECK(scaled == std::floor(scaled));
    sum += u;
  }
  // Standard error of the mean: sqrt(1/12) / sqrt(n) ~ 0.0009; allow 5 of them.
  CHECK(std::abs(sum / n - 0.5) < 0.0046);
}

TEST_CASE("normal() has mean 0 and standard deviation 1 over 100k draws") {
  attn::Rng rng(1337);
  constexpr int n = 100000;
  double sum = 0.0;
  double sum_sq = 0.0;
  int within_one = 0;
  int beyond_three = 0;
  for (int i = 0; i < n; ++i) {
    const double z = static_cast<double>(rng.normal());
    CHECK(std::isfinite(z));
    sum += z;
    sum_sq += z * z;
    within_one += std::abs(z) < 1.0;
    beyond_three += std::abs(z) > 3.0;
  }
  const double mean = sum / n;
  const double stddev = std::sqrt(sum_sq / n - mean * mean);
  // Standard errors: 1/sqrt(n) = 0.0032 for the mean, 1/sqrt(2n) = 0.0022 for the std.
  CHECK(std::abs(mean) < 0.016);
  CHECK(std::abs(stddev - 1.0) < 0.011);
  // The shape, not only two moments: P(|z| < 1) = 0.6827, P(|z| > 3) = 0.0027.
  CHECK(static_cast<double>(within_one) / n == doctest::Approx(0.6827).epsilon(0.01));
  CHECK(beyond_three > 150);
  CHECK(beyond_three < 400);
}

TEST_CASE("normal() uses one Box-Muller pair for two values") {
  // Two normals cost two uniform_double() calls, i.e. four 32-bit draws; the second value of
  // each pair comes from the cache.
  attn::Rng rng(9);
  attn::Rng twin(9);
  (void)rng.normal();
  (void)rng.normal();
  for (int i = 0; i < 4; ++i) (void)twin.next_u32();
  CHECK(rng.next_u32() == twin.next_u32());
}

TEST_CASE("normal(mean, std) shifts and scales the standard normal") {
  attn::Rng rng(21);
  attn::Rng twin(21);
  for (int i = 0; i < 100; ++i) {
    const float z = twin.normal();
    CHECK(rng.normal(3.0f, 0.5f) == doctest::Approx(3.0f + 0.5f * z).epsilon(1e-6));
  }
}

TEST_CASE("below(n) stays in [0, n) and hits every value about equally often") {
  attn::Rng rng(123);
  for (int i = 0; i < 100; ++i) CHECK(rng.below(1) == 0);
  for (std::size_t n : {std::size_t{2}, std::size_t{3}, std::size_t{7}, std::size_t{1000},
                        std::size_t{0xFFFFFFFFu}}) {
    for (int i = 0; i < 1000; ++i) CHECK(rng.below(n) < n);
  }
  constexpr std::size_t k = 10;
  constexpr std::size_t n = 100000;
  std::vector<std::size_t> counts(k, 0);
  for (std::size_t i = 0; i < n; ++i) ++counts[rng.below(k)];
  // Chi-square with 9 degrees of freedom: mean 9, P(> 30) ~ 0.0004.
  CHECK(chi_square(counts, std::vector<double>(k, 0.1), n) < 30.0);
}

TEST_CASE("below(n) has no modulo bias for a large n") {
  // For n = 3 * 2^30, x % n would map 2^32 values onto n with the first third hit twice as
  // often: P(result < 2^30) = 1/2 instead of 1/3.
  attn::Rng rng(77);
  constexpr std::size_t n = std::size_t{3} << 30;
  int low = 0;
  constexpr int draws = 60000;
  for (int i = 0; i < draws; ++i) low += rng.below(n) < (std::size_t{1} << 30);
  // Standard error sqrt(2/9 / 60000) = 0.0019.
  CHECK(static_cast<double>(low) / draws == doctest::Approx(1.0 / 3.0).epsilon(0.03));
}

TEST_CASE("below() rejects 0 and sizes above 32 bits") {
  attn::Rng rng(1);
  CHECK_THROWS_AS((void)rng.below(0), std::invalid_argument);
  CHECK_THROWS_AS((void)rng.below(std::size_t{1} << 32), std::invalid_argument);
}

TEST_CASE("categorical frequencies match the probabilities") {
  attn::Rng rng(2024);
  const std::vector<float> probs = {0.1f, 0.2f, 0.3f, 0.4f};
  constexpr std::size_t n = 100000;
  std::vector<std::size_t> counts(4, 0);
  for (std::size_t i = 0; i < n; ++i) ++counts[rng.categorical(probs)];
  // 3 degrees of freedom: P(chi2 > 20) ~ 0.0002.
  CHECK(chi_square(counts, {0.1, 0.2, 0.3, 0.4}, n) < 20.0);
}

TEST_CASE("categorical renormalises weights that do not sum to one") {
  attn::Rng rng(8);
  const std::vector<float> weights = {1.0f, 3.0f};
  constexpr std::size_t n = 40000;
  std::vector<std::size_t> counts(2, 0);
  for (std::size_t i = 0; i < n; ++i) ++counts[rng.categorical(weights)];
  CHECK(chi_square(counts, {0.25, 0.75}, n) < 15.0);
}

TEST_CASE("zero-probability entries are never drawn") {
  attn::Rng rng(31);
  const std::vector<float> probs = {0.0f, 0.5f, 0.0f, 0.5f, 0.0f};
  for (int i = 0; i < 20000; ++i) {
    const std::size_t k = rng.categorical(probs);
    CHECK((k == 1 || k == 3));
  }
  const std::vector<float> one_hot = {0.0f, 0.0f, 1.0f};
  for (int i = 0; i < 1000; ++i) CHECK(rng.categorical(one_hot) == 2);
  // A trailing zero is not a place for rounding leftovers to land.
  const std::vector<float> tail = {1.0f, 0.0f};
  for (int i = 0; i < 1000; ++i) CHECK(rng.categorical(tail) == 0);
}

TEST_CASE("categorical rejects empty, negative, NaN, infinite and all-zero probabilities") {
  attn::Rng rng(1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS((void)rng.categorical(std::vector<float>{}), std::invalid_argument);
  CHECK_THROWS_AS((void)rng.categorical(std::vector<float>{0.5f, -0.1f, 0.6f}),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)rng.categorical(std::vector<float>{0.5f, nan}), std::invalid_argument);
  CHECK_THROWS_AS((void)rng.categorical(std::vector<float>{inf, 0.5f}), std::invalid_argument);
  CHECK_THROWS_AS((void)rng.categorical(std::vector<float>{0.0f, 0.0f}), std::invalid_argument);
}

TEST_CASE("multinomial draws n samples, each one categorical draw") {
  const std::vector<float> probs = {0.2f, 0.5f, 0.3f};
  attn::Rng rng(55);
  attn::Rng twin(55);
  const std::vector<std::size_t> samples = attn::multinomial(rng, probs, 1000);
  REQUIRE(samples.size() == 1000);
  for (std::size_t s : samples) CHECK(s == twin.categorical(probs));
  CHECK(attn::multinomial(rng, probs, 0).empty());

  std::vector<std::size_t> counts(3, 0);
  for (std::size_t s : attn::multinomial(rng, probs, 50000)) ++counts[s];
  CHECK(chi_square(counts, {0.2, 0.5, 0.3}, 50000) < 20.0);
}

TEST_CASE("randn fills tensors of the requested shape in row-major order") {
  attn::Rng rng(4);
  attn::Rng twin(4);
  const attn::Matrix m = attn::randn(rng, 3, 5, 0.5f);
  REQUIRE(m.shape()[0] == 3);
  REQUIRE(m.shape()[1] == 5);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 5; ++j) CHECK(m(i, j) == 0.5f * twin.normal());
  }

  const attn::Tensor<1> v = attn::randn<1>(rng, {7});
  CHECK(v.shape()[0] == 7);
  const attn::Tensor<3> t3 = attn::randn<3>(rng, {2, 3, 4});
  CHECK(t3.shape()[0] == 2);
  CHECK(t3.shape()[1] == 3);
  CHECK(t3.shape()[2] == 4);
  const attn::Tensor<4> t4 = attn::randn<4>(rng, {2, 1, 3, 2});
  CHECK(t4.size() == 12);
  CHECK(t4.shape()[3] == 2);
}

TEST_CASE("randn is reproducible from the seed") {
  attn::Rng a(99);
  attn::Rng b(99);
  attn::Rng c(100);
  const attn::Matrix ma = attn::randn(a, 4, 4);
  const attn::Matrix mb = attn::randn(b, 4, 4);
  const attn::Matrix mc = attn::randn(c, 4, 4);
  CHECK_TENSOR_NEAR(ma, mb, 0.0, 0.0);  // bit-identical, not merely close
  CHECK(ma != mc);
}

TEST_CASE("rand_uniform stays in [lo, hi)") {
  attn::Rng rng(6);
  const attn::Matrix m = attn::rand_uniform(rng, 20, 30, -0.1f, 0.1f);
  REQUIRE(m.shape()[0] == 20);
  REQUIRE(m.shape()[1] == 30);
  for (float v : m) {
    CHECK(v >= -0.1f);
    CHECK(v < 0.1f);
  }
  CHECK(*std::min_element(m.begin(), m.end()) < *std::max_element(m.begin(), m.end()));
}

}  // TEST_SUITE
