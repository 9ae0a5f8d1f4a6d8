// Don't edit: these tests check your exercises.
// Chapter 02 (docs/02-averaging.md): the running mean by a loop (ex02.1), the lower-triangular
// averaging weights (ex02.2) and the same weights by a softmax of masked zeros (ex02.3).
// Expected values are worked out by hand or by plain double-precision loops in this file.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <utility>

#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"
#include "exercises.hpp"
#include "test_helpers.hpp"

namespace {

// Tolerances for float results compared with exact or double-precision values.
constexpr double kAtol = 1e-6;
constexpr double kRtol = 1e-6;

// 1 / (t + 1) on and below the diagonal, 0 above, computed in double.
attn::Matrix expected_weights(std::size_t T) {
  attn::Matrix w = xt::zeros<float>({T, T});
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t i = 0; i <= t; ++i)
      w(t, i) = static_cast<float>(1.0 / static_cast<double>(t + 1));
  }
  return w;
}

// Row t = mean of rows 0..t of x, accumulated in double.
attn::Matrix expected_running_mean(const attn::Matrix& x) {
  const std::size_t T = x.shape()[0];
  const std::size_t C = x.shape()[1];
  attn::Matrix out = xt::zeros<float>({T, C});
  for (std::size_t c = 0; c < C; ++c) {
    double sum = 0.0;
    for (std::size_t t = 0; t < T; ++t) {
      sum += static_cast<double>(x(t, c));
      out(t, c) = static_cast<float>(sum / static_cast<double>(t + 1));
    }
  }
  return out;
}

// (T, T) @ (T, C) in double, written out, to check that W really averages.
attn::Matrix product(const attn::Matrix& w, const attn::Matrix& x) {
  const std::size_t T = w.shape()[0];
  const std::size_t C = x.shape()[1];
  attn::Matrix out = xt::zeros<float>({T, C});
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t c = 0; c < C; ++c) {
      double sum = 0.0;
      for (std::size_t i = 0; i < w.shape()[1]; ++i) {
        sum += static_cast<double>(w(t, i)) * static_cast<double>(x(i, c));
      }
      out(t, c) = static_cast<float>(sum);
    }
  }
  return out;
}

// Checks the properties every averaging-weight matrix has: shape (T, T), finite entries,
// exact zeros above the diagonal, rows summing to 1.
void check_weight_properties(const attn::Matrix& w, std::size_t T) {
  REQUIRE(w.dimension() == 2);
  REQUIRE(w.shape()[0] == T);
  REQUIRE(w.shape()[1] == T);
  for (std::size_t t = 0; t < T; ++t) {
    double row_sum = 0.0;
    for (std::size_t i = 0; i < T; ++i) {
      CHECK_MESSAGE(std::isfinite(w(t, i)), "W(" << t << ", " << i << ") = " << w(t, i));
      if (i > t) CHECK_MESSAGE(w(t, i) == 0.0f, "W(" << t << ", " << i << ") is in the future");
      row_sum += static_cast<double>(w(t, i));
    }
    CHECK_MESSAGE(std::abs(row_sum - 1.0) < 1e-5, "row " << t << " sums to " << row_sum);
  }
}

}  // namespace

TEST_SUITE("ex02.1 Running mean by loop") {
TEST_CASE("a 3 by 2 example matches the means worked out by hand") {
  const attn::Matrix x = {{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 9.0f}};
  // (1+3)/2 = 2, (2+4)/2 = 3; (1+3+5)/3 = 3, (2+4+9)/3 = 5.
  const attn::Matrix want = {{1.0f, 2.0f}, {2.0f, 3.0f}, {3.0f, 5.0f}};
  CHECK_TENSOR_NEAR(ex02::running_mean_loop(x), want, kAtol, kRtol);
}

TEST_CASE("the output has the shape of the input") {
  const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1}, {5, 3}, {2, 7}};
  for (const auto& shape : shapes) {
    const std::size_t T = shape.first;
    const std::size_t C = shape.second;
    CAPTURE(T);
    CAPTURE(C);
    attn::Rng rng(7);
    const attn::Matrix xbar = ex02::running_mean_loop(attn::randn(rng, T, C));
    CHECK(xbar.shape()[0] == T);
    CHECK(xbar.shape()[1] == C);
  }
}

TEST_CASE("the first row equals the first token exactly") {
  attn::Rng rng(1337);
  const attn::Matrix x = attn::randn(rng, 8, 4);
  const attn::Matrix xbar = ex02::running_mean_loop(x);
  for (std::size_t c = 0; c < 4; ++c) CHECK(xbar(0, c) == x(0, c));
}

TEST_CASE("a constant sequence has itself as running mean") {
  const attn::Matrix x = xt::ones<float>({6, 3}) * 2.5f;
  CHECK_TENSOR_NEAR(ex02::running_mean_loop(x), x, kAtol, kRtol);
}

TEST_CASE("every row is the mean of its prefix, compared with a double-precision loop") {
  attn::Rng rng(42);
  const attn::Matrix x = attn::randn(rng, 33, 5);
  CHECK_TENSOR_NEAR(ex02::running_mean_loop(x), expected_running_mean(x), 1e-5, 1e-5);
}
}

TEST_SUITE("ex02.2 Lower-triangular averaging weights") {
TEST_CASE("the weights for T = 3 are 1, then 1/2 1/2, then 1/3 1/3 1/3") {
  const float third = 1.0f / 3.0f;
  const attn::Matrix want = {{1.0f, 0.0f, 0.0f}, {0.5f, 0.5f, 0.0f}, {third, third, third}};
  CHECK_TENSOR_NEAR(ex02::averaging_weights_tril(3), want, kAtol, kRtol);
}

TEST_CASE("T = 1 gives the 1 by 1 matrix [1]") {
  const attn::Matrix want = {{1.0f}};
  CHECK_TENSOR_NEAR(ex02::averaging_weights_tril(1), want, kAtol, kRtol);
}

TEST_CASE("row t holds 1/(t+1) on and below the diagonal and 0 above it") {
  for (std::size_t T : {2, 8, 50}) {
    CAPTURE(T);
    CHECK_TENSOR_NEAR(ex02::averaging_weights_tril(T), expected_weights(T), kAtol, kRtol);
  }
}

TEST_CASE("rows sum to 1 and the future gets exactly zero weight") {
  for (std::size_t T : {1, 5, 64}) {
    CAPTURE(T);
    check_weight_properties(ex02::averaging_weights_tril(T), T);
  }
}

TEST_CASE("multiplying the weights by x gives the running mean of x") {
  const attn::Matrix x = {{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 9.0f}};
  const attn::Matrix want = {{1.0f, 2.0f}, {2.0f, 3.0f}, {3.0f, 5.0f}};
  // (3, 3) @ (3, 2) -> (3, 2)
  CHECK_TENSOR_NEAR(product(ex02::averaging_weights_tril(3), x), want, kAtol, kRtol);
}
}

TEST_SUITE("ex02.3 Averaging weights by softmax of masked zeros") {
TEST_CASE("the weights for T = 3 are 1, then 1/2 1/2, then 1/3 1/3 1/3") {
  const float third = 1.0f / 3.0f;
  const attn::Matrix want = {{1.0f, 0.0f, 0.0f}, {0.5f, 0.5f, 0.0f}, {third, third, third}};
  CHECK_TENSOR_NEAR(ex02::averaging_weights_softmax(3), want, kAtol, kRtol);
}

TEST_CASE("future positions get weight exactly zero, never NaN") {
  for (std::size_t T : {1, 4, 64}) {
    CAPTURE(T);
    check_weight_properties(ex02::averaging_weights_softmax(T), T);
  }
}

TEST_CASE("the allowed positions share the weight equally") {
  const std::size_t T = 16;
  const attn::Matrix w = ex02::averaging_weights_softmax(T);
  REQUIRE(w.shape()[0] == T);
  REQUIRE(w.shape()[1] == T);
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t i = 1; i <= t; ++i) {
      CHECK(static_cast<double>(w(t, i)) == doctest::Approx(static_cast<double>(w(t, 0))));
    }
  }
}

TEST_CASE("the softmax weights equal 1/(t+1) below the diagonal, as ex02.2's do") {
  for (std::size_t T : {2, 8, 50}) {
    CAPTURE(T);
    CHECK_TENSOR_NEAR(ex02::averaging_weights_softmax(T), expected_weights(T), kAtol, kRtol);
  }
}
}
