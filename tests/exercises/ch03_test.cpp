// Don't edit: these tests check your exercises.
// tests/exercises/ch03_test.cpp: chapter 03 (masked softmax). Every expected value is worked out
// by hand or by a plain double-precision loop below, never by the attn:: function it checks.
// Run them with build/default/bin/attn-check 03.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <vector>

#include "exercises.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Mask;
using attn::Matrix;

constexpr float kInf = std::numeric_limits<float>::infinity();

// A fixed (T, T) score matrix with no visible pattern: s(i, j) = 3 sin(7i + 3j + 1).
Matrix wiggly_scores(std::size_t T) {
  Matrix s({T, T});
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = 0; j < T; ++j)
      s(i, j) = static_cast<float>(
          3.0 * std::sin(7.0 * static_cast<double>(i) + 3.0 * static_cast<double>(j) + 1.0));
  return s;
}

// The causal rule written out: key j is allowed for query i when j <= i.
Mask lower_triangle(std::size_t T) {
  Mask m({T, T});
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = 0; j < T; ++j) m(i, j) = j <= i;
  return m;
}

// Softmax of each row over the allowed entries, in double, straight from the definition.
// A row with no allowed entry is all zeros.
Matrix softmax_by_hand(const Matrix& x, const Mask& allowed) {
  const std::size_t R = x.shape()[0];
  const std::size_t S = x.shape()[1];
  Matrix out({R, S});
  for (std::size_t i = 0; i < R; ++i) {
    double m = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < S; ++j)
      if (allowed(i, j)) m = std::max(m, static_cast<double>(x(i, j)));
    double sum = 0.0;
    for (std::size_t j = 0; j < S; ++j)
      if (allowed(i, j)) sum += std::exp(static_cast<double>(x(i, j)) - m);
    for (std::size_t j = 0; j < S; ++j)
      out(i, j) = allowed(i, j)
                      ? static_cast<float>(std::exp(static_cast<double>(x(i, j)) - m) / sum)
                      : 0.0f;
  }
  return out;
}

bool has_nan(const Matrix& m) {
  for (const float v : m)
    if (std::isnan(v)) return true;
  return false;
}

double row_sum(const Matrix& m, std::size_t i) {
  double sum = 0.0;
  for (std::size_t j = 0; j < m.shape()[1]; ++j) sum += static_cast<double>(m(i, j));
  return sum;
}

}  // namespace

TEST_SUITE("ex03.1 Causal mask") {
TEST_CASE("both forms are (T, T)") {
  for (const std::size_t T : {1u, 2u, 5u, 9u}) {
    CAPTURE(T);
    const Mask mask = ex03::causal_mask(T);
    const Matrix additive = ex03::causal_mask_additive(T);
    CHECK(mask.shape()[0] == T);
    CHECK(mask.shape()[1] == T);
    CHECK(additive.shape()[0] == T);
    CHECK(additive.shape()[1] == T);
  }
}

TEST_CASE("future positions are masked in both forms") {
  const std::size_t T = 5;
  const Mask mask = ex03::causal_mask(T);
  const Matrix additive = ex03::causal_mask_additive(T);
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = i + 1; j < T; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK_FALSE(mask(i, j));
      CHECK(additive(i, j) == -kInf);
    }
}

TEST_CASE("the past and the present are allowed in both forms") {
  const std::size_t T = 5;
  const Mask mask = ex03::causal_mask(T);
  const Matrix additive = ex03::causal_mask_additive(T);
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = 0; j <= i; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK(mask(i, j));
      CHECK(additive(i, j) == 0.0f);
    }
}

TEST_CASE("the additive mask has no NaN") {
  // triu(ones, 1) * -inf would put 0 * -inf = NaN on and below the diagonal.
  const std::size_t T = 7;
  const Mask mask = ex03::causal_mask(T);
  const Matrix additive = ex03::causal_mask_additive(T);
  CHECK_FALSE(has_nan(additive));
  std::size_t allowed = 0;
  for (const bool b : mask) allowed += b ? 1 : 0;
  CHECK(allowed == T * (T + 1) / 2);  // 28 allowed pairs for T = 7
}
}

TEST_SUITE("ex03.2 Stable softmax") {
TEST_CASE("small logits give the textbook values") {
  // softmax([1, 2, 3]) = [e, e^2, e^3] / (e + e^2 + e^3); equal logits give equal weights.
  const Matrix x = {{1.0f, 2.0f, 3.0f}, {0.0f, 0.0f, 0.0f}};
  const Matrix want = {{0.09003057f, 0.24472847f, 0.66524096f},
                       {1.0f / 3.0f, 1.0f / 3.0f, 1.0f / 3.0f}};
  CHECK_TENSOR_NEAR(ex03::softmax(x), want, 1e-6, 1e-5);
}

TEST_CASE("each row sums to one") {
  const Matrix x = wiggly_scores(6);
  const Matrix w = ex03::softmax(x);
  REQUIRE(w.shape()[0] == 6);
  REQUIRE(w.shape()[1] == 6);
  for (std::size_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(row_sum(w, i) == doctest::Approx(1.0).epsilon(1e-5));
  }
}

TEST_CASE("every row matches a softmax computed by hand") {
  const Matrix x = wiggly_scores(5);
  const Mask all = xt::ones<bool>({5, 5});
  CHECK_TENSOR_NEAR(ex03::softmax(x), softmax_by_hand(x, all), 1e-6, 1e-5);
}

TEST_CASE("large logits do not overflow") {
  // exp(1000) is inf in float: the naive formula gives inf / inf = NaN.
  const Matrix x = {{1000.0f, 1001.0f, 1002.0f}};
  const Matrix want = {{0.09003057f, 0.24472847f, 0.66524096f}};
  const Matrix w = ex03::softmax(x);
  CHECK_FALSE(has_nan(w));
  CHECK_TENSOR_NEAR(w, want, 1e-6, 1e-5);
}

TEST_CASE("very negative logits do not underflow to NaN") {
  // exp(-1000) is 0 in float: the naive formula gives 0 / 0 = NaN.
  // softmax([-1000, -1001]) = [1, e^-1] / (1 + e^-1) = [0.7310586, 0.2689414].
  const Matrix x = {{-1000.0f, -1001.0f}};
  const Matrix want = {{0.73105858f, 0.26894142f}};
  const Matrix w = ex03::softmax(x);
  CHECK_FALSE(has_nan(w));
  CHECK_TENSOR_NEAR(w, want, 1e-6, 1e-5);
}

TEST_CASE("-inf entries get weight exactly zero") {
  const Matrix x = {{0.5f, -kInf, 0.5f, -kInf}, {-kInf, 2.0f, -kInf, -kInf}};
  const Matrix w = ex03::softmax(x);
  CHECK(w(0, 1) == 0.0f);
  CHECK(w(0, 3) == 0.0f);
  CHECK(w(0, 0) == doctest::Approx(0.5));
  CHECK(w(0, 2) == doctest::Approx(0.5));
  CHECK(w(1, 1) == doctest::Approx(1.0));
  CHECK(w(1, 0) == 0.0f);
}

TEST_CASE("a fully masked row is all zeros, not NaN") {
  const Matrix x = {{1.0f, 2.0f, 3.0f}, {-kInf, -kInf, -kInf}};
  const Matrix w = ex03::softmax(x);
  CHECK_FALSE(has_nan(w));
  CHECK(w(1, 0) == 0.0f);
  CHECK(w(1, 1) == 0.0f);
  CHECK(w(1, 2) == 0.0f);
  CHECK(w(0, 2) == doctest::Approx(0.66524096));  // the other row is untouched
}
}

TEST_SUITE("ex03.3 Masked softmax") {
TEST_CASE("future positions get zero weight") {
  const std::size_t T = 6;
  const Matrix w = ex03::masked_softmax(wiggly_scores(T), lower_triangle(T));
  REQUIRE(w.shape()[0] == T);
  REQUIRE(w.shape()[1] == T);
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = i + 1; j < T; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK(w(i, j) == 0.0f);
    }
}

TEST_CASE("allowed weights match a softmax over the past computed by hand") {
  const std::size_t T = 6;
  const Matrix x = wiggly_scores(T);
  const Mask causal = lower_triangle(T);
  CHECK_TENSOR_NEAR(ex03::masked_softmax(x, causal), softmax_by_hand(x, causal), 1e-6, 1e-5);
}

TEST_CASE("the first query attends only to itself and every row sums to one") {
  const std::size_t T = 4;
  const Matrix w = ex03::masked_softmax(wiggly_scores(T), lower_triangle(T));
  CHECK(w(0, 0) == doctest::Approx(1.0));
  for (std::size_t i = 0; i < T; ++i) {
    CAPTURE(i);
    CHECK(row_sum(w, i) == doctest::Approx(1.0).epsilon(1e-5));
  }
}

TEST_CASE("a masked score never matters, however large") {
  const std::size_t T = 4;
  const Mask causal = lower_triangle(T);
  Matrix x = wiggly_scores(T);
  const Matrix before = ex03::masked_softmax(x, causal);
  x(0, 3) = 1e30f;    // future of query 0
  x(2, 3) = 5000.0f;  // future of query 2
  CHECK_TENSOR_NEAR(ex03::masked_softmax(x, causal), before, 0.0, 0.0);
}

TEST_CASE("a fully masked row is all zeros, not NaN") {
  // Query 1 is padding: it may attend to nothing.
  const std::size_t T = 3;
  Mask mask = lower_triangle(T);
  mask(1, 0) = false;
  mask(1, 1) = false;
  const Matrix w = ex03::masked_softmax(wiggly_scores(T), mask);
  CHECK_FALSE(has_nan(w));
  for (std::size_t j = 0; j < T; ++j) {
    CAPTURE(j);
    CHECK(w(1, j) == 0.0f);
  }
  CHECK(w(0, 0) == doctest::Approx(1.0));
}

TEST_CASE("a mask that is not the shape of the scores is rejected") {
  CHECK_THROWS_AS(ex03::masked_softmax(wiggly_scores(3), lower_triangle(4)), std::invalid_argument);
}
}
