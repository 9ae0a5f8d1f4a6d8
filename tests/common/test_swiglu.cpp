// Tests for attn/ops/swiglu.hpp, the SwiGLU feed-forward network (chapter 11): silu by hand, the
// forward against a naive loop, the backward by float64 central differences for x and the three
// matrices, and two wrong backwards it must catch (silu' taken as sigmoid; the gate's and the
// up projection's gradients swapped).
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "attn/core/random.hpp"
#include "attn/ops/swiglu.hpp"
#include "gradcheck_helpers.hpp"
#include "test_helpers.hpp"

namespace {

using attn::testing::error_of;

using T3 = xt::xtensor<double, 3>;
using M64 = xt::xtensor<double, 2>;

double sigmoid(double a) { return 1.0 / (1.0 + std::exp(-a)); }

// (silu(x @ w_gate) * (x @ w_up)) @ w_down, one row at a time.
T3 naive_swiglu(const T3& x, const attn::SwigluWeights<double>& w) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  const std::size_t F = w.w_gate.shape()[1];
  T3 y = xt::zeros<double>({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t f = 0; f < F; ++f) {
        double a = 0.0, u = 0.0;
        for (std::size_t c = 0; c < C; ++c) {
          a += x(b, t, c) * w.w_gate(c, f);
          u += x(b, t, c) * w.w_up(c, f);
        }
        const double h = a * sigmoid(a) * u;
        for (std::size_t c = 0; c < C; ++c) y(b, t, c) += h * w.w_down(f, c);
      }
  return y;
}

// dL/dw_gate with silu'(a) replaced by sigmoid(a): the classic slip (silu(a) = a sigmoid(a) is
// differentiated as if a were a constant).
M64 dw_gate_with_sigmoid_slip(const T3& dy, const T3& x, const attn::SwigluWeights<double>& w) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  const std::size_t F = w.w_gate.shape()[1];
  M64 dw = xt::zeros<double>({C, F});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t f = 0; f < F; ++f) {
        double a = 0.0, u = 0.0, dh = 0.0;
        for (std::size_t c = 0; c < C; ++c) {
          a += x(b, t, c) * w.w_gate(c, f);
          u += x(b, t, c) * w.w_up(c, f);
          dh += dy(b, t, c) * w.w_down(f, c);
        }
        const double da = dh * u * sigmoid(a);
        for (std::size_t c = 0; c < C; ++c) dw(c, f) += x(b, t, c) * da;
      }
  return dw;
}

attn::SwigluWeights<double> random_weights(attn::Rng& rng, std::size_t C, std::size_t F) {
  return {attn::testing::randn64<2>(rng, {C, F}, 1.0 / std::sqrt(double(C))),
          attn::testing::randn64<2>(rng, {C, F}, 1.0 / std::sqrt(double(C))),
          attn::testing::randn64<2>(rng, {F, C}, 1.0 / std::sqrt(double(F)))};
}

}  // namespace

TEST_SUITE("swiglu") {

TEST_CASE("silu by hand: silu(0) = 0, silu(large) ~ a, silu(-large) ~ 0, silu'(0) = 1/2") {
  CHECK(attn::silu(0.0) == 0.0);
  CHECK(attn::silu(1.0) == doctest::Approx(1.0 / (1.0 + std::exp(-1.0))));
  CHECK(attn::silu(30.0) == doctest::Approx(30.0));
  CHECK(std::abs(attn::silu(-30.0)) < 1e-11);
  CHECK(attn::silu_derivative(0.0) == doctest::Approx(0.5));
  // Central difference of silu itself at a few points.
  for (const double a : {-3.0, -0.7, 0.4, 2.5}) {
    const double numeric = (attn::silu(a + 1e-6) - attn::silu(a - 1e-6)) / 2e-6;
    CHECK(attn::silu_derivative(a) == doctest::Approx(numeric).epsilon(1e-8));
  }
}

TEST_CASE("forward equals a naive loop, in double and float (C 6, F 16, and F = 1)") {
  attn::Rng rng(31);
  for (const std::size_t F : {16u, 1u}) {
    CAPTURE(F);
    const T3 x = attn::testing::randn64<3>(rng, {2, 3, 6});
    const attn::SwigluWeights<double> w = random_weights(rng, 6, F);
    const T3 want = naive_swiglu(x, w);
    CHECK_TENSOR_NEAR(attn::swiglu_forward<double>(x, w), want, 1e-13, 1e-12);
    const attn::SwigluWeights<float> wf{xt::cast<float>(w.w_gate), xt::cast<float>(w.w_up),
                                        xt::cast<float>(w.w_down)};
    const attn::Tensor<3> yf = attn::swiglu_forward<float>(attn::Tensor<3>(xt::cast<float>(x)), wf);
    CHECK_TENSOR_NEAR(T3(xt::cast<double>(yf)), want, 1e-5, 1e-4);
  }
}

TEST_CASE("backward: float64 central differences agree; two classic slips fail") {
  attn::Rng rng(32);
  T3 x = attn::testing::randn64<3>(rng, {2, 3, 5}, 1.5);
  attn::SwigluWeights<double> w = random_weights(rng, 5, 12);
  const T3 r = attn::testing::randn64<3>(rng, {2, 3, 5});
  auto loss = [&] { return attn::testing::dot64(attn::swiglu_forward<double>(x, w), r); };
  attn::SwigluCache<double> cache;
  (void)attn::swiglu_forward<double>(x, w, cache);
  T3 dx;
  attn::SwigluWeights<double> g{xt::zeros<double>({5, 12}), xt::zeros<double>({5, 12}),
                                xt::zeros<double>({12, 5})};
  attn::swiglu_backward<double>(r, cache, w, dx, g);
  using attn::testing::central_differences64;
  attn::testing::check_grad64("swiglu", "x", central_differences64<T3>(loss, x, dx));
  attn::testing::check_grad64("swiglu", "w_gate",
                              central_differences64<M64>(loss, w.w_gate, g.w_gate));
  attn::testing::check_grad64("swiglu", "w_up", central_differences64<M64>(loss, w.w_up, g.w_up));
  attn::testing::check_grad64("swiglu", "w_down",
                              central_differences64<M64>(loss, w.w_down, g.w_down));
  // Wrong: silu'(a) taken as sigmoid(a).
  const M64 slip = dw_gate_with_sigmoid_slip(r, x, w);
  attn::testing::check_grad64_caught("swiglu", "w_gate",
                                     central_differences64<M64>(loss, w.w_gate, slip));
  // Wrong: the gate's gradient and the up projection's swapped.
  attn::testing::check_grad64_caught("swiglu", "w_gate",
                                     central_differences64<M64>(loss, w.w_gate, g.w_up));
  // Gradients accumulate: a second backward doubles them.
  attn::swiglu_backward<double>(r, cache, w, dx, g);
  attn::testing::check_grad64("swiglu (accumulated / 2)", "w_down",
                              central_differences64<M64>(loss, w.w_down, M64(g.w_down / 2.0)));
}

TEST_CASE("bad input: a weight of the wrong shape is named in one line") {
  attn::Rng rng(33);
  const attn::Tensor<3> x = attn::randn<3>(rng, {1, 2, 8});
  attn::SwigluWeights<float> w{xt::zeros<float>({8, 24}), xt::zeros<float>({8, 16}),
                               xt::zeros<float>({24, 8})};
  CHECK(error_of([&] { (void)attn::swiglu_forward<float>(x, w); }) ==
        "attn::swiglu_forward: w_up is (8, 16), expected (8, 24)");
  w.w_up = xt::zeros<float>({8, 24});
  w.w_down = xt::zeros<float>({24, 7});
  CHECK(error_of([&] { (void)attn::swiglu_forward<float>(x, w); }) ==
        "attn::swiglu_forward: w_down is (24, 7), expected (24, 8)");
}

}  // TEST_SUITE
