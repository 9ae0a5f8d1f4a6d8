// Don't edit: these tests check your exercises.
// tests/exercises/ch06_test.cpp: chapter 06 (the transformer block). Every expected value is
// worked out by hand or by a plain double-precision loop below, never by the attn:: function the
// exercise mirrors. Run them with build/default/bin/attn-check 06.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <vector>

#include "attn/ops/ffn.hpp"
#include "exercises.hpp"
#include "test_fixtures.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Matrix;
using attn::Tensor;
using attn::Vector;
using Double3 = xt::xtensor<double, 3>;

// Fixed numbers with no visible pattern, the same on every machine (tests/test_fixtures.hpp).
using attn::testing::wiggle;
using attn::testing::wiggly1;
using attn::testing::wiggly2;
using attn::testing::wiggly3;

bool has_nan(const Tensor<3>& x) {
  for (const float v : x)
    if (std::isnan(v)) return true;
  return false;
}

// ---------------------------------------------------------------------------------------------
// A transformer block written out in double precision, one loop per formula.

double gelu_exact(double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }

double gelu_tanh(double v) {
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  return 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
}

double activation_by_hand(double v, attn::Activation a) {
  switch (a) {
    case attn::Activation::relu:
      return v > 0.0 ? v : 0.0;
    case attn::Activation::gelu:
      return gelu_exact(v);
    case attn::Activation::gelu_tanh:
      return gelu_tanh(v);
  }
  return v;
}

Double3 to_double(const Tensor<3>& x) { return xt::cast<double>(x); }

Tensor<3> to_float(const Double3& x) { return xt::cast<float>(x); }

// (B, T, C) -> (B, T, C): mean and biased variance over c, per token.
Double3 layer_norm_by_hand(const Double3& x, const Vector& gamma, const Vector& beta,
                           double eps = 1e-5) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  Double3 y({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      double mean = 0.0;
      for (std::size_t c = 0; c < C; ++c) mean += x(b, t, c);
      mean /= static_cast<double>(C);
      double var = 0.0;
      for (std::size_t c = 0; c < C; ++c) var += (x(b, t, c) - mean) * (x(b, t, c) - mean);
      var /= static_cast<double>(C);
      for (std::size_t c = 0; c < C; ++c)
        y(b, t, c) = (x(b, t, c) - mean) / std::sqrt(var + eps) * static_cast<double>(gamma(c)) +
                     static_cast<double>(beta(c));
    }
  return y;
}

// (B, T, in) @ (in, out) [+ (out,)] -> (B, T, out).
Double3 linear_by_hand(const Double3& x, const Matrix& w, const Vector* bias = nullptr) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], in = x.shape()[2], out = w.shape()[1];
  Double3 y({B, T, out});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t o = 0; o < out; ++o) {
        double sum = bias != nullptr ? static_cast<double>((*bias)(o)) : 0.0;
        for (std::size_t i = 0; i < in; ++i) sum += x(b, t, i) * static_cast<double>(w(i, o));
        y(b, t, o) = sum;
      }
  return y;
}

Double3 ffn_by_hand(const Double3& x, const attn::FfnWeights& w, attn::Activation a) {
  Double3 h = linear_by_hand(x, w.w1, &w.b1);  // (B, T, F)
  for (double& v : h) v = activation_by_hand(v, a);
  return linear_by_hand(h, w.w2, &w.b2);  // (B, T, C)
}

// Multi-head self-attention: head h owns columns [h hs, (h + 1) hs) of q, k and v.
Double3 mha_by_hand(const Double3& x, const attn::MhaWeights& w, std::size_t H, bool causal) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2], hs = C / H;
  const Double3 q = linear_by_hand(x, w.w_q);
  const Double3 k = linear_by_hand(x, w.w_k);
  const Double3 v = linear_by_hand(x, w.w_v);
  Double3 merged = xt::zeros<double>({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t) {
        const std::size_t keys = causal ? t + 1 : T;
        std::vector<double> score(keys);
        double m = -1e300;
        for (std::size_t s = 0; s < keys; ++s) {
          double dot = 0.0;
          for (std::size_t d = 0; d < hs; ++d) dot += q(b, t, h * hs + d) * k(b, s, h * hs + d);
          score[s] = dot / std::sqrt(static_cast<double>(hs));
          m = std::max(m, score[s]);
        }
        double sum = 0.0;
        for (double& s : score) sum += (s = std::exp(s - m));
        for (std::size_t s = 0; s < keys; ++s)
          for (std::size_t d = 0; d < hs; ++d)
            merged(b, t, h * hs + d) += score[s] / sum * v(b, s, h * hs + d);
      }
  return linear_by_hand(merged, w.w_o);
}

Double3 block_by_hand(const Double3& x, const attn::BlockWeights& w, std::size_t H, bool causal,
                      attn::Activation a) {
  const Double3 r =
      x + mha_by_hand(layer_norm_by_hand(x, w.ln1_gamma, w.ln1_beta), w.attn, H, causal);
  return r + ffn_by_hand(layer_norm_by_hand(r, w.ln2_gamma, w.ln2_beta), w.ffn, a);
}

// Weights of one block for width C and hidden width F: every tensor different, none symmetric,
// gammas around 1 and betas around 0 (so forgetting either changes the answer).
attn::BlockWeights wiggly_block(std::size_t C, std::size_t F) {
  attn::BlockWeights w;
  w.attn.w_q = wiggly2(C, C, 0.1, 0.5);
  w.attn.w_k = wiggly2(C, C, 0.7, 0.5);
  w.attn.w_v = wiggly2(C, C, 1.3, 0.5);
  w.attn.w_o = wiggly2(C, C, 1.9, 0.5);
  w.ln1_gamma = wiggly1(C, 2.3, 0.3, 1.0);
  w.ln1_beta = wiggly1(C, 2.9, 0.2);
  w.ln2_gamma = wiggly1(C, 3.1, 0.3, 1.0);
  w.ln2_beta = wiggly1(C, 3.7, 0.2);
  w.ffn.w1 = wiggly2(C, F, 4.1, 0.4);
  w.ffn.b1 = wiggly1(F, 4.7, 0.1);
  w.ffn.w2 = wiggly2(F, C, 5.3, 0.3);
  w.ffn.b2 = wiggly1(C, 5.9, 0.1);
  return w;
}

// A small FFN written out by hand: C = 2, F = 3.
attn::FfnWeights tiny_ffn() {
  attn::FfnWeights w;
  w.w1 = {{1.0f, -1.0f, 0.5f}, {2.0f, 0.0f, -1.0f}};  // (2, 3)
  w.b1 = {0.0f, 0.5f, 1.0f};                          // (3,)
  w.w2 = {{1.0f, 0.0f}, {0.0f, 1.0f}, {1.0f, 1.0f}};  // (3, 2)
  w.b2 = {0.1f, -0.1f};                               // (2,)
  return w;
}

}  // namespace

TEST_SUITE("ex06.1 Layer norm") {
TEST_CASE("a token becomes mean 0 and variance 1 when gamma is 1 and beta is 0") {
  // [1, 2, 3, 4]: mean 2.5, biased variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25,
  // so y = (x - 2.5) / sqrt(1.25 + 1e-5).
  const Tensor<3> x = {{{1.0f, 2.0f, 3.0f, 4.0f}}};  // (1, 1, 4)
  const Vector ones = {1.0f, 1.0f, 1.0f, 1.0f};
  const Vector zeros = {0.0f, 0.0f, 0.0f, 0.0f};
  const Tensor<3> want = {{{-1.34163542f, -0.44721181f, 0.44721181f, 1.34163542f}}};
  CHECK_TENSOR_NEAR(ex06::layer_norm(x, ones, zeros, 1e-5f), want, 1e-6, 1e-5);
}

TEST_CASE("the variance is the biased one, divided by C") {
  // [0, 2]: mean 1, biased variance 1 (the unbiased one would be 2 and give +-0.7071).
  const Tensor<3> x = {{{0.0f, 2.0f}}};
  const Vector ones = {1.0f, 1.0f};
  const Vector zeros = {0.0f, 0.0f};
  const Tensor<3> want = {{{-0.99999500f, 0.99999500f}}};  // 1 / sqrt(1 + 1e-5)
  CHECK_TENSOR_NEAR(ex06::layer_norm(x, ones, zeros, 1e-5f), want, 1e-6, 1e-5);
}

TEST_CASE("eps is added to the variance inside the square root") {
  // [0, 2] with eps = 1: (x - 1) / sqrt(1 + 1) = +-0.70710678.
  const Tensor<3> x = {{{0.0f, 2.0f}}};
  const Vector ones = {1.0f, 1.0f};
  const Vector zeros = {0.0f, 0.0f};
  const Tensor<3> want = {{{-0.70710678f, 0.70710678f}}};
  CHECK_TENSOR_NEAR(ex06::layer_norm(x, ones, zeros, 1.0f), want, 1e-6, 1e-5);
}

TEST_CASE("gamma scales and beta shifts each feature after normalising") {
  // Normalised [1, 2, 3, 4] is [-1.3416, -0.4472, 0.4472, 1.3416]; then * gamma + beta.
  const Tensor<3> x = {{{1.0f, 2.0f, 3.0f, 4.0f}}};
  const Vector gamma = {2.0f, 1.0f, 0.5f, 0.0f};
  const Vector beta = {0.0f, 1.0f, -1.0f, 3.0f};
  const Tensor<3> want = {{{-2.68327084f, 0.55278819f, -0.77639410f, 3.0f}}};
  CHECK_TENSOR_NEAR(ex06::layer_norm(x, gamma, beta, 1e-5f), want, 1e-6, 1e-5);
}

TEST_CASE("a constant token becomes beta, not NaN") {
  // Variance 0: (x - mean) = 0 everywhere and sqrt(0 + eps) > 0, so y = 0 * gamma + beta.
  const Tensor<3> x = {{{3.0f, 3.0f, 3.0f}}};
  const Vector gamma = {1.5f, -2.0f, 1.0f};
  const Vector beta = {0.25f, -0.5f, 0.0f};
  const Tensor<3> y = ex06::layer_norm(x, gamma, beta, 1e-5f);
  CHECK_FALSE(has_nan(y));
  const Tensor<3> want = {{{0.25f, -0.5f, 0.0f}}};
  CHECK_TENSOR_NEAR(y, want, 1e-6, 0.0);
}

TEST_CASE("every token of a (B, T, C) tensor is normalised on its own") {
  const Tensor<3> x = wiggly3(2, 3, 5, 0.4, 3.0);
  const Vector gamma = wiggly1(5, 1.1, 0.5, 1.0);
  const Vector beta = wiggly1(5, 2.2, 0.5);
  const Tensor<3> want = to_float(layer_norm_by_hand(to_double(x), gamma, beta));
  CHECK_TENSOR_NEAR(ex06::layer_norm(x, gamma, beta, 1e-5f), want, 1e-5, 1e-5);
}

TEST_CASE("tokens far from zero are normalised as precisely as tokens near zero") {
  // Values 100 + sin and 1000 + sin: their variance is about 0.5, their square about 1e4 and
  // 1e6. The one-pass formula E[x^2] - E[x]^2 in float subtracts two numbers of that size and
  // keeps only the rounding noise (off by 0.0014 near 100 and 0.09 near 1000); subtracting
  // the mean first, (x - mean)^2, stays within 1e-4.
  const std::size_t C = 16;
  const Vector ones = xt::ones<float>({C});
  const Vector zeros = xt::zeros<float>({C});
  for (const double offset : {100.0, 1000.0}) {
    CAPTURE(offset);
    Tensor<3> x = wiggly3(2, 3, C, 0.3, 1.0);
    for (float& v : x) v = static_cast<float>(offset + static_cast<double>(v));
    const Tensor<3> want = to_float(layer_norm_by_hand(to_double(x), ones, zeros));
    CHECK_TENSOR_NEAR(ex06::layer_norm(x, ones, zeros, 1e-5f), want, 5e-4, 0.0);
  }
}

TEST_CASE("a gamma or beta that is not (C,) is rejected") {
  const Tensor<3> x = wiggly3(1, 2, 4, 0.0, 1.0);
  const Vector four = {1.0f, 1.0f, 1.0f, 1.0f};
  const Vector three = {1.0f, 1.0f, 1.0f};
  CHECK_THROWS_AS(ex06::layer_norm(x, three, four, 1e-5f), std::invalid_argument);
  CHECK_THROWS_AS(ex06::layer_norm(x, four, three, 1e-5f), std::invalid_argument);
}
}

TEST_SUITE("ex06.2 GELU") {
TEST_CASE("known values of x * Phi(x)") {
  // Phi(1) = 0.8413447, Phi(-1) = 0.1586553, Phi(2) = 0.9772499, Phi(-3) = 0.0013499.
  const Tensor<3> x = {{{0.0f, 0.5f, 1.0f, -1.0f, 2.0f, -3.0f}}};
  const Tensor<3> want = {
      {{0.0f, 0.34573123f, 0.84134475f, -0.15865525f, 1.95449974f, -0.00404969f}}};
  CHECK_TENSOR_NEAR(ex06::gelu(x), want, 1e-6, 1e-6);
}

TEST_CASE("it is the exact erf form, not the tanh approximation") {
  // At x = -2.7 the two forms differ the most: exact -0.0093458, tanh -0.0088725.
  const Tensor<3> x = {{{-2.7f, 2.7f, 3.0f}}};
  const Tensor<3> y = ex06::gelu(x);
  for (std::size_t i = 0; i < 3; ++i) {
    const double v = static_cast<double>(x(0, 0, i));
    CAPTURE(v);
    CHECK(std::abs(static_cast<double>(y(0, 0, i)) - gelu_exact(v)) < 2e-6);
    CHECK(std::abs(static_cast<double>(y(0, 0, i)) - gelu_tanh(v)) > 1e-4);
  }
}

TEST_CASE("large inputs pass through, very negative ones vanish, nothing is NaN") {
  const Tensor<3> x = {{{10.0f, 100.0f, -10.0f, -100.0f}}};
  const Tensor<3> y = ex06::gelu(x);
  CHECK_FALSE(has_nan(y));
  CHECK(y(0, 0, 0) == doctest::Approx(10.0));
  CHECK(y(0, 0, 1) == doctest::Approx(100.0));
  CHECK(std::abs(y(0, 0, 2)) < 1e-20f);
  CHECK(std::abs(y(0, 0, 3)) < 1e-20f);
}

TEST_CASE("every element of a (B, T, F) tensor is mapped and the shape is kept") {
  const Tensor<3> x = wiggly3(2, 3, 7, 0.3, 4.0);
  Tensor<3> want = x;
  for (float& v : want) v = static_cast<float>(gelu_exact(static_cast<double>(v)));
  CHECK_TENSOR_NEAR(ex06::gelu(x), want, 1e-6, 1e-5);
}
}

TEST_SUITE("ex06.3 Feed-forward network") {
TEST_CASE("a small ReLU network worked by hand") {
  // x = [1, 1]: h = x @ w1 + b1 = [3, -0.5, 0.5]; relu -> [3, 0, 0.5];
  // y = [3 + 0.5 + 0.1, 0.5 - 0.1] = [3.6, 0.4].
  // x = [-1, 0.5]: h = [0, 1.5, 0]; relu -> [0, 1.5, 0]; y = [0.1, 1.4].
  const Tensor<3> x = {{{1.0f, 1.0f}, {-1.0f, 0.5f}}};  // (1, 2, 2)
  const Tensor<3> want = {{{3.6f, 0.4f}, {0.1f, 1.4f}}};
  CHECK_TENSOR_NEAR(ex06::ffn_forward(x, tiny_ffn(), attn::Activation::relu), want, 1e-6, 1e-6);
}

TEST_CASE("the activation sits between the two layers, exact GELU by name") {
  // x = [1, 1]: h = [3, -0.5, 0.5]; gelu -> [2.99595031, -0.15426877, 0.34573123];
  // y = [2.99595031 + 0.34573123 + 0.1, -0.15426877 + 0.34573123 - 0.1].
  const Tensor<3> x = {{{1.0f, 1.0f}}};
  const Tensor<3> want = {{{3.44168154f, 0.09146246f}}};
  CHECK_TENSOR_NEAR(ex06::ffn_forward(x, tiny_ffn(), attn::Activation::gelu), want, 1e-6, 1e-5);
}

TEST_CASE("a (B, T, C) batch matches a double-precision loop for every activation") {
  const std::size_t C = 4, F = 8;
  attn::FfnWeights w;
  w.w1 = wiggly2(C, F, 0.2, 0.8);
  w.b1 = wiggly1(F, 0.9, 0.3);
  w.w2 = wiggly2(F, C, 1.6, 0.5);
  w.b2 = wiggly1(C, 2.5, 0.3);
  const Tensor<3> x = wiggly3(2, 3, C, 3.1, 1.5);
  for (const attn::Activation a :
       {attn::Activation::relu, attn::Activation::gelu, attn::Activation::gelu_tanh}) {
    INFO("activation " << attn::activation_name(a));
    const Tensor<3> want = to_float(ffn_by_hand(to_double(x), w, a));
    CHECK_TENSOR_NEAR(ex06::ffn_forward(x, w, a), want, 1e-5, 1e-5);
  }
}

TEST_CASE("each position is transformed on its own") {
  // Changing token 1 changes output 1 only: the FFN never mixes positions.
  const Tensor<3> x = {{{1.0f, 1.0f}, {-1.0f, 0.5f}, {0.25f, -2.0f}}};
  Tensor<3> changed = x;
  changed(0, 1, 0) = 7.0f;
  changed(0, 1, 1) = -3.0f;
  const Tensor<3> y = ex06::ffn_forward(x, tiny_ffn(), attn::Activation::gelu);
  const Tensor<3> z = ex06::ffn_forward(changed, tiny_ffn(), attn::Activation::gelu);
  for (const std::size_t t : {0u, 2u}) {
    CAPTURE(t);
    CHECK(z(0, t, 0) == y(0, t, 0));
    CHECK(z(0, t, 1) == y(0, t, 1));
  }
  CHECK(z(0, 1, 0) != y(0, 1, 0));
}

TEST_CASE("weights that do not fit x are rejected") {
  const Tensor<3> x = wiggly3(1, 2, 3, 0.0, 1.0);  // C = 3, but tiny_ffn has C = 2
  CHECK_THROWS_AS(ex06::ffn_forward(x, tiny_ffn(), attn::Activation::relu), std::invalid_argument);
}
}

TEST_SUITE("ex06.4 Pre-norm block") {
TEST_CASE("zero sublayer outputs leave the input untouched") {
  // With w_o = 0 the attention adds 0; with w2 = 0 and b2 = 0 the FFN adds 0. The residual
  // connections then carry x through unchanged: the block is the identity.
  attn::BlockWeights w = wiggly_block(4, 8);
  w.attn.w_o = xt::zeros<float>({4, 4});
  w.ffn.w2 = xt::zeros<float>({8, 4});
  w.ffn.b2 = xt::zeros<float>({4});
  const Tensor<3> x = wiggly3(1, 3, 4, 0.6, 2.0);
  CHECK_TENSOR_NEAR(ex06::block_forward_pre_norm(x, w, 2, true, attn::Activation::gelu), x, 0.0,
                    0.0);
}

TEST_CASE("a causal block matches a double-precision block written out step by step") {
  const std::size_t C = 8, F = 16, H = 2;
  const attn::BlockWeights w = wiggly_block(C, F);
  const Tensor<3> x = wiggly3(2, 5, C, 0.5, 1.5);
  const Tensor<3> want = to_float(block_by_hand(to_double(x), w, H, true, attn::Activation::gelu));
  CHECK_TENSOR_NEAR(ex06::block_forward_pre_norm(x, w, H, true, attn::Activation::gelu), want, 1e-4,
                    1e-4);
}

TEST_CASE("an encoder block (no mask, ReLU, four heads) matches the same step-by-step block") {
  const std::size_t C = 8, F = 12, H = 4;
  const attn::BlockWeights w = wiggly_block(C, F);
  const Tensor<3> x = wiggly3(1, 4, C, 2.5, 1.0);
  const Tensor<3> want = to_float(block_by_hand(to_double(x), w, H, false, attn::Activation::relu));
  CHECK_TENSOR_NEAR(ex06::block_forward_pre_norm(x, w, H, false, attn::Activation::relu), want,
                    1e-4, 1e-4);
}

TEST_CASE("in a causal block, changing the last token leaves earlier outputs untouched") {
  const std::size_t C = 8, F = 16, H = 2;
  const attn::BlockWeights w = wiggly_block(C, F);
  const Tensor<3> x = wiggly3(1, 4, C, 1.2, 1.0);
  Tensor<3> changed = x;
  for (std::size_t c = 0; c < C; ++c) changed(0, 3, c) += 5.0f;
  const Tensor<3> y = ex06::block_forward_pre_norm(x, w, H, true, attn::Activation::gelu);
  const Tensor<3> z = ex06::block_forward_pre_norm(changed, w, H, true, attn::Activation::gelu);
  double earlier = 0.0;  // largest |change| at positions 0..2
  double last = 0.0;     // largest |change| at position 3
  for (std::size_t t = 0; t < 4; ++t)
    for (std::size_t c = 0; c < C; ++c) {
      const double d = std::abs(static_cast<double>(z(0, t, c)) - static_cast<double>(y(0, t, c)));
      if (t < 3) {
        earlier = std::max(earlier, d);
      } else {
        last = std::max(last, d);
      }
    }
  CHECK(earlier == 0.0);
  CHECK(last > 1e-3);
}
}
