// Tests for attn/ops/rmsnorm.hpp, RMSNorm (chapter 11): a hand example, a naive double loop, what
// sets it apart from LayerNorm (the mean is kept, a shift changes the output), and the backward by
// float64 central differences, which also catch a dx computed without gamma.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "attn/core/random.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/rmsnorm.hpp"
#include "gradcheck_helpers.hpp"
#include "test_helpers.hpp"

namespace {

using attn::testing::error_of;

using T3 = xt::xtensor<double, 3>;
using V64 = xt::xtensor<double, 1>;

// x / sqrt(mean(x^2) + eps) * gamma, row by row.
T3 naive_rms_norm(const T3& x, const V64& gamma, double eps) {
  T3 y = x;
  const std::size_t C = x.shape()[2];
  for (std::size_t b = 0; b < x.shape()[0]; ++b)
    for (std::size_t t = 0; t < x.shape()[1]; ++t) {
      double ms = 0.0;
      for (std::size_t j = 0; j < C; ++j) ms += x(b, t, j) * x(b, t, j) / static_cast<double>(C);
      for (std::size_t j = 0; j < C; ++j) y(b, t, j) = x(b, t, j) / std::sqrt(ms + eps) * gamma(j);
    }
  return y;
}

}  // namespace

TEST_SUITE("rmsnorm") {

TEST_CASE("hand example: [3, 4] has root-mean-square sqrt(12.5)") {
  const attn::Matrix x = {{3.0f, 4.0f}, {0.0f, 0.0f}};
  const attn::Vector gamma = {1.0f, 2.0f};
  const attn::Matrix y = attn::rms_norm<float, 2>(x, gamma, 0.0);
  CHECK(y(0, 0) == doctest::Approx(3.0 / std::sqrt(12.5)));
  CHECK(y(0, 1) == doctest::Approx(2.0 * 4.0 / std::sqrt(12.5)));
  // A zero token with eps 0 would divide by zero: with eps 1e-5 it stays exactly 0.
  const attn::Matrix z = attn::rms_norm<float, 2>(x, gamma, 1e-5);
  CHECK(z(1, 0) == 0.0f);
  CHECK(z(1, 1) == 0.0f);
}

TEST_CASE("equals a naive loop in double and in float, ranks 2, 3 and 4") {
  attn::Rng rng(21);
  const T3 x = attn::testing::randn64<3>(rng, {2, 5, 8}, 3.0);
  const V64 gamma = 1.0 + attn::testing::randn64<1>(rng, {8}, 0.1);
  const T3 want = naive_rms_norm(x, gamma, 1e-5);
  CHECK_TENSOR_NEAR((attn::rms_norm<double, 3>(x, gamma, 1e-5)), want, 1e-13, 1e-13);
  const attn::Tensor<3> xf = xt::cast<float>(x);
  const attn::Vector gf = xt::cast<float>(gamma);
  CHECK_TENSOR_NEAR((T3(xt::cast<double>(attn::rms_norm<float, 3>(xf, gf)))), want, 1e-6, 1e-5);
  const xt::xtensor<double, 2> x2 = xt::view(x, 1);
  const xt::xtensor<double, 2> want2 = xt::view(want, 1);
  CHECK_TENSOR_NEAR((attn::rms_norm<double, 2>(x2, gamma, 1e-5)), want2, 1e-13, 1e-13);
  // Rank 4 (B, H, T, C): the same rows.
  const xt::xtensor<double, 4> x4 = xt::reshape_view(x, {1, 2, 5, 8});
  const xt::xtensor<double, 4> want4 = xt::reshape_view(want, {1, 2, 5, 8});
  CHECK_TENSOR_NEAR((attn::rms_norm<double, 4>(x4, gamma, 1e-5)), want4, 1e-13, 1e-13);
}

TEST_CASE("unlike LayerNorm it keeps the mean: a shifted token gives another output") {
  attn::Rng rng(22);
  const attn::Matrix x = attn::randn(rng, 3, 6);
  const attn::Vector ones = xt::ones<float>({6});
  const attn::Matrix shifted = x + 2.0f;
  // LayerNorm forgets the shift; RMSNorm does not.
  CHECK_TENSOR_NEAR(attn::layer_norm<2>(shifted, ones, xt::zeros<float>({6})),
                    attn::layer_norm<2>(x, ones, xt::zeros<float>({6})), 1e-5, 1e-4);
  CHECK(xt::amax(xt::abs(attn::rms_norm<float, 2>(shifted, ones) -
                         attn::rms_norm<float, 2>(x, ones)))() > 0.1f);
  // On a zero-mean token the two agree (up to eps): RMSNorm is LayerNorm without the centring.
  const attn::Matrix centred = x - xt::view(xt::eval(xt::mean(x, {1})), xt::all(), xt::newaxis());
  CHECK_TENSOR_NEAR((attn::rms_norm<float, 2>(centred, ones)),
                    attn::layer_norm<2>(centred, ones, xt::zeros<float>({6})), 1e-5, 1e-4);
}

TEST_CASE("backward: float64 central differences agree; dx without gamma fails") {
  attn::Rng rng(23);
  T3 x = attn::testing::randn64<3>(rng, {2, 4, 6}, 2.0);
  V64 gamma = 1.0 + attn::testing::randn64<1>(rng, {6}, 0.5);
  const T3 r = attn::testing::randn64<3>(rng, {2, 4, 6});
  const double eps = 1e-3;
  auto loss = [&] { return attn::testing::dot64(attn::rms_norm<double, 3>(x, gamma, eps), r); };
  attn::RmsNormCache<double> cache;
  (void)attn::rms_norm<double, 3>(x, gamma, eps, cache);
  const attn::RmsNormGrads<double, 3> g = attn::rms_norm_backward<double, 3>(r, x, gamma, cache);
  attn::testing::check_grad64("rmsnorm", "x",
                              attn::testing::central_differences64<T3>(loss, x, g.dx));
  attn::testing::check_grad64("rmsnorm", "gamma",
                              attn::testing::central_differences64<V64>(loss, gamma, g.dgamma));
  // Wrong: the backward with gamma = 1 in dx (forgetting that y scales xhat by gamma).
  const V64 ones = xt::ones<double>({6});
  const auto no_gamma = attn::rms_norm_backward<double, 3>(r, x, ones, cache);
  attn::testing::check_grad64_caught(
      "rmsnorm", "x", attn::testing::central_differences64<T3>(loss, x, no_gamma.dx));
  // Wrong: LayerNorm's backward (it subtracts the mean of g, which RMSNorm never did).
  const attn::Tensor<3> xf = xt::cast<float>(x);
  const attn::Vector gf = xt::cast<float>(gamma);
  const auto ln = attn::layer_norm_backward<3>(attn::Tensor<3>(xt::cast<float>(r)), xf, gf, 1e-3f);
  attn::testing::check_grad64_caught(
      "rmsnorm", "x",
      attn::testing::central_differences64<T3>(loss, x, T3(xt::cast<double>(ln.dx))));
}

TEST_CASE("bad input: shapes and eps are one-line errors") {
  const attn::Matrix x = xt::zeros<float>({2, 4});
  const attn::Vector gamma3 = xt::ones<float>({3});
  CHECK(error_of([&] { (void)attn::rms_norm<float, 2>(x, gamma3); }) ==
        "attn::rms_norm: expected x (..., C) with C > 0 and gamma (C,), got x (2, 4), gamma (3,)");
  const attn::Vector gamma = xt::ones<float>({4});
  CHECK(error_of([&] {
          (void)attn::rms_norm<float, 2>(x, gamma, -1.0);
        }).starts_with("attn::rms_norm: eps must be a finite number >= 0, got -1"));
  attn::RmsNormCache<float> cache;
  (void)attn::rms_norm<float, 2>(x, gamma, 1e-5, cache);
  const attn::Matrix dy = xt::zeros<float>({3, 4});
  CHECK(error_of([&] {
          (void)attn::rms_norm_backward<float, 2>(dy, x, gamma, cache);
        }).starts_with("attn::rms_norm_backward: expected dy of the same shape as x (2, 4)"));
}

}  // TEST_SUITE
