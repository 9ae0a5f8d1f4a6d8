// Tests for attn/ops/softmax.hpp: the stable softmax every chapter relies on (chapter 03).
// Each result is compared with an independent reference computed in double precision, plus the
// cases that break a careless softmax: huge logits, -inf entries, rows that are all -inf, NaN.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/ops/softmax.hpp"
#include "attn/train/gradcheck.hpp"
#include "gradcheck_helpers.hpp"
#include "test_helpers.hpp"

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The textbook formula in double, row by row over the last axis: exp(z) / sum exp(z). Random
// normal logits are small, so double needs no max shift here.
template <std::size_t N>
attn::Tensor<N> reference_softmax(const attn::Tensor<N>& x) {
  attn::Tensor<N> out(x.shape());
  const std::size_t C = x.shape()[N - 1];
  for (std::size_t r = 0; r < x.size() / C; ++r) {
    double sum = 0.0;
    for (std::size_t j = 0; j < C; ++j) sum += std::exp(static_cast<double>(x.data()[r * C + j]));
    for (std::size_t j = 0; j < C; ++j)
      out.data()[r * C + j] =
          static_cast<float>(std::exp(static_cast<double>(x.data()[r * C + j])) / sum);
  }
  return out;
}

template <std::size_t N>
void check_against_reference(const std::array<std::size_t, N>& shape) {
  attn::Rng rng(7);
  const attn::Tensor<N> x = attn::randn<N>(rng, shape, 3.0f);
  CHECK_TENSOR_NEAR(attn::softmax<N>(x), reference_softmax<N>(x), 1e-7, 1e-5);
}

}  // namespace

TEST_SUITE("softmax") {

TEST_CASE("softmax matches a double-precision reference for every rank") {
  SUBCASE("rank 1 (V,)") { check_against_reference<1>({65}); }
  SUBCASE("rank 2 (T, T)") { check_against_reference<2>({8, 8}); }
  SUBCASE("rank 3 (B, T, T)") { check_against_reference<3>({4, 5, 7}); }
  SUBCASE("rank 4 (B, H, T, T)") { check_against_reference<4>({2, 3, 6, 6}); }
}

TEST_CASE("every row is a probability distribution") {
  attn::Rng rng(11);
  const attn::Tensor<3> x = attn::randn<3>(rng, {3, 4, 50}, 5.0f);
  const attn::Tensor<3> p = attn::softmax<3>(x);
  for (std::size_t r = 0; r < 12; ++r) {
    double sum = 0.0;
    for (std::size_t j = 0; j < 50; ++j) {
      const float v = p.data()[r * 50 + j];
      CHECK(v >= 0.0f);
      CHECK(v <= 1.0f);
      sum += static_cast<double>(v);
    }
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
  }
}

TEST_CASE("adding the same constant to a row changes nothing") {
  attn::Rng rng(3);
  const attn::Matrix x = attn::randn(rng, 5, 9);
  const attn::Matrix shifted = x + 10.0f;
  CHECK_TENSOR_NEAR(attn::softmax<2>(shifted), attn::softmax<2>(x), 1e-6, 1e-5);
}

TEST_CASE("large logits are stable, where the naive formula overflows to NaN") {
  const attn::Vector z = {1000.0f, 1001.0f};
  const attn::Vector want = {0.26894142f, 0.73105858f};
  CHECK_TENSOR_NEAR(attn::softmax<1>(z), want, 1e-6, 0.0);
  const attn::Vector naive = attn::softmax_naive<1>(z);
  CHECK(std::isnan(naive(0)));  // exp(1000) = inf, inf / inf = NaN
  CHECK(std::isnan(naive(1)));
}

TEST_CASE("the naive softmax is right while the logits are small") {
  attn::Rng rng(5);
  const attn::Matrix x = attn::randn(rng, 4, 6);
  CHECK_TENSOR_NEAR(attn::softmax_naive<2>(x), reference_softmax<2>(x), 1e-7, 1e-5);
}

TEST_CASE("-inf entries get weight exactly 0") {
  const attn::Vector z = {0.0f, -kInf, 0.0f, -kInf};
  const attn::Vector p = attn::softmax<1>(z);
  CHECK(p(0) == doctest::Approx(0.5));
  CHECK(p(1) == 0.0f);
  CHECK(p(2) == doctest::Approx(0.5));
  CHECK(p(3) == 0.0f);
}

TEST_CASE("a row that is entirely -inf gives zeros, not NaN, and leaves other rows alone") {
  attn::Matrix x = {{-kInf, -kInf, -kInf}, {1.0f, 2.0f, 3.0f}};
  const attn::Matrix p = attn::softmax<2>(x);
  for (std::size_t j = 0; j < 3; ++j) CHECK(p(0, j) == 0.0f);
  const attn::Matrix want = {{0.0f, 0.0f, 0.0f}, {0.09003057f, 0.24472847f, 0.66524096f}};
  CHECK_TENSOR_NEAR(p, want, 1e-7, 1e-6);
}

TEST_CASE("a NaN in a row makes the row NaN instead of being hidden") {
  const attn::Vector z = {-kInf, std::numeric_limits<float>::quiet_NaN(), 1.0f};
  const attn::Vector p = attn::softmax<1>(z);
  for (std::size_t j = 0; j < 3; ++j) CHECK(std::isnan(p(j)));
}

TEST_CASE("softmax_rows works in place on a raw buffer") {
  std::vector<float> data = {1.0f, 2.0f, 3.0f, 0.0f, 0.0f, 0.0f};  // 2 rows of 3
  attn::softmax_rows(data.data(), 2, 3);
  CHECK(data[0] == doctest::Approx(0.09003057));
  CHECK(data[2] == doctest::Approx(0.66524096));
  CHECK(data[3] == doctest::Approx(1.0 / 3.0));
  attn::softmax_rows(nullptr, 0, 3);  // no rows: nothing to do
}

TEST_CASE("log_softmax is the log of softmax, computed stably") {
  attn::Rng rng(9);
  const attn::Matrix x = attn::randn(rng, 6, 10, 2.0f);
  const attn::Matrix ref = reference_softmax<2>(x);
  attn::Matrix log_ref(ref.shape());
  for (std::size_t i = 0; i < ref.size(); ++i)
    log_ref.data()[i] = static_cast<float>(std::log(static_cast<double>(ref.data()[i])));
  CHECK_TENSOR_NEAR(attn::log_softmax<2>(x), log_ref, 1e-6, 1e-5);

  SUBCASE("large logits") {
    const attn::Vector z = {1000.0f, 1001.0f};
    const attn::Vector want = {-1.31326169f, -0.31326169f};
    CHECK_TENSOR_NEAR(attn::log_softmax<1>(z), want, 1e-6, 0.0);
  }
  SUBCASE("a probability too small for float is still a finite log-probability") {
    const attn::Vector z = {0.0f, -200.0f};  // softmax gives exactly 0 for the second entry
    CHECK(attn::softmax<1>(z)(1) == 0.0f);
    const attn::Vector want = {0.0f, -200.0f};
    CHECK_TENSOR_NEAR(attn::log_softmax<1>(z), want, 1e-6, 1e-6);
  }
  SUBCASE("-inf stays -inf, and a row of -inf stays -inf") {
    const attn::Matrix z = {{0.0f, -kInf}, {-kInf, -kInf}};
    const attn::Matrix l = attn::log_softmax<2>(z);
    CHECK(l(0, 0) == 0.0f);
    CHECK(l(0, 1) == -kInf);
    CHECK(l(1, 0) == -kInf);
    CHECK(l(1, 1) == -kInf);
  }
}

TEST_CASE("an empty last axis is an error naming the function and the shape") {
  const attn::Matrix empty(attn::Matrix::shape_type{3, 0});
  CHECK_THROWS_WITH_AS(attn::softmax<2>(empty),
                       "attn::softmax: expected a non-empty last axis, got shape (3, 0)",
                       std::invalid_argument);
  CHECK_THROWS_AS(attn::softmax_naive<2>(empty), std::invalid_argument);
  CHECK_THROWS_AS(attn::log_softmax<2>(empty), std::invalid_argument);
  const attn::Vector v(attn::Vector::shape_type{0});
  CHECK_THROWS_WITH_AS(attn::softmax<1>(v),
                       "attn::softmax: expected a non-empty last axis, got shape (0,)",
                       std::invalid_argument);
}

}  // TEST_SUITE

TEST_SUITE("softmax.backward") {

using attn::testing::check_gradients;
using attn::testing::cspan_of;
using attn::testing::span_of;
using attn::testing::upstream;

TEST_CASE("softmax_backward matches central differences at every rank and odd sizes") {
  attn::Rng rng(81);
  auto check = [&](auto x, const char* op) {
    constexpr std::size_t N = decltype(x)::rank;
    const auto r = upstream(x, 7);
    const auto dx = attn::softmax_backward<N>(attn::softmax<N>(x), r);
    check_gradients(
        op, attn::grad_check(
                [&] { return attn::weighted_sum(cspan_of(attn::softmax<N>(x)), cspan_of(r)); },
                {{"x", span_of(x), cspan_of(dx)}}));
  };
  check(attn::randn<1>(rng, {1}, 2.0f), "softmax (1,)");
  check(attn::randn<1>(rng, {7}, 2.0f), "softmax (7,)");
  check(attn::randn<2>(rng, {3, 5}, 2.0f), "softmax (3,5)");
  check(attn::randn<3>(rng, {2, 1, 3}, 2.0f), "softmax (2,1,3)");
  check(attn::randn<4>(rng, {1, 2, 3, 4}, 2.0f), "softmax (1,2,3,4)");
}

TEST_CASE("softmax_backward is the Jacobian-vector product y (dy - sum dy y)") {
  // Hand values: y = (0.25, 0.75), dy = (1, 0): sum dy y = 0.25, dx = (0.25 * 0.75, -0.75 * 0.25).
  const attn::Vector y = {0.25f, 0.75f};
  const attn::Vector dy = {1.0f, 0.0f};
  const attn::Vector dx = attn::softmax_backward<1>(y, dy);
  CHECK(dx(0) == doctest::Approx(0.1875));
  CHECK(dx(1) == doctest::Approx(-0.1875));
  // A constant dy changes nothing (softmax is shift-invariant): dx = 0.
  const attn::Vector dx0 = attn::softmax_backward<1>(y, attn::Vector{3.0f, 3.0f});
  CHECK(std::abs(dx0(0)) < 1e-7f);
  CHECK(std::abs(dx0(1)) < 1e-7f);
}

TEST_CASE("softmax_rows_backward may write over dy, and zeros stay zeros") {
  std::vector<float> y = {0.5f, 0.5f, 0.0f, 1.0f, 0.0f, 0.0f};
  std::vector<float> dy = {1.0f, 2.0f, 5.0f, 1.0f, -3.0f, 4.0f};
  attn::softmax_rows_backward(y.data(), dy.data(), dy.data(), 2, 3);
  CHECK(dy[0] == doctest::Approx(-0.25));
  CHECK(dy[1] == doctest::Approx(0.25));
  CHECK(dy[2] == 0.0f);  // y = 0: masked, no gradient
  CHECK(dy[3] == 0.0f);  // a one-hot row is saturated: no gradient at all
  CHECK(dy[4] == 0.0f);
  CHECK(dy[5] == 0.0f);
}

TEST_CASE("softmax_backward names mismatched shapes") {
  const attn::Matrix y = xt::zeros<float>({2, 3});
  const attn::Matrix dy = xt::zeros<float>({3, 2});
  CHECK_THROWS_WITH_AS(
      attn::softmax_backward<2>(y, dy),
      "attn::softmax_backward: expected dy of the same shape as y (2, 3), got dy (3, 2)",
      std::invalid_argument);
}

}  // TEST_SUITE
