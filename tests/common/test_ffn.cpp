// Tests for attn/fast/ffn.hpp: activations and the position-wise feed-forward network (chapter 06).
// The activations are compared with their formulas in double (std::erf, std::tanh) on dense
// grids; the FFN with a naive composition of attn::matmul and those formulas. These are the
// reference versions; test_fast_ops.cpp checks attn::fast:: against them.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/ops/ffn.hpp"
#include "attn/ops/matmul.hpp"
#include "attn/core/random.hpp"
#include "attn/ops/linear.hpp"
#include "attn/train/gradcheck.hpp"
#include "gradcheck_helpers.hpp"
#include "test_helpers.hpp"

namespace {

// nn.GELU(): x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)), written with erfc so that the negative tail
// keeps its relative accuracy in double.
double gelu_exact(double x) { return 0.5 * x * std::erfc(-x / std::numbers::sqrt2); }
// nn.GELU(approximate="tanh").
double gelu_tanh(double x) {
  const double u = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(u));
}
double relu(double x) { return x > 0.0 ? x : 0.0; }

double reference(attn::Activation a, double x) {
  switch (a) {
    case attn::Activation::relu:
      return relu(x);
    case attn::Activation::gelu:
      return gelu_exact(x);
    case attn::Activation::gelu_tanh:
      return gelu_tanh(x);
  }
  return 0.0;
}

// -20, -20 + step, ..., 20 as floats.
std::vector<float> grid(double lo, double hi, double step) {
  std::vector<float> xs;
  for (double x = lo; x <= hi; x += step) xs.push_back(static_cast<float>(x));
  return xs;
}

// The distance between f and the next float away from zero.
double float_step(float f) {
  const float a = std::abs(f);
  return static_cast<double>(std::nextafter(a, std::numeric_limits<float>::infinity()) - a);
}

// act(x @ w1 + b1) @ w2 + b2 one token row at a time, with attn::matmul (the plain triple loop)
// and the activation formula in double.
attn::Tensor<3> naive_ffn(const attn::Tensor<3>& x, const attn::FfnWeights& w, attn::Activation a) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  const std::size_t F = w.w1.shape()[1];
  attn::Tensor<3> y(attn::Tensor<3>::shape_type{B, T, C});
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < T; ++t) {
      attn::Matrix row(attn::Matrix::shape_type{1, C});
      for (std::size_t c = 0; c < C; ++c) row(0, c) = x(b, t, c);
      attn::Matrix h = attn::matmul(row, w.w1);  // (1, C) @ (C, F) -> (1, F)
      for (std::size_t f = 0; f < F; ++f)
        h(0, f) = static_cast<float>(reference(a, static_cast<double>(h(0, f) + w.b1(f))));
      const attn::Matrix out = attn::matmul(h, w.w2);  // (1, F) @ (F, C) -> (1, C)
      for (std::size_t c = 0; c < C; ++c) y(b, t, c) = out(0, c) + w.b2(c);
    }
  }
  return y;
}

std::string message_of(const std::exception& e) { return e.what(); }

// Normal(0, 0.5) weights and non-zero biases, so that both bias additions are checked.
attn::FfnWeights weights_with_biases(attn::Rng& rng, std::size_t C, std::size_t F) {
  attn::FfnWeights w = attn::ffn_init(rng, C, F, 0.5f);
  w.b1 = attn::randn<1>(rng, {F}, 0.5f);
  w.b2 = attn::randn<1>(rng, {C}, 0.5f);
  return w;
}

}  // namespace

TEST_SUITE("ffn") {

TEST_CASE("activation names parse and print") {
  for (const attn::Activation a :
       {attn::Activation::relu, attn::Activation::gelu, attn::Activation::gelu_tanh})
    CHECK(attn::parse_activation(attn::activation_name(a)) == a);
  CHECK(attn::activation_name(attn::Activation::gelu_tanh) == "gelu_tanh");
  try {
    (void)attn::parse_activation("swish");
    FAIL("expected std::invalid_argument");
  } catch (const std::invalid_argument& e) {
    CHECK(message_of(e) == "unknown activation 'swish': expected relu, gelu or gelu_tanh");
  }
}

TEST_CASE("ReLU is exactly max(0, x)") {
  std::vector<float> xs = {-3.5f, -1e-30f, 0.0f, 1e-30f, 2.25f, 1e30f, -1e30f};
  const std::vector<float> want = {0.0f, 0.0f, 0.0f, 1e-30f, 2.25f, 1e30f, 0.0f};
  attn::activate(xs, attn::Activation::relu);
  for (std::size_t i = 0; i < xs.size(); ++i) CHECK(xs[i] == want[i]);
}

TEST_CASE("GELU at hand-computed points") {
  // 0.5 x (1 + erf(x / sqrt 2)), from Python's math.erf.
  const attn::Vector x = {0.0f, 1.0f, -1.0f, 2.0f, -3.0f, 0.5f};
  const attn::Vector want = {0.0f,
                             0.8413447460685429f,
                             -0.15865525393145707f,
                             1.9544997361036416f,
                             -0.00404969409489031f,
                             0.34573123063700656f};
  CHECK_TENSOR_NEAR(attn::activate<1>(x, attn::Activation::gelu), want, 1e-7, 1e-7);
}

TEST_CASE("exact GELU is within 1e-7 plus one float step of the erf formula, on a dense grid") {
  // 400001 points on [-20, 20], step 1e-4, against 0.5 x erfc(-x / sqrt 2) in double.
  std::vector<float> xs = grid(-20.0, 20.0, 1e-4);
  std::vector<float> ys = xs;
  attn::activate(ys, attn::Activation::gelu);
  double max_err = 0.0, max_err_small = 0.0, worst_excess = -1.0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double ref = gelu_exact(static_cast<double>(xs[i]));
    const double err = std::abs(static_cast<double>(ys[i]) - ref);
    max_err = std::max(max_err, err);
    if (std::abs(xs[i]) <= 3.0f) max_err_small = std::max(max_err_small, err);
    // The bound: 1e-7, plus one float step of the result (even the correctly rounded float is
    // up to half a step away from the exact value).
    worst_excess = std::max(worst_excess, err - (1e-7 + float_step(static_cast<float>(ref))));
  }
  CAPTURE(max_err);
  CAPTURE(max_err_small);
  CHECK(worst_excess <= 0.0);
  CHECK(max_err <= 2.5e-7);        // measured 2.4e-7, at x = 4.16 (a float step there: 4.8e-7)
  CHECK(max_err_small <= 1.5e-7);  // measured 1.34e-7 on [-3, 3]
}

TEST_CASE(
    "the GELU tanh approximation matches its own formula, and differs from the exact GELU "
    "by less than 1e-3") {
  std::vector<float> xs = grid(-20.0, 20.0, 1e-3);
  std::vector<float> approx = xs;
  std::vector<float> exact = xs;
  attn::activate(approx, attn::Activation::gelu_tanh);
  attn::activate(exact, attn::Activation::gelu);
  double max_gap = 0.0;
  double max_err = 0.0, worst_excess = -1.0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double x = static_cast<double>(xs[i]);
    const double a = static_cast<double>(approx[i]);
    const double err = std::abs(a - gelu_tanh(x));
    max_err = std::max(max_err, err);
    worst_excess =
        std::max(worst_excess, err - (1e-7 + float_step(static_cast<float>(gelu_tanh(x)))));
    max_gap = std::max(max_gap, std::abs(a - static_cast<double>(exact[i])));
  }
  CAPTURE(max_err);
  CHECK(worst_excess <= 0.0);
  CHECK(max_gap < 1e-3);
  CHECK(max_gap > 4e-4);  // the largest gap, 4.73e-4 near x = -2.70, is really there
}

TEST_CASE("negative and large inputs, infinities and NaN") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const attn::Activation a : {attn::Activation::gelu, attn::Activation::gelu_tanh}) {
    CAPTURE(attn::activation_name(a));
    std::vector<float> xs = {-1e30f, -50.0f, -10.0f, 10.0f, 50.0f, 1e30f, inf, -inf, nan};
    attn::activate(xs, a);
    CHECK(std::abs(xs[0]) <= 1e-30f);  // GELU(x) -> 0 as x -> -inf
    CHECK(std::abs(xs[1]) <= 1e-30f);
    if (a == attn::Activation::gelu) {
      // -10 Phi(-10) = -7.6e-23: the tail keeps its relative accuracy (1 + erf would give 0).
      CHECK(std::abs(static_cast<double>(xs[2]) - gelu_exact(-10.0)) <= 1e-5 * 7.6e-23);
    } else {
      CHECK(std::abs(xs[2]) <= 1e-30f);
    }
    CHECK(xs[3] == 10.0f);
    CHECK(xs[4] == 50.0f);
    CHECK(xs[5] == 1e30f);
    CHECK(xs[6] == inf);
    CHECK(xs[7] == 0.0f);
    CHECK(std::isnan(xs[8]));
  }
  std::vector<float> r = {nan, -inf, inf};
  attn::activate(r, attn::Activation::relu);
  CHECK(std::isnan(r[0]));
  CHECK(r[1] == 0.0f);
  CHECK(r[2] == inf);
}

TEST_CASE("activate on tensors returns a new tensor of the same shape") {
  attn::Rng rng(9);
  const attn::Tensor<3> x = attn::randn<3>(rng, {2, 3, 5});
  const attn::Tensor<3> x_before = x;
  const attn::Tensor<3> y = attn::activate<3>(x, attn::Activation::gelu);
  CHECK_TENSOR_NEAR(x, x_before, 0.0, 0.0);  // input untouched
  attn::Tensor<3> want(x.shape());
  for (std::size_t i = 0; i < x.size(); ++i)
    want.data()[i] = static_cast<float>(gelu_exact(static_cast<double>(x.data()[i])));
  CHECK_TENSOR_NEAR(y, want, 2e-7, 2e-7);
  const attn::Matrix m = attn::randn(rng, 3, 4);
  CHECK(attn::activate<2>(m, attn::Activation::relu).shape() == m.shape());
}

TEST_CASE("ffn_forward equals act(x @ w1 + b1) @ w2 + b2 computed with plain loops") {
  attn::Rng rng(31);
  // Odd sizes.
  const std::size_t B = 2, T = 3, C = 5, F = 7;
  const attn::FfnWeights w = weights_with_biases(rng, C, F);
  const attn::Tensor<3> x = attn::randn<3>(rng, {B, T, C});
  for (const attn::Activation a :
       {attn::Activation::relu, attn::Activation::gelu, attn::Activation::gelu_tanh}) {
    CAPTURE(attn::activation_name(a));
    const attn::Tensor<3> y = attn::ffn_forward(x, w, a);
    CHECK_TENSOR_NEAR(y, naive_ffn(x, w, a), 1e-5, 1e-5);
  }
  // GELU is the default, like nn.GELU() in the PyTorch FFN.
  CHECK_TENSOR_NEAR(attn::ffn_forward(x, w), attn::ffn_forward(x, w, attn::Activation::gelu), 0.0,
                    0.0);
}

TEST_CASE("ffn_forward of no tokens is an empty tensor") {
  attn::Rng rng(33);
  const attn::FfnWeights w = attn::ffn_init(rng, 4, 8);
  CHECK(attn::ffn_forward(attn::Tensor<3>(attn::Tensor<3>::shape_type{2, 0, 4}), w).shape() ==
        std::array<std::size_t, 3>{2, 0, 4});
}

TEST_CASE("ffn_init: shapes, zero biases, weights of the requested spread") {
  attn::Rng rng(1);
  const attn::FfnWeights w = attn::ffn_init(rng, 64, 256);
  CHECK(w.w1.shape() == std::array<std::size_t, 2>{64, 256});
  CHECK(w.b1.shape() == std::array<std::size_t, 1>{256});
  CHECK(w.w2.shape() == std::array<std::size_t, 2>{256, 64});
  CHECK(w.b2.shape() == std::array<std::size_t, 1>{64});
  for (const float b : w.b1) CHECK(b == 0.0f);
  for (const float b : w.b2) CHECK(b == 0.0f);
  double sq = 0.0;
  for (const float v : w.w1) sq += static_cast<double>(v) * static_cast<double>(v);
  CHECK(std::sqrt(sq / 16384.0) == doctest::Approx(0.02).epsilon(0.03));
}

TEST_CASE("ffn_forward names the mis-shaped weight") {
  attn::Rng rng(2);
  const attn::Tensor<3> x = attn::randn<3>(rng, {2, 3, 8});
  const attn::FfnWeights good = attn::ffn_init(rng, 8, 32);
  auto message = [&](const attn::FfnWeights& w) {
    try {
      (void)attn::ffn_forward(x, w);
    } catch (const std::invalid_argument& e) {
      return message_of(e);
    }
    return std::string("no exception");
  };
  attn::FfnWeights w = good;
  w.w2 = attn::randn(rng, 32, 7);
  CHECK(message(w) == "attn::ffn_forward: w2 is (32, 7), expected (32, 8)");
  w = good;
  w.w1 = attn::randn(rng, 7, 32);
  CHECK(message(w) == "attn::ffn_forward: w1 is (7, 32), expected (8, 32)");
  w = good;
  w.b1 = xt::zeros<float>({31});
  CHECK(message(w) == "attn::ffn_forward: b1 is (31,), expected (32,)");
  w = good;
  w.b2 = xt::zeros<float>({9});
  CHECK(message(w) == "attn::ffn_forward: b2 is (9,), expected (8,)");
}

}  // TEST_SUITE

TEST_SUITE("ffn.backward") {

using attn::testing::check_gradients;
using attn::testing::cspan_of;
using attn::testing::span_of;
using attn::testing::upstream;

// d/dx of the reference formulas, in double.
double reference_grad(attn::Activation a, double x) {
  switch (a) {
    case attn::Activation::relu:
      return x > 0.0 ? 1.0 : 0.0;
    case attn::Activation::gelu:
      return 0.5 * std::erfc(-x / std::numbers::sqrt2) +
             x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
    case attn::Activation::gelu_tanh: {
      const double k = std::sqrt(2.0 / std::numbers::pi);
      const double u = k * (x + 0.044715 * x * x * x);
      const double th = std::tanh(u);
      return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * k * (1.0 + 3.0 * 0.044715 * x * x);
    }
  }
  return 0.0;
}

TEST_CASE("activate_backward is the exact derivative on [-20, 20] for all three activations") {
  const std::vector<float> xs = grid(-20.0, 20.0, 1e-3);
  const std::vector<float> ones(xs.size(), 1.0f);
  std::vector<float> dx(xs.size());
  for (attn::Activation a :
       {attn::Activation::relu, attn::Activation::gelu, attn::Activation::gelu_tanh}) {
    CAPTURE(attn::activation_name(a));
    attn::activate_backward(xs, ones, dx, a);
    double worst = 0.0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      if (a == attn::Activation::relu && xs[i] == 0.0f) continue;
      worst = std::max(worst, std::abs(static_cast<double>(dx[i]) -
                                       reference_grad(a, static_cast<double>(xs[i]))));
    }
    MESSAGE(attn::activation_name(a) << " derivative: max abs error " << worst);
    CHECK(worst < 1e-6);
  }
}

TEST_CASE("activate_backward at 0, the infinities and NaN") {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> xs = {0.0f, inf, -inf, std::nanf(""), 1e30f, -1e30f};
  const std::vector<float> dy(xs.size(), 2.0f);
  std::vector<float> dx(xs.size());
  attn::activate_backward(xs, dy, dx, attn::Activation::relu);
  CHECK(dx[0] == 0.0f);  // ReLU'(0) = 0, like PyTorch
  CHECK(dx[1] == 2.0f);
  CHECK(dx[2] == 0.0f);
  CHECK(std::isnan(dx[3]));
  for (attn::Activation a : {attn::Activation::gelu, attn::Activation::gelu_tanh}) {
    attn::activate_backward(xs, dy, dx, a);
    CHECK(dx[0] == doctest::Approx(1.0));  // GELU'(0) = 1/2, times dy = 2
    CHECK(dx[1] == 2.0f);
    CHECK(dx[2] == 0.0f);
    CHECK(std::isnan(dx[3]));
    CHECK(dx[4] == 2.0f);
    CHECK(dx[5] == 0.0f);
  }
  std::vector<float> short_dx(2);
  CHECK_THROWS_WITH_AS(
      attn::activate_backward(xs, dy, short_dx, attn::Activation::gelu),
      "attn::activate_backward: x, dy and dx must have the same size, got 6, 6 and 2",
      std::invalid_argument);
}

TEST_CASE("activate_backward matches central differences (tensor form)") {
  attn::Rng rng(87);
  for (attn::Activation a :
       {attn::Activation::relu, attn::Activation::gelu, attn::Activation::gelu_tanh}) {
    attn::Tensor<2> x = attn::randn<2>(rng, {3, 7}, 2.0f);
    // Keep ReLU's inputs away from its kink, where a central difference straddles it.
    for (float& v : x) v = std::abs(v) < 0.05f ? 0.5f : v;
    const attn::Tensor<2> r = upstream(x, 4);
    const attn::Tensor<2> dx = attn::activate_backward<2>(x, r, a);
    check_gradients(
        "activation " + std::string(attn::activation_name(a)),
        attn::grad_check(
            [&] { return attn::weighted_sum(cspan_of(attn::activate<2>(x, a)), cspan_of(r)); },
            {{"x", span_of(x), cspan_of(dx)}}, {.h = 1e-3}));
  }
}

TEST_CASE(
    "ffn_forward with a cache gives ffn_forward's output bit for bit, and keeps x, pre, act") {
  attn::Rng rng(88);
  const attn::FfnWeights w = weights_with_biases(rng, 24, 40);
  const attn::Tensor<3> x = attn::randn<3>(rng, {3, 10, 24});
  for (attn::Activation a :
       {attn::Activation::relu, attn::Activation::gelu, attn::Activation::gelu_tanh}) {
    attn::FfnCache cache;
    const attn::Tensor<3> y = attn::ffn_forward(x, w, a, cache);
    CHECK_TENSOR_NEAR(y, attn::ffn_forward(x, w, a), 0.0, 0.0);
    CHECK_TENSOR_NEAR(cache.x, x, 0.0, 0.0);
    CHECK_TENSOR_NEAR(cache.pre, attn::linear(x, w.w1, w.b1), 0.0, 0.0);
    CHECK_TENSOR_NEAR(cache.act, attn::activate<3>(cache.pre, a), 0.0, 0.0);
  }
}

TEST_CASE("ffn_backward matches central differences, all three activations, odd sizes") {
  attn::Rng rng(89);
  for (attn::Activation a :
       {attn::Activation::relu, attn::Activation::gelu, attn::Activation::gelu_tanh}) {
    for (const std::array<std::size_t, 4> s :
         {std::array<std::size_t, 4>{1, 1, 1, 1}, {2, 3, 4, 5}}) {
      const std::size_t B = s[0], T = s[1], C = s[2], F = s[3];
      attn::FfnWeights w = weights_with_biases(rng, C, F);
      attn::Tensor<3> x = attn::randn<3>(rng, {B, T, C});
      const attn::Tensor<3> r = upstream(x, 5);
      attn::FfnCache cache;
      (void)attn::ffn_forward(x, w, a, cache);
      attn::FfnWeights g{xt::zeros<float>({C, F}), xt::zeros<float>({F}), xt::zeros<float>({F, C}),
                         xt::zeros<float>({C})};
      attn::Tensor<3> dx;
      attn::ffn_backward(r, cache, w, a, dx, g);
      check_gradients(
          "ffn " + std::string(attn::activation_name(a)) + " " + attn::shape_str(s),
          attn::grad_check(
              [&] { return attn::weighted_sum(cspan_of(attn::ffn_forward(x, w, a)), cspan_of(r)); },
              {{"x", span_of(x), cspan_of(dx)},
               {"w1", span_of(w.w1), cspan_of(g.w1)},
               {"b1", span_of(w.b1), cspan_of(g.b1)},
               {"w2", span_of(w.w2), cspan_of(g.w2)},
               {"b2", span_of(w.b2), cspan_of(g.b2)}},
              {.h = a == attn::Activation::relu ? 1e-3 : 3e-3}));
    }
  }
}

TEST_CASE("ffn_backward names a mis-shaped dy") {
  attn::Rng rng(90);
  const attn::FfnWeights w = weights_with_biases(rng, 16, 48);
  const attn::Tensor<3> x = attn::randn<3>(rng, {2, 150, 16});
  attn::FfnCache cache;
  (void)attn::ffn_forward(x, w, attn::Activation::gelu, cache);
  attn::Tensor<3> dx;
  attn::FfnWeights g{xt::zeros<float>({16, 48}), xt::zeros<float>({48}), xt::zeros<float>({48, 16}),
                     xt::zeros<float>({16})};
  const attn::Tensor<3> dy_bad = xt::zeros<float>({2, 150, 15});
  CHECK_THROWS_WITH_AS(attn::ffn_backward(dy_bad, cache, w, attn::Activation::gelu, dx, g),
                       "attn::ffn_backward: expected dy of shape (2, 150, 16) (like the forward's "
                       "input), got dy (2, 150, 15)",
                       std::invalid_argument);
  // A cache whose activations are this FFN's but whose pre-activations are not (a cache put
  // together by hand): refused before the second layer's gradients are added into.
  attn::FfnCache mixed = cache;
  mixed.pre = xt::zeros<float>({2, 150, 40});
  const attn::Tensor<3> dy = attn::randn<3>(rng, {2, 150, 16});
  CHECK_THROWS_WITH_AS(attn::ffn_backward(dy, mixed, w, attn::Activation::gelu, dx, g),
                       "attn::ffn_backward: cache.pre is (2, 150, 40), expected (2, 150, 48)",
                       std::invalid_argument);
  CHECK(xt::all(xt::equal(g.w2, 0.0f)));
  CHECK(xt::all(xt::equal(g.b2, 0.0f)));
}

}  // TEST_SUITE
