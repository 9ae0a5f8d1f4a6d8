// Tests for attn/ops/layernorm.hpp, the reference LayerNorm over the last axis (chapter 06) and
// its backward (chapter 08). The fast kernels are tested against it in
// test_fast_layernorm_attention.cpp.
// Hand-computed rows first, then a double-precision reference, then the inputs that break a
// careless LayerNorm: constant rows (divide by zero) and large offsets (cancellation).
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/ops/layernorm.hpp"
#include "attn/core/random.hpp"
#include "attn/train/gradcheck.hpp"
#include "gradcheck_helpers.hpp"
#include "test_helpers.hpp"

namespace {

// (x - mean) / sqrt(var + eps) * gamma + beta, row by row, everything in double.
template <std::size_t N>
attn::Tensor<N> reference_layer_norm(const attn::Tensor<N>& x, const attn::Vector& gamma,
                                     const attn::Vector& beta, double eps = 1e-5) {
  attn::Tensor<N> y(x.shape());
  const std::size_t C = x.shape()[N - 1];
  for (std::size_t r = 0; r < x.size() / C; ++r) {
    const float* in = x.data() + r * C;
    double mean = 0.0;
    for (std::size_t j = 0; j < C; ++j) mean += static_cast<double>(in[j]);
    mean /= static_cast<double>(C);
    double var = 0.0;
    for (std::size_t j = 0; j < C; ++j) {
      const double d = static_cast<double>(in[j]) - mean;
      var += d * d;
    }
    var /= static_cast<double>(C);
    for (std::size_t j = 0; j < C; ++j) {
      const double n = (static_cast<double>(in[j]) - mean) / std::sqrt(var + eps);
      y.data()[r * C + j] =
          static_cast<float>(n * static_cast<double>(gamma(j)) + static_cast<double>(beta(j)));
    }
  }
  return y;
}

attn::Vector ones(std::size_t C) { return xt::ones<float>({C}); }
attn::Vector zeros(std::size_t C) { return xt::zeros<float>({C}); }

std::string message_of(const std::invalid_argument& e) { return e.what(); }

}  // namespace

TEST_SUITE("layernorm") {

TEST_CASE("hand examples: known mean and variance per row") {
  // Row 0: [1, 2, 3, 4], mean 2.5, var (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25.
  // Row 1: [2, 2, 2, 6], mean 3,   var (1 + 1 + 1 + 9) / 4 = 3.
  const attn::Matrix x = {{1.0f, 2.0f, 3.0f, 4.0f}, {2.0f, 2.0f, 2.0f, 6.0f}};
  const double s0 = std::sqrt(1.25 + 1e-5);
  const double s1 = std::sqrt(3.0 + 1e-5);
  const attn::Matrix want = {{static_cast<float>(-1.5 / s0), static_cast<float>(-0.5 / s0),
                              static_cast<float>(0.5 / s0), static_cast<float>(1.5 / s0)},
                             {static_cast<float>(-1.0 / s1), static_cast<float>(-1.0 / s1),
                              static_cast<float>(-1.0 / s1), static_cast<float>(3.0 / s1)}};
  const attn::Matrix y = attn::layer_norm<2>(x, ones(4), zeros(4));
  CHECK_TENSOR_NEAR(y, want, 1e-7, 1e-6);
  // The same numbers written out: 1.5 / sqrt(1.25001) = 1.34163542, 3 / sqrt(3.00001) = 1.73204792.
  CHECK(static_cast<double>(y(0, 3)) == doctest::Approx(1.34163542).epsilon(1e-7));
  CHECK(static_cast<double>(y(1, 3)) == doctest::Approx(1.73204792).epsilon(1e-7));
}

TEST_CASE("with gamma = 1 and beta = 0 every row has mean 0 and variance 1") {
  attn::Rng rng(5);
  const attn::Tensor<3> x = attn::randn<3>(rng, {3, 5, 64}, 3.0f) + 2.0f;
  const attn::Tensor<3> y = attn::layer_norm<3>(x, ones(64), zeros(64));
  for (std::size_t r = 0; r < 15; ++r) {
    double mean = 0.0, sq = 0.0;
    for (std::size_t j = 0; j < 64; ++j) mean += static_cast<double>(y.data()[r * 64 + j]);
    mean /= 64.0;
    for (std::size_t j = 0; j < 64; ++j) {
      const double d = static_cast<double>(y.data()[r * 64 + j]) - mean;
      sq += d * d;
    }
    CHECK(std::abs(mean) < 1e-6);
    // var(y) = var / (var + eps), just below 1 because of eps (var ~ 9 here).
    CHECK(sq / 64.0 == doctest::Approx(1.0).epsilon(1e-5));
  }
}

TEST_CASE("layer_norm matches a double-precision reference, with gamma and beta") {
  attn::Rng rng(17);
  SUBCASE("rank 2 (T, C), odd C") {
    const attn::Matrix x = attn::randn(rng, 7, 37, 2.0f);
    const attn::Vector gamma = attn::randn<1>(rng, {37});
    const attn::Vector beta = attn::randn<1>(rng, {37});
    CHECK_TENSOR_NEAR(attn::layer_norm<2>(x, gamma, beta), reference_layer_norm<2>(x, gamma, beta),
                      1e-6, 1e-6);
  }
  SUBCASE("rank 3 (B, T, C), a custom eps") {
    const attn::Tensor<3> x = attn::randn<3>(rng, {2, 3, 16}, 0.01f);
    const attn::Vector gamma = attn::randn<1>(rng, {16});
    const attn::Vector beta = attn::randn<1>(rng, {16});
    // With var ~ 1e-4, eps = 1e-3 changes the result a lot: the eps must really be used.
    CHECK_TENSOR_NEAR(attn::layer_norm<3>(x, gamma, beta, 1e-3f),
                      reference_layer_norm<3>(x, gamma, beta, static_cast<double>(1e-3f)), 1e-6,
                      1e-6);
  }
}

TEST_CASE("gamma scales and beta shifts each feature") {
  // Row [1, 2, 3, 4] normalises to n = [-1.5, -0.5, 0.5, 1.5] / s; y_j = gamma_j n_j + beta_j.
  const attn::Matrix x = {{1.0f, 2.0f, 3.0f, 4.0f}};
  const attn::Vector gamma = {2.0f, -1.0f, 0.5f, 0.0f};
  const attn::Vector beta = {0.0f, 1.0f, -3.0f, 7.0f};
  const double s = std::sqrt(1.25 + 1e-5);
  const attn::Matrix want = {{static_cast<float>(2.0 * -1.5 / s),
                              static_cast<float>(-1.0 * -0.5 / s + 1.0),
                              static_cast<float>(0.5 * 0.5 / s - 3.0), 7.0f}};
  CHECK_TENSOR_NEAR(attn::layer_norm<2>(x, gamma, beta), want, 1e-7, 1e-6);
}

TEST_CASE("a constant row gives beta, not NaN") {
  // var = 0: without eps this would be 0 / 0.
  const attn::Matrix x = {{7.0f, 7.0f, 7.0f}, {1e4f, 1e4f, 1e4f}, {0.0f, 0.0f, 0.0f}};
  const attn::Vector gamma = {1.0f, 2.0f, 3.0f};
  const attn::Vector beta = {0.5f, -0.25f, 0.0f};
  const attn::Matrix y = attn::layer_norm<2>(x, gamma, beta);
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t j = 0; j < 3; ++j) CHECK(y(r, j) == beta(j));
}

TEST_CASE("eps keeps a tiny variance from blowing up") {
  // [0, 1e-4]: mean 5e-5, var 2.5e-9, far below eps = 1e-5. y = -+5e-5 / sqrt(1.00025e-5):
  // +-0.0158, not +-1 (which would amplify noise 20000 times).
  const attn::Matrix x = {{0.0f, 1e-4f}};
  const double d = static_cast<double>(1e-4f) / 2.0;
  const double s = std::sqrt(d * d + 1e-5);
  const attn::Matrix want = {{static_cast<float>(-d / s), static_cast<float>(d / s)}};
  CHECK_TENSOR_NEAR(attn::layer_norm<2>(x, ones(2), zeros(2)), want, 1e-7, 1e-6);
  CHECK(std::abs(want(0, 1) - 0.0158094f) < 1e-6f);
}

TEST_CASE("large offsets: 1e4 + small noise is normalised accurately") {
  // E[x^2] - E[x]^2 in float would be 1e8 - 1e8 = noise; so would a float mean (5e6 sum).
  attn::Rng rng(23);
  SUBCASE("noise 1e-2 around 1e4") {
    const attn::Matrix x = attn::randn(rng, 6, 512, 0.01f) + 1e4f;
    CHECK_TENSOR_NEAR(attn::layer_norm<2>(x, ones(512), zeros(512)),
                      reference_layer_norm<2>(x, ones(512), zeros(512)), 1e-5, 1e-5);
  }
  SUBCASE("noise 1 around -3e4") {
    const attn::Matrix x = attn::randn(rng, 6, 100, 1.0f) - 3e4f;
    CHECK_TENSOR_NEAR(attn::layer_norm<2>(x, ones(100), zeros(100)),
                      reference_layer_norm<2>(x, ones(100), zeros(100)), 1e-6, 1e-6);
  }
}

TEST_CASE("no rows in, no rows out") {
  const attn::Tensor<3> x(attn::Tensor<3>::shape_type{0, 4, 8});
  const attn::Tensor<3> y = attn::layer_norm<3>(x, ones(8), zeros(8));
  CHECK(y.shape()[0] == 0);
  CHECK(y.shape()[2] == 8);
}

TEST_CASE("mismatched gamma, beta or eps are rejected with the shapes named") {
  const attn::Tensor<3> x = xt::zeros<float>({2, 3, 8});
  SUBCASE("gamma of the wrong size") {
    try {
      (void)attn::layer_norm<3>(x, ones(4), zeros(8));
      FAIL("expected std::invalid_argument");
    } catch (const std::invalid_argument& e) {
      CHECK(message_of(e) ==
            "attn::layer_norm: expected x (..., C) with C > 0, gamma (C,) and beta (C,), got x "
            "(2, 3, 8), gamma (4,), beta (8,)");
    }
  }
  SUBCASE("beta of the wrong size") {
    CHECK_THROWS_AS((void)attn::layer_norm<3>(x, ones(8), zeros(9)), std::invalid_argument);
  }
  SUBCASE("an empty last axis") {
    const attn::Matrix empty(attn::Matrix::shape_type{3, 0});
    CHECK_THROWS_AS((void)attn::layer_norm<2>(empty, ones(0), zeros(0)), std::invalid_argument);
  }
  SUBCASE("a negative eps") {
    CHECK_THROWS_WITH_AS((void)attn::layer_norm<3>(x, ones(8), zeros(8), -1.0f),
                         doctest::Contains("eps must be >= 0"), std::invalid_argument);
  }
}

}  // TEST_SUITE

TEST_SUITE("layernorm.backward") {

using attn::testing::check_gradients;
using attn::testing::cspan_of;
using attn::testing::span_of;
using attn::testing::upstream;

// h = 1e-3: with C = 2 a token's two values can be close, and LayerNorm (which maps them to
// about +-1) is then steep: a step of 1e-2 would see its curvature.
TEST_CASE("layer_norm_backward matches central differences for x, gamma, beta") {
  attn::Rng rng(91);
  for (std::size_t C : {1, 2, 7}) {
    attn::Tensor<3> x = attn::randn<3>(rng, {2, 3, C}, 1.5f);
    attn::Vector gamma = attn::randn<1>(rng, {C});
    attn::Vector beta = attn::randn<1>(rng, {C});
    const attn::Tensor<3> r = upstream(x, 6);
    const attn::LayerNormGrads<3> g = attn::layer_norm_backward<3>(r, x, gamma);
    check_gradients("layer_norm C=" + std::to_string(C),
                    attn::grad_check(
                        [&] {
                          return attn::weighted_sum(cspan_of(attn::layer_norm<3>(x, gamma, beta)),
                                                    cspan_of(r));
                        },
                        {{"x", span_of(x), cspan_of(g.dx)},
                         {"gamma", span_of(gamma), cspan_of(g.dgamma)},
                         {"beta", span_of(beta), cspan_of(g.dbeta)}},
                        {.h = 1e-3}));
  }
}

TEST_CASE("layer_norm_backward keeps its precision for tokens far from zero (rank 2)") {
  // Tokens near 1e4 with a spread of 0.01: the relative gradient must not suffer from the offset.
  // The reference: the same data shifted to 0 (LayerNorm is shift-invariant, and so is dx).
  attn::Rng rng(92);
  const attn::Matrix small = attn::randn<2>(rng, {4, 16}, 0.01f);
  const attn::Matrix big = small + 1e4f;
  const attn::Vector gamma = attn::randn<1>(rng, {16});
  const attn::Matrix dy = attn::randn<2>(rng, {4, 16});
  const attn::LayerNormGrads<2> g_big = attn::layer_norm_backward<2>(dy, big, gamma);
  const attn::Matrix shifted = big - 1e4f;  // the float values actually held, shifted exactly
  const attn::LayerNormGrads<2> g_ref = attn::layer_norm_backward<2>(dy, shifted, gamma);
  CHECK_TENSOR_NEAR(g_big.dx, g_ref.dx, 1e-3 * static_cast<double>(xt::amax(xt::abs(g_ref.dx))()),
                    1e-3);
  CHECK_TENSOR_NEAR(g_big.dgamma, g_ref.dgamma, 1e-4, 1e-3);
}

TEST_CASE("the cache forward fills mean and rstd and gives the same output") {
  attn::Rng rng(93);
  const attn::Tensor<3> x = attn::randn<3>(rng, {2, 3, 5});
  const attn::Vector gamma = attn::randn<1>(rng, {5});
  const attn::Vector beta = attn::randn<1>(rng, {5});
  attn::LayerNormCache cache;
  const attn::Tensor<3> y = attn::layer_norm<3>(x, gamma, beta, 1e-5f, cache);
  CHECK_TENSOR_NEAR(y, attn::layer_norm<3>(x, gamma, beta), 0.0, 0.0);
  REQUIRE(cache.mean.size() == 6);
  for (std::size_t r = 0; r < 6; ++r) {
    double m = 0.0, v = 0.0;
    for (std::size_t j = 0; j < 5; ++j) m += static_cast<double>(x.data()[r * 5 + j]);
    m /= 5.0;
    for (std::size_t j = 0; j < 5; ++j) {
      const double d = static_cast<double>(x.data()[r * 5 + j]) - m;
      v += d * d;
    }
    v /= 5.0;
    CHECK(cache.mean(r) == doctest::Approx(m).epsilon(1e-6));
    CHECK(cache.rstd(r) == doctest::Approx(1.0 / std::sqrt(v + 1e-5)).epsilon(1e-6));
  }
  // Accumulation: two backward calls double dgamma and dbeta, dx is overwritten.
  const attn::Tensor<3> dy = attn::randn<3>(rng, {2, 3, 5});
  attn::Tensor<3> dx;
  attn::Vector dg = xt::zeros<float>({5}), db = xt::zeros<float>({5});
  attn::layer_norm_backward<3>(dy, x, gamma, cache, dx, dg, db);
  attn::layer_norm_backward<3>(dy, x, gamma, cache, dx, dg, db);
  const attn::LayerNormGrads<3> once = attn::layer_norm_backward<3>(dy, x, gamma);
  CHECK_TENSOR_NEAR(dx, once.dx, 0.0, 0.0);
  CHECK_TENSOR_NEAR(dg, attn::Vector(2.0f * once.dgamma), 1e-6, 1e-6);
  CHECK_TENSOR_NEAR(db, attn::Vector(2.0f * once.dbeta), 1e-6, 1e-6);
}

TEST_CASE("layer_norm_backward names bad shapes") {
  const attn::Tensor<3> x = xt::ones<float>({2, 3, 4});
  const attn::Vector gamma = xt::ones<float>({4});
  using E = std::invalid_argument;
  CHECK_THROWS_WITH_AS(
      attn::layer_norm_backward<3>(attn::Tensor<3>(xt::ones<float>({2, 3, 5})), x, gamma),
      "attn::layer_norm_backward: expected dy of the same shape as x (2, 3, 4), got dy (2, 3, 5)",
      E);
  CHECK_THROWS_WITH_AS(attn::layer_norm_backward<3>(x, x, attn::Vector(xt::ones<float>({3}))),
                       "attn::layer_norm_backward: expected x (..., C) with C > 0 and gamma (C,), "
                       "got x (2, 3, 4), gamma (3,)",
                       E);
  attn::LayerNormCache stale;  // not filled by a forward
  attn::Tensor<3> dx;
  attn::Vector dg = xt::zeros<float>({4}), db = xt::zeros<float>({4});
  CHECK_THROWS_WITH_AS(attn::layer_norm_backward<3>(x, x, gamma, stale, dx, dg, db),
                       "attn::layer_norm_backward: expected a cache from the forward of x (2, 3, "
                       "4): rstd (6,), got rstd (0,)",
                       E);
}

}  // TEST_SUITE

TEST_SUITE("layernorm.backward") {

TEST_CASE("a wrong LayerNorm gradient is caught: the unbiased variance (C - 1) in the backward") {
  // The classic slip: rstd from var = sum (x - mean)^2 / (C - 1) in the backward, while the
  // forward (like PyTorch) divides by C. Everything else is the correct three-term formula.
  attn::Rng rng(94);
  const std::size_t C = 8;
  attn::Tensor<2> x = attn::randn<2>(rng, {3, C});
  attn::Vector gamma = attn::randn<1>(rng, {C});
  attn::Vector beta = attn::randn<1>(rng, {C});
  const attn::Tensor<2> r = attn::testing::upstream(x, 8);
  attn::Tensor<2> dx(x.shape());
  attn::Vector dgamma = xt::zeros<float>({C});
  for (std::size_t row = 0; row < 3; ++row) {
    double mean = 0.0, ss = 0.0;
    for (std::size_t j = 0; j < C; ++j) mean += static_cast<double>(x(row, j));
    mean /= static_cast<double>(C);
    for (std::size_t j = 0; j < C; ++j)
      ss += (static_cast<double>(x(row, j)) - mean) * (static_cast<double>(x(row, j)) - mean);
    const double rstd = 1.0 / std::sqrt(ss / static_cast<double>(C - 1) + 1e-5);  // the bug
    double a = 0.0, b = 0.0;
    for (std::size_t j = 0; j < C; ++j) {
      const double xhat = (static_cast<double>(x(row, j)) - mean) * rstd;
      const double g = static_cast<double>(gamma(j)) * static_cast<double>(r(row, j));
      a += g / static_cast<double>(C);
      b += g * xhat / static_cast<double>(C);
      dgamma(j) += static_cast<float>(static_cast<double>(r(row, j)) * xhat);
    }
    for (std::size_t j = 0; j < C; ++j) {
      const double xhat = (static_cast<double>(x(row, j)) - mean) * rstd;
      const double g = static_cast<double>(gamma(j)) * static_cast<double>(r(row, j));
      dx(row, j) = static_cast<float>(rstd * (g - a - xhat * b));
    }
  }
  using attn::testing::cspan_of;
  using attn::testing::span_of;
  auto loss = [&] {
    return attn::weighted_sum(cspan_of(attn::layer_norm<2>(x, gamma, beta)), cspan_of(r));
  };
  attn::testing::check_caught(
      "layer_norm unbiased variance",
      attn::grad_check(
          loss, {{"x", span_of(x), cspan_of(dx)}, {"gamma", span_of(gamma), cspan_of(dgamma)}}));
  // The library's own backward passes the same check.
  const attn::LayerNormGrads<2> g = attn::layer_norm_backward<2>(r, x, gamma);
  attn::testing::check_gradients(
      "layer_norm (rank 2)",
      attn::grad_check(loss, {{"x", span_of(x), cspan_of(g.dx)},
                              {"gamma", span_of(gamma), cspan_of(g.dgamma)}}));
}

}  // TEST_SUITE
