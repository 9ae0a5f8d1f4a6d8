// Tests for attn/ops/averaging.hpp: the mathematical trick behind attention (chapter 02).
// The three ways to average the past must agree; the weight matrices must be lower triangular
// with rows summing to 1; a hand-worked example pins down what "average of the past" means.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

#include "attn/ops/averaging.hpp"
#include "attn/core/random.hpp"
#include "test_helpers.hpp"

TEST_SUITE("averaging") {

TEST_CASE("row t is the mean of rows 0..t, worked by hand") {
  const attn::Matrix x = {{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 9.0f}};
  const attn::Matrix want = {{1.0f, 2.0f}, {2.0f, 3.0f}, {3.0f, 5.0f}};
  CHECK_TENSOR_NEAR(attn::running_mean_loop(x), want, 1e-7, 0.0);
  CHECK_TENSOR_NEAR(attn::running_mean_matmul(x), want, 1e-6, 0.0);
  CHECK_TENSOR_NEAR(attn::running_mean_softmax(x), want, 1e-6, 0.0);
}

TEST_CASE("the loop, the tril matmul and the softmax way agree") {
  attn::Rng rng(1337);
  for (const auto [T, C] :
       {std::array<std::size_t, 2>{1, 1}, {3, 2}, {8, 2}, {8, 32}, {16, 5}, {64, 16}}) {
    const attn::Matrix x = attn::randn(rng, T, C);
    const attn::Matrix loop = attn::running_mean_loop(x);
    const attn::Matrix by_matmul = attn::running_mean_matmul(x);
    const attn::Matrix by_softmax = attn::running_mean_softmax(x);
    CAPTURE(T);
    CAPTURE(C);
    CHECK(xt::amax(xt::abs(loop - by_matmul))() < 1e-6f);
    CHECK(xt::amax(xt::abs(loop - by_softmax))() < 1e-6f);
    CHECK(xt::amax(xt::abs(by_matmul - by_softmax))() < 1e-6f);
  }
}

TEST_CASE("the weights are lower triangular with rows summing to 1") {
  for (const std::size_t T : {1u, 2u, 5u, 8u}) {
    const attn::Matrix tril = attn::averaging_weights_tril(T);
    const attn::Matrix soft = attn::averaging_weights_softmax(T);
    CAPTURE(T);
    for (std::size_t t = 0; t < T; ++t) {
      double sum_tril = 0.0;
      double sum_soft = 0.0;
      for (std::size_t s = 0; s < T; ++s) {
        if (s > t) {
          CHECK(tril(t, s) == 0.0f);  // exactly: the future gets no weight at all
          CHECK(soft(t, s) == 0.0f);
        } else {
          CHECK(tril(t, s) == doctest::Approx(1.0 / static_cast<double>(t + 1)));
        }
        sum_tril += static_cast<double>(tril(t, s));
        sum_soft += static_cast<double>(soft(t, s));
      }
      CHECK(sum_tril == doctest::Approx(1.0).epsilon(1e-6));
      CHECK(sum_soft == doctest::Approx(1.0).epsilon(1e-6));
    }
    CHECK_TENSOR_NEAR(soft, tril, 1e-7, 1e-6);
  }
}

TEST_CASE("an empty sequence is an error") {
  CHECK_THROWS_WITH_AS(attn::averaging_weights_tril(0),
                       "attn::averaging_weights_tril: T must be at least 1, got 0",
                       std::invalid_argument);
  CHECK_THROWS_AS(attn::averaging_weights_softmax(0), std::invalid_argument);
  const attn::Matrix empty(attn::Matrix::shape_type{0, 2});
  CHECK_THROWS_WITH_AS(
      attn::running_mean_loop(empty),
      "attn::running_mean_loop: expected x of shape (T, C) with T >= 1, got (0, 2)",
      std::invalid_argument);
  CHECK_THROWS_AS(attn::running_mean_matmul(empty), std::invalid_argument);
  CHECK_THROWS_AS(attn::running_mean_softmax(empty), std::invalid_argument);
}

}  // TEST_SUITE
