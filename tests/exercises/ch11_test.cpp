// Don't edit: these tests check your exercises.
// tests/exercises/ch11_test.cpp: chapter 11 (modern attention, docs/11-modern-attention.md).
// Expected values come from hand-computed numbers and plain double-precision loops written here,
// never from the attn:: function the reference solution forwards to. Run them with
// build/default/bin/attn-check 11.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"
#include "exercises.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Tensor;

// A tensor with no visible pattern: amp * sin(0.37 i + phase) over its flat index i.
template <std::size_t N>
Tensor<N> wiggly(const std::array<std::size_t, N>& shape, double phase, double amp = 1.0) {
  Tensor<N> t(shape);
  for (std::size_t i = 0; i < t.size(); ++i)
    t.data()[i] = static_cast<float>(amp * std::sin(0.37 * static_cast<double>(i) + phase) +
                                     0.1 * std::cos(1.9 * static_cast<double>(i)));
  return t;
}

// RoPE, interleaved, in double: pair (2i, 2i+1) of row t turned by (offset + t) theta^(-2i/hs).
Tensor<4> rope_loop(const Tensor<4>& x, double theta, std::size_t offset) {
  Tensor<4> y = x;
  const std::size_t B = x.shape()[0], H = x.shape()[1], T = x.shape()[2], hs = x.shape()[3];
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t i = 0; i < hs / 2; ++i) {
          const double angle =
              static_cast<double>(offset + t) *
              std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(hs));
          const double a = x(b, h, t, 2 * i), c = x(b, h, t, 2 * i + 1);
          y(b, h, t, 2 * i) = static_cast<float>(a * std::cos(angle) - c * std::sin(angle));
          y(b, h, t, 2 * i + 1) = static_cast<float>(a * std::sin(angle) + c * std::cos(angle));
        }
  return y;
}

// Windowed causal attention in double: query t sees keys s with t - W < s <= t.
struct LoopAttention {
  Tensor<4> out, weights;
};
LoopAttention window_loop(const Tensor<4>& q, const Tensor<4>& k, const Tensor<4>& v,
                          std::size_t W) {
  const std::size_t B = q.shape()[0], H = q.shape()[1], T = q.shape()[2], hs = q.shape()[3];
  LoopAttention r{xt::zeros<float>({B, H, T, hs}), xt::zeros<float>({B, H, T, T})};
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t) {
        const std::size_t first = t + 1 >= W ? t + 1 - W : 0;
        std::vector<double> s(T, 0.0);
        double mx = -std::numeric_limits<double>::infinity(), sum = 0.0;
        for (std::size_t u = first; u <= t; ++u) {
          for (std::size_t j = 0; j < hs; ++j)
            s[u] += static_cast<double>(q(b, h, t, j)) * static_cast<double>(k(b, h, u, j));
          s[u] /= std::sqrt(static_cast<double>(hs));
          mx = std::max(mx, s[u]);
        }
        for (std::size_t u = first; u <= t; ++u) sum += std::exp(s[u] - mx);
        for (std::size_t u = first; u <= t; ++u) {
          const double p = std::exp(s[u] - mx) / sum;
          r.weights(b, h, t, u) = static_cast<float>(p);
          for (std::size_t j = 0; j < hs; ++j)
            r.out(b, h, t, j) += static_cast<float>(p * static_cast<double>(v(b, h, u, j)));
        }
      }
  return r;
}

}  // namespace

TEST_SUITE("ex11.1 RoPE") {
TEST_CASE("position 0 leaves every feature as it is" * doctest::description("hint 1")) {
  const Tensor<4> x = wiggly<4>({1, 2, 1, 6}, 0.3);
  CHECK_TENSOR_NEAR(ex11::rope(x, 10000.0, 0), x, 1e-6, 0.0);
}
TEST_CASE("one pair at position 1 turns by +1 radian, counter-clockwise" *
          doctest::description("hint 2")) {
  Tensor<4> x = xt::zeros<float>({1, 1, 1, 2});
  x(0, 0, 0, 0) = 1.0f;  // (1, 0) at position 1, pair 0: angle 1 radian whatever theta
  Tensor<4> want(std::array<std::size_t, 4>{1, 1, 1, 2});
  want(0, 0, 0, 0) = static_cast<float>(std::cos(1.0));
  want(0, 0, 0, 1) = static_cast<float>(std::sin(1.0));
  CHECK_TENSOR_NEAR(ex11::rope(x, 10000.0, 1), want, 1e-6, 1e-6);
}
TEST_CASE("pair i turns at theta^(-2i/hs): (0, 1) at position 5 with hs 4, theta 100" *
          doctest::description("hint 2")) {
  Tensor<4> x = xt::zeros<float>({1, 1, 1, 4});
  x(0, 0, 0, 3) = 1.0f;  // pair 1 = (0, 1); angle 5 * 100^(-1/2) = 0.5
  Tensor<4> want = xt::zeros<float>({1, 1, 1, 4});
  want(0, 0, 0, 2) = static_cast<float>(-std::sin(0.5));
  want(0, 0, 0, 3) = static_cast<float>(std::cos(0.5));
  CHECK_TENSOR_NEAR(ex11::rope(x, 100.0, 5), want, 1e-6, 1e-6);
}
TEST_CASE("every row matches a double-precision loop, positions offset + t" *
          doctest::description("hint 3")) {
  const Tensor<4> x = wiggly<4>({2, 3, 5, 8}, 1.1, 1.5);
  for (const std::size_t offset : {std::size_t{0}, std::size_t{7}}) {
    INFO("offset " << offset);
    CHECK_TENSOR_NEAR(ex11::rope(x, 50.0, offset), rope_loop(x, 50.0, offset), 1e-5, 1e-4);
  }
}
TEST_CASE("far positions: the angle p * theta^(-2i/hs) is computed in double" *
          doctest::description("hint 3")) {
  // At p = 1,000,003 a float angle is off by up to 0.03 radian (a float near 1e6 is a multiple
  // of 1/16), so every rotation would be visibly wrong; in double the error is below 1e-9.
  const Tensor<4> x = wiggly<4>({1, 1, 3, 8}, 0.6, 1.5);
  CHECK_TENSOR_NEAR(ex11::rope(x, 10000.0, 1000003), rope_loop(x, 10000.0, 1000003), 1e-5, 1e-4);
}
TEST_CASE("rotated q . k depends only on the offset m - n" * doctest::description("hint 3")) {
  const Tensor<4> q = wiggly<4>({1, 1, 1, 8}, 0.2), k = wiggly<4>({1, 1, 1, 8}, 2.4);
  const auto score = [&](std::size_t m, std::size_t n) {
    const Tensor<4> a = ex11::rope(q, 10000.0, m), b = ex11::rope(k, 10000.0, n);
    double s = 0.0;
    for (std::size_t i = 0; i < 8; ++i)
      s += static_cast<double>(a.data()[i]) * static_cast<double>(b.data()[i]);
    return s;
  };
  CHECK(std::abs(score(5, 2) - score(45, 42)) < 1e-4);
  CHECK(std::abs(score(5, 2) - score(6, 2)) > 1e-3);
}
TEST_CASE("an odd head size or a theta that is not > 0 is rejected" *
          doctest::description("hint 1")) {
  CHECK_THROWS_AS(ex11::rope(wiggly<4>({1, 1, 2, 5}, 0.0), 10000.0, 0), std::invalid_argument);
  CHECK_THROWS_AS(ex11::rope(wiggly<4>({1, 1, 2, 4}, 0.0), 0.0, 0), std::invalid_argument);
  CHECK_THROWS_AS(ex11::rope(wiggly<4>({1, 1, 2, 4}, 0.0), -5.0, 0), std::invalid_argument);
}
}  // TEST_SUITE

TEST_SUITE("ex11.2 RMSNorm") {
TEST_CASE("a row of equal values becomes gamma (no mean is subtracted)" *
          doctest::description("hint 1")) {
  Tensor<3> x(std::array<std::size_t, 3>{1, 1, 4});
  x.fill(3.0f);
  const attn::Vector gamma = {0.5f, 1.0f, -2.0f, 4.0f};
  Tensor<3> want(std::array<std::size_t, 3>{1, 1, 4});
  for (std::size_t j = 0; j < 4; ++j) want(0, 0, j) = gamma(j);
  CHECK_TENSOR_NEAR(ex11::rms_norm(x, gamma, 0.0), want, 1e-6, 1e-6);
}
TEST_CASE("every row matches a double-precision loop, gamma and eps included" *
          doctest::description("hint 2")) {
  Tensor<3> x = wiggly<3>({2, 3, 5}, 0.7, 0.8);
  x += 0.4f;  // rows with a mean away from 0
  const attn::Vector gamma = {1.5f, -0.5f, 2.0f, 0.25f, 1.0f};
  const double eps = 0.3;  // large, so that forgetting it shows
  Tensor<3> want = x;
  for (std::size_t r = 0; r < 6; ++r) {
    double sq = 0.0;
    for (std::size_t j = 0; j < 5; ++j) {
      const double xj = x.data()[r * 5 + j];
      sq += xj * xj;
    }
    const double rstd = 1.0 / std::sqrt(sq / 5.0 + eps);
    for (std::size_t j = 0; j < 5; ++j) {
      const double xj = x.data()[r * 5 + j], g = gamma(j);
      want.data()[r * 5 + j] = static_cast<float>(xj * rstd * g);
    }
  }
  CHECK_TENSOR_NEAR(ex11::rms_norm(x, gamma, eps), want, 1e-6, 1e-5);
}
TEST_CASE("a long row with one large value: the sum of squares is kept in double" *
          doctest::description("hint 2")) {
  // x_0 = 1e4, then 16383 ones: sum of squares 1e8 + 16383. In float, 1e8 + 1 rounds back to
  // 1e8 (floats near 1e8 are 8 apart), so a float sum forgets every one: rstd comes out 8e-5
  // too large, far more than float rounding.
  const std::size_t C = 16384;
  Tensor<3> x(std::array<std::size_t, 3>{1, 1, C});
  x.fill(1.0f);
  x(0, 0, 0) = 1e4f;
  attn::Vector gamma(std::array<std::size_t, 1>{C});
  gamma.fill(1.0f);
  const double rstd = 1.0 / std::sqrt((1e8 + static_cast<double>(C - 1)) / static_cast<double>(C));
  Tensor<3> want(std::array<std::size_t, 3>{1, 1, C});
  want.fill(static_cast<float>(rstd));
  want(0, 0, 0) = static_cast<float>(1e4 * rstd);
  INFO("sum x_j^2 in double: in float the ones after 1e4^2 are lost");
  CHECK_TENSOR_NEAR(ex11::rms_norm(x, gamma, 0.0), want, 1e-9, 1e-5);
}
TEST_CASE("a row of zeros stays zeros thanks to eps (no NaN)" * doctest::description("hint 2")) {
  const Tensor<3> x = xt::zeros<float>({1, 2, 3});
  const attn::Vector gamma = {1.0f, 2.0f, 3.0f};
  CHECK_TENSOR_NEAR(ex11::rms_norm(x, gamma, 1e-5), x, 0.0, 0.0);
}
TEST_CASE("a gamma of the wrong length is rejected" * doctest::description("hint 1")) {
  const attn::Vector gamma = {1.0f, 2.0f};
  CHECK_THROWS_AS(ex11::rms_norm(wiggly<3>({1, 2, 3}, 0.0), gamma, 1e-5), std::invalid_argument);
}
}  // TEST_SUITE

TEST_SUITE("ex11.3 The K/V head of each query head") {
TEST_CASE("H 4, KV 2: query heads 0 and 1 read K/V head 0, heads 2 and 3 K/V head 1" *
          doctest::description("hint 2")) {
  Tensor<4> kv(std::array<std::size_t, 4>{1, 2, 1, 1});
  kv(0, 0, 0, 0) = 10.0f;
  kv(0, 1, 0, 0) = 20.0f;
  const Tensor<4> out = ex11::repeat_kv(kv, 4);
  REQUIRE(out.shape()[1] == 4);
  const std::array<float, 4> want{10.0f, 10.0f, 20.0f, 20.0f};
  for (std::size_t h = 0; h < 4; ++h) {
    INFO("query head " << h);
    CHECK(out(0, h, 0, 0) == want[h]);
  }
}
TEST_CASE("every value is copied, for MQA (KV 1), GQA and MHA (KV = H)" *
          doctest::description("hint 3")) {
  for (const std::size_t KV : {std::size_t{1}, std::size_t{3}, std::size_t{6}}) {
    INFO("H 6, KV " << KV);
    const Tensor<4> kv = wiggly<4>({2, KV, 3, 4}, 0.5 + static_cast<double>(KV));
    const Tensor<4> out = ex11::repeat_kv(kv, 6);
    Tensor<4> want(std::array<std::size_t, 4>{2, 6, 3, 4});
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t h = 0; h < 6; ++h)
        for (std::size_t t = 0; t < 3; ++t)
          for (std::size_t j = 0; j < 4; ++j) want(b, h, t, j) = kv(b, h / (6 / KV), t, j);
    CHECK_TENSOR_NEAR(out, want, 0.0, 0.0);
  }
}
TEST_CASE("KV heads that do not divide the query heads are rejected" *
          doctest::description("hint 1")) {
  CHECK_THROWS_AS(ex11::repeat_kv(wiggly<4>({1, 3, 2, 2}, 0.0), 4), std::invalid_argument);
}
}  // TEST_SUITE

TEST_SUITE("ex11.4 Sliding-window attention") {
TEST_CASE("a window of 1: each position attends to itself only" * doctest::description("hint 1")) {
  const Tensor<4> q = wiggly<4>({1, 2, 5, 3}, 0.1), k = wiggly<4>({1, 2, 5, 3}, 1.2),
                  v = wiggly<4>({1, 2, 5, 3}, 2.3);
  CHECK_TENSOR_NEAR(ex11::sliding_window_attention(q, k, v, 1).out, v, 1e-6, 1e-6);
}
TEST_CASE("window 3 over 7 positions: weights and output match a double-precision loop" *
          doctest::description("hint 2")) {
  const Tensor<4> q = wiggly<4>({2, 2, 7, 4}, 0.4, 2.0), k = wiggly<4>({2, 2, 7, 4}, 1.5, 2.0),
                  v = wiggly<4>({2, 2, 7, 4}, 2.6);
  const attn::WindowAttention<float> got = ex11::sliding_window_attention(q, k, v, 3);
  const LoopAttention want = window_loop(q, k, v, 3);
  CHECK_TENSOR_NEAR(got.weights, want.weights, 1e-6, 1e-5);
  CHECK_TENSOR_NEAR(got.out, want.out, 1e-6, 1e-5);
}
TEST_CASE("a window as long as the text is causal attention" * doctest::description("hint 3")) {
  const Tensor<4> q = wiggly<4>({1, 1, 6, 4}, 0.9, 1.5), k = wiggly<4>({1, 1, 6, 4}, 0.2, 1.5),
                  v = wiggly<4>({1, 1, 6, 4}, 3.1);
  for (const std::size_t W : {std::size_t{6}, std::size_t{50}}) {
    INFO("window " << W);
    CHECK_TENSOR_NEAR(ex11::sliding_window_attention(q, k, v, W).out, window_loop(q, k, v, 6).out,
                      1e-6, 1e-5);
  }
}
TEST_CASE("scores near 1000 do not overflow: subtract the row's largest visible score" *
          doctest::description("hint 2")) {
  // Feature 0 of every query and key adds 40 * 50 / sqrt(4) = 1000 to every score: exp(1000)
  // is inf in float and in double, so exp(s) / sum exp(s) without the max subtracted is NaN.
  Tensor<4> q = wiggly<4>({1, 2, 6, 4}, 0.4), k = wiggly<4>({1, 2, 6, 4}, 1.5);
  const Tensor<4> v = wiggly<4>({1, 2, 6, 4}, 2.6);
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t t = 0; t < 6; ++t) {
      q(0, h, t, 0) = 40.0f;
      k(0, h, t, 0) = 50.0f;
    }
  const attn::WindowAttention<float> got = ex11::sliding_window_attention(q, k, v, 3);
  const LoopAttention want = window_loop(q, k, v, 3);
  // float scores near 1000 carry rounding errors near 1e-4: a looser tolerance than above.
  CHECK_TENSOR_NEAR(got.weights, want.weights, 1e-3, 1e-3);
  CHECK_TENSOR_NEAR(got.out, want.out, 1e-3, 1e-3);
}
TEST_CASE("a key that has left the window plays no part, not even in the max" *
          doctest::description("hint 2")) {
  // Key 0 scores about 1000 against every query; from query 3 on (window 3) it is outside. A
  // max taken over every key 0 .. t is then about 1000 while the visible scores are near 0:
  // every exp(s - max) of the window is 0, and 0 / 0 is NaN.
  Tensor<4> q = wiggly<4>({1, 1, 8, 4}, 0.4), k = wiggly<4>({1, 1, 8, 4}, 1.5);
  const Tensor<4> v = wiggly<4>({1, 1, 8, 4}, 2.6);
  for (std::size_t t = 0; t < 8; ++t) {
    q(0, 0, t, 0) = 40.0f;
    k(0, 0, t, 0) = t == 0 ? 50.0f : 0.0f;
  }
  const attn::WindowAttention<float> got = ex11::sliding_window_attention(q, k, v, 3);
  const LoopAttention want = window_loop(q, k, v, 3);
  INFO(
      "query t sees keys max(0, t - 2) .. t only: the scores, the max and the sum all over "
      "those");
  CHECK_TENSOR_NEAR(got.weights, want.weights, 1e-3, 1e-3);
  CHECK_TENSOR_NEAR(got.out, want.out, 1e-3, 1e-3);
}
TEST_CASE("keys before the window are never read (here they are NaN)" *
          doctest::description("hint 2")) {
  // The last query (t = 7, window 3) sees keys 5, 6, 7. Keys 0 .. 4 are NaN: the other rows
  // read some of them, rightly, but the last row must come out exactly as without them.
  const Tensor<4> q = wiggly<4>({1, 1, 8, 4}, 0.4, 2.0), k = wiggly<4>({1, 1, 8, 4}, 1.5, 2.0),
                  v = wiggly<4>({1, 1, 8, 4}, 2.6);
  Tensor<4> k_nan = k, v_nan = v;
  for (std::size_t u = 0; u < 5; ++u)
    for (std::size_t j = 0; j < 4; ++j) k_nan(0, 0, u, j) = v_nan(0, 0, u, j) = std::nanf("");
  const attn::WindowAttention<float> got = ex11::sliding_window_attention(q, k_nan, v_nan, 3);
  const LoopAttention want = window_loop(q, k, v, 3);
  REQUIRE(got.out.shape() == want.out.shape());
  REQUIRE(got.weights.shape() == want.weights.shape());
  for (std::size_t j = 0; j < 4; ++j) {
    INFO("the last query's output, feature " << j << ": keys 0 .. 4 are outside its window");
    CHECK(std::abs(got.out(0, 0, 7, j) - want.out(0, 0, 7, j)) <= 1e-5f);
  }
  for (std::size_t u = 0; u < 8; ++u) {
    INFO("the last query's weight on key " << u);
    CHECK(std::abs(got.weights(0, 0, 7, u) - want.weights(0, 0, 7, u)) <= 1e-5f);
  }
}
TEST_CASE("window 0 and mismatched shapes are rejected" * doctest::description("hint 1")) {
  const Tensor<4> a = wiggly<4>({1, 1, 4, 2}, 0.0), b = wiggly<4>({1, 1, 3, 2}, 0.0);
  CHECK_THROWS_AS(ex11::sliding_window_attention(a, a, a, 0), std::invalid_argument);
  CHECK_THROWS_AS(ex11::sliding_window_attention(a, b, b, 2), std::invalid_argument);
}
}  // TEST_SUITE

namespace {

// sum(dy * rms_norm(x)) in double, the loss whose gradient ex11.5 returns.
double rms_loss(const std::vector<double>& x, const std::vector<double>& gamma,
                const std::vector<double>& dy, std::size_t C, double eps) {
  double loss = 0.0;
  for (std::size_t r = 0; r < x.size() / C; ++r) {
    double sq = 0.0;
    for (std::size_t j = 0; j < C; ++j) sq += x[r * C + j] * x[r * C + j];
    const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(C) + eps);
    for (std::size_t j = 0; j < C; ++j) loss += dy[r * C + j] * x[r * C + j] * rstd * gamma[j];
  }
  return loss;
}

template <std::size_t N>
std::vector<double> doubles(const Tensor<N>& t) {
  return std::vector<double>(t.begin(), t.end());
}

}  // namespace

TEST_SUITE("ex11.5 RMSNorm backward") {
TEST_CASE("dx matches central differences of sum(dy * y), in double" *
          doctest::description("hint 2")) {
  Tensor<3> x = wiggly<3>({2, 2, 5}, 0.3, 1.2);
  x += 0.5f;
  const attn::Vector gamma = {1.5f, -0.5f, 2.0f, 0.75f, 1.25f};
  const Tensor<3> dy = wiggly<3>({2, 2, 5}, 2.2, 0.9);
  const double eps = 0.05;
  const attn::RmsNormGrads<float, 3> got = ex11::rms_norm_backward(dy, x, gamma, eps);
  REQUIRE(got.dx.shape() == x.shape());
  std::vector<double> xd = doubles(x);
  const std::vector<double> gd = doubles(gamma), dyd = doubles(dy);
  Tensor<3> want = x;
  for (std::size_t i = 0; i < xd.size(); ++i) {
    const double keep = xd[i], h = 1e-6;
    xd[i] = keep + h;
    const double up = rms_loss(xd, gd, dyd, 5, eps);
    xd[i] = keep - h;
    const double down = rms_loss(xd, gd, dyd, 5, eps);
    xd[i] = keep;
    want.data()[i] = static_cast<float>((up - down) / (2.0 * h));
  }
  CHECK_TENSOR_NEAR(got.dx, want, 1e-5, 1e-4);
}
TEST_CASE("dgamma is the sum over rows of dy * xhat" * doctest::description("hint 1")) {
  const Tensor<3> x = wiggly<3>({1, 3, 4}, 1.7, 2.0), dy = wiggly<3>({1, 3, 4}, 0.4);
  const attn::Vector gamma = {0.5f, 2.0f, -1.0f, 1.0f};
  attn::Vector want = xt::zeros<float>({4});
  for (std::size_t r = 0; r < 3; ++r) {
    double sq = 0.0;
    for (std::size_t j = 0; j < 4; ++j) {
      const double v = x(0, r, j);
      sq += v * v;
    }
    const double rstd = 1.0 / std::sqrt(sq / 4.0 + 1e-5);
    for (std::size_t j = 0; j < 4; ++j) {
      const double v = x(0, r, j), d = dy(0, r, j);
      want(j) += static_cast<float>(d * v * rstd);
    }
  }
  CHECK_TENSOR_NEAR(ex11::rms_norm_backward(dy, x, gamma, 1e-5).dgamma, want, 1e-6, 1e-5);
}
TEST_CASE("scaling x changes nothing, so dx has no component along x" *
          doctest::description("hint 3")) {
  const Tensor<3> x = wiggly<3>({1, 2, 6}, 0.9, 3.0), dy = wiggly<3>({1, 2, 6}, 2.9);
  const attn::Vector gamma = {1.0f, 2.0f, 3.0f, -1.0f, 0.5f, 1.5f};
  const Tensor<3> dx = ex11::rms_norm_backward(dy, x, gamma, 0.0).dx;
  for (std::size_t r = 0; r < 2; ++r) {
    double along = 0.0, size = 0.0;
    for (std::size_t j = 0; j < 6; ++j) {
      const double a = dx(0, r, j), b = x(0, r, j);
      along += a * b;
      size += a * a;
    }
    INFO("row " << r << ": dx . x = " << along);
    CHECK(size > 1e-6);
    CHECK(std::abs(along) < 1e-4);
  }
}
TEST_CASE("a long row with one large value: rstd's sum of squares is kept in double" *
          doctest::description("hint 1")) {
  // As for ex11.2: x_0 = 1e4, then 16383 ones; in float, 1e8 + 1 is 1e8 and every one is lost.
  // dy = 1 everywhere, so dgamma_j = xhat_j = x_j * rstd.
  const std::size_t C = 16384;
  Tensor<3> x(std::array<std::size_t, 3>{1, 1, C});
  x.fill(1.0f);
  x(0, 0, 0) = 1e4f;
  Tensor<3> dy(std::array<std::size_t, 3>{1, 1, C});
  dy.fill(1.0f);
  attn::Vector gamma(std::array<std::size_t, 1>{C});
  gamma.fill(1.0f);
  const double rstd = 1.0 / std::sqrt((1e8 + static_cast<double>(C - 1)) / static_cast<double>(C));
  attn::Vector want(std::array<std::size_t, 1>{C});
  want.fill(static_cast<float>(rstd));
  want(0) = static_cast<float>(1e4 * rstd);
  INFO("recompute rstd with the sum of x_j^2 in double: in float the ones after 1e4^2 are lost");
  CHECK_TENSOR_NEAR(ex11::rms_norm_backward(dy, x, gamma, 0.0).dgamma, want, 1e-9, 1e-5);
}
TEST_CASE("dy of another shape, or gamma of the wrong length, is rejected" *
          doctest::description("hint 1")) {
  const attn::Vector gamma = {1.0f, 1.0f, 1.0f};
  CHECK_THROWS_AS(
      ex11::rms_norm_backward(wiggly<3>({1, 2, 3}, 0.0), wiggly<3>({1, 3, 3}, 0.0), gamma, 1e-5),
      std::invalid_argument);
  const attn::Vector short_gamma = {1.0f, 1.0f};
  CHECK_THROWS_AS(ex11::rms_norm_backward(wiggly<3>({1, 2, 3}, 0.0), wiggly<3>({1, 2, 3}, 0.0),
                                          short_gamma, 1e-5),
                  std::invalid_argument);
}
}  // TEST_SUITE

TEST_SUITE("ex11.6 The K/V heads' gradient") {
TEST_CASE("H 4, KV 2: K/V head 0 gets query heads 0 + 1, K/V head 1 gets heads 2 + 3" *
          doctest::description("hint 1")) {
  Tensor<4> d(std::array<std::size_t, 4>{1, 4, 1, 1});
  for (std::size_t h = 0; h < 4; ++h) d(0, h, 0, 0) = static_cast<float>(1u << h);  // 1 2 4 8
  const Tensor<4> got = ex11::sum_kv_groups(d, 2);
  REQUIRE(got.shape() == (std::array<std::size_t, 4>{1, 2, 1, 1}));
  INFO("query heads 0..3 carry 1, 2, 4, 8: the sums tell which heads each K/V head got");
  CHECK(got(0, 0, 0, 0) == 3.0f);
  CHECK(got(0, 1, 0, 0) == 12.0f);
}
TEST_CASE("it is repeat_kv's adjoint: sum(repeat_kv(x) * d) = sum(x * sum_kv_groups(d))" *
          doctest::description("hint 2")) {
  for (const std::size_t KV : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{6}}) {
    INFO("H 6, KV " << KV << ": each K/V head fed H / KV = " << 6 / KV
                    << " query heads, and gets the sum of their gradients (not the mean)");
    const Tensor<4> d = wiggly<4>({2, 6, 3, 4}, 0.3 + static_cast<double>(KV), 1.5);
    const Tensor<4> got = ex11::sum_kv_groups(d, KV);
    Tensor<4> want(std::array<std::size_t, 4>{2, KV, 3, 4});
    want.fill(0.0f);
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t h = 0; h < 6; ++h)
        for (std::size_t t = 0; t < 3; ++t)
          for (std::size_t j = 0; j < 4; ++j) {
            const double sum = static_cast<double>(want(b, h / (6 / KV), t, j)) +
                               static_cast<double>(d(b, h, t, j));
            want(b, h / (6 / KV), t, j) = static_cast<float>(sum);
          }
    CHECK_TENSOR_NEAR(got, want, 1e-6, 1e-6);
  }
}
TEST_CASE("KV 0 or KV that does not divide H is rejected" * doctest::description("hint 1")) {
  CHECK_THROWS_AS(ex11::sum_kv_groups(wiggly<4>({1, 4, 2, 2}, 0.0), 3), std::invalid_argument);
  CHECK_THROWS_AS(ex11::sum_kv_groups(wiggly<4>({1, 4, 2, 2}, 0.0), 0), std::invalid_argument);
}
}  // TEST_SUITE

TEST_SUITE("ex11.7 ALiBi's bias") {
// The paper's slopes, written out: H = 8 halves from 1/2 down; H = 6 is H = 4's slopes then
// every other slope of H = 8 (1/2, 1/8).
std::vector<double> slopes_by_hand(std::size_t H) {
  if (H == 8) return {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625};
  if (H == 6) return {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
  if (H == 1) return {0.00390625};
  return {};
}
void check_bias(std::size_t H, std::size_t T) {
  const std::vector<double> m = slopes_by_hand(H);
  const Tensor<3> got = ex11::alibi_bias(H, T);
  REQUIRE(got.shape() == (std::array<std::size_t, 3>{H, T, T}));
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t s = 0; s < T; ++s) {
        const double want = -m[h] * (static_cast<double>(t) - static_cast<double>(s));
        if (std::abs(static_cast<double>(got(h, t, s)) - want) > 1e-6) {
          FAIL_CHECK("H " << H << ": bias[" << h << ", " << t << ", " << s << "] = " << got(h, t, s)
                          << ", expected -m_" << h << " (t - s) = " << want << " with m_" << h
                          << " = " << m[h]);
          return;
        }
      }
}
TEST_CASE("H 8: slopes 1/2, 1/4, ..., 1/256, the bias -m_h (t - s)" *
          doctest::description("hint 1")) {
  check_bias(8, 5);
}
TEST_CASE("H 6, not a power of two: H 4's slopes, then every other slope of H 8" *
          doctest::description("hint 2")) {
  check_bias(6, 4);
}
TEST_CASE("H 1: one slope, 2^-8; n_heads 0 is rejected" * doctest::description("hint 2")) {
  check_bias(1, 3);
  CHECK_THROWS_AS(ex11::alibi_bias(0, 3), std::invalid_argument);
}
}  // TEST_SUITE

TEST_SUITE("ex11.8 The rolling cache's slots") {
void check_slots(std::size_t length, std::size_t capacity, const std::vector<std::size_t>& want) {
  const std::vector<std::size_t> got = ex11::rolling_slots(length, capacity);
  std::string got_text, want_text;
  for (std::size_t s : got) got_text += (got_text.empty() ? "" : " ") + std::to_string(s);
  for (std::size_t s : want) want_text += (want_text.empty() ? "" : " ") + std::to_string(s);
  INFO("length " << length << ", capacity " << capacity << ": got slots [" << got_text
                 << "], expected [" << want_text << "] (slot k holds position length - n + k)");
  CHECK(got == want);
}
TEST_CASE("before the cache is full: slots 0 .. length - 1" * doctest::description("hint 1")) {
  check_slots(0, 4, {});
  check_slots(3, 4, {0, 1, 2});
  check_slots(4, 4, {0, 1, 2, 3});
}
TEST_CASE("after it wraps: the oldest kept position first, wherever its slot is" *
          doctest::description("hint 2")) {
  check_slots(6, 4, {2, 3, 0, 1});  // positions 2 3 4 5
  check_slots(9, 4, {1, 2, 3, 0});  // positions 5 6 7 8
  check_slots(10, 1, {0});          // window 1: only the newest
  check_slots(1000, 3, {1, 2, 0});  // positions 997 998 999
}
TEST_CASE("every slot holds the position that p % capacity puts there" *
          doctest::description("hint 3")) {
  for (std::size_t capacity = 1; capacity <= 5; ++capacity)
    for (std::size_t length = 0; length <= 12; ++length) {
      const std::vector<std::size_t> got = ex11::rolling_slots(length, capacity);
      const std::size_t n = std::min(length, capacity);
      REQUIRE_MESSAGE(got.size() == n, "length " << length << ", capacity " << capacity << ": " << n
                                                 << " slots expected, got " << got.size());
      for (std::size_t k = 0; k < n; ++k) {
        INFO("length " << length << ", capacity " << capacity << ": slots[" << k
                       << "] must hold position " << length - n + k);
        CHECK(got[k] == (length - n + k) % capacity);
      }
    }
}
TEST_CASE("capacity 0 is rejected" * doctest::description("hint 1")) {
  CHECK_THROWS_AS(ex11::rolling_slots(3, 0), std::invalid_argument);
}
}  // TEST_SUITE

TEST_SUITE("ex11.9 RoPE in the rotate-half layout") {
// The rotate-half layout's order: the interleaved head's even features first, then its odd
// ones, written out here (not attn::rope_half_permutation).
Tensor<4> evens_then_odds(const Tensor<4>& x) {
  Tensor<4> y = x;
  const std::size_t B = x.shape()[0], H = x.shape()[1], T = x.shape()[2], hs = x.shape()[3];
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t i = 0; i < hs / 2; ++i) {
          y(b, h, t, i) = x(b, h, t, 2 * i);
          y(b, h, t, hs / 2 + i) = x(b, h, t, 2 * i + 1);
        }
  return y;
}
// One row of hs features, all 0 but feature `one`.
Tensor<4> unit_row(std::size_t hs, std::size_t one) {
  Tensor<4> x = xt::zeros<float>(std::array<std::size_t, 4>{1, 1, 1, hs});
  x(0, 0, 0, one) = 1.0f;
  return x;
}
TEST_CASE("feature 0 at position 1 turns into features 0 and hs/2, by +1 radian" *
          doctest::description("hint 1")) {
  const std::size_t hs = 8;
  const Tensor<4> y = ex11::rope_rotate_half(unit_row(hs, 0), 10000.0, 1);
  REQUIRE(y.shape() == (std::array<std::size_t, 4>{1, 1, 1, hs}));
  for (std::size_t j = 1; j < hs; ++j) {
    if (j == hs / 2) continue;
    INFO("feature " << j << " is " << y(0, 0, 0, j) << ", expected 0: feature 0's partner is "
                    << "feature hs/2 = " << hs / 2
                    << std::string(j == 1 ? ", not its neighbour 1 (that is ex11.1's interleaved "
                                            "layout)"
                                          : ""));
    CHECK(std::abs(y(0, 0, 0, j)) < 1e-6f);
  }
  INFO(
      "pair (0, hs/2) = (1, 0) turned by +1 radian is (cos 1, sin 1) = (0.5403, 0.8415); "
      "got ("
      << y(0, 0, 0, 0) << ", " << y(0, 0, 0, hs / 2) << ")"
      << std::string(y(0, 0, 0, hs / 2) < 0.0f ? ": it turned clockwise, the sign of sin is flipped"
                                               : ""));
  CHECK(static_cast<double>(y(0, 0, 0, 0)) == doctest::Approx(std::cos(1.0)).epsilon(1e-6));
  CHECK(static_cast<double>(y(0, 0, 0, hs / 2)) == doctest::Approx(std::sin(1.0)).epsilon(1e-6));
}
TEST_CASE("the second half turns with its pair: feature hs/2 + 1 at position 5, theta 10000" *
          doctest::description("hint 2")) {
  // hs 8: pair 1 is (1, 5) and turns at 10000^(-2/8) = 0.1 radian a position, 0.5 at p = 5.
  // (0, 1) turned by +0.5 is (-sin 0.5, cos 0.5).
  const Tensor<4> y = ex11::rope_rotate_half(unit_row(8, 5), 10000.0, 5);
  REQUIRE(y.shape() == (std::array<std::size_t, 4>{1, 1, 1, 8}));
  const double got_angle =
      std::atan2(-static_cast<double>(y(0, 0, 0, 1)), static_cast<double>(y(0, 0, 0, 5)));
  INFO(
      "pair (1, 5) must turn by 5 * 10000^(-2 * 1 / 8) = 0.5 radian; from features 1 and 5 it "
      "turned by "
      << got_angle
      << ". Both features of a pair turn by the angle of pair i (i < hs/2): the feature index "
         "of the second half is not the pair's");
  CHECK(static_cast<double>(y(0, 0, 0, 1)) == doctest::Approx(-std::sin(0.5)).epsilon(1e-6));
  CHECK(static_cast<double>(y(0, 0, 0, 5)) == doctest::Approx(std::cos(0.5)).epsilon(1e-6));
}
TEST_CASE("it is ex11.1's rotation, reordered: rope_rotate_half(P x) = P rope(x)" *
          doctest::description("hint 3")) {
  const Tensor<4> x = wiggly<4>({2, 3, 5, 8}, 0.4, 1.5);
  for (const std::size_t offset : {std::size_t{0}, std::size_t{7}}) {
    INFO("offset " << offset << ": P x through rope_rotate_half against P (x through a "
                   << "double-precision loop of the interleaved rotation)");
    CHECK_TENSOR_NEAR(ex11::rope_rotate_half(evens_then_odds(x), 50.0, offset),
                      evens_then_odds(rope_loop(x, 50.0, offset)), 1e-5, 1e-4);
  }
  const Tensor<4> wide = wiggly<4>({1, 1, 3, 64}, 1.3);
  INFO("hs 64, theta 10000, offset 1000: the slow pairs too");
  CHECK_TENSOR_NEAR(ex11::rope_rotate_half(evens_then_odds(wide), 10000.0, 1000),
                    evens_then_odds(rope_loop(wide, 10000.0, 1000)), 1e-5, 1e-4);
}
TEST_CASE("an odd or zero head size, or a theta that is not > 0, is rejected" *
          doctest::description("hint 1")) {
  {
    INFO(
        "hs 5: no layout pairs 5 features (pair i with i + hs/2 leaves one out), throw "
        "std::invalid_argument");
    CHECK_THROWS_AS(ex11::rope_rotate_half(wiggly<4>({1, 1, 2, 5}, 0.0), 10000.0, 0),
                    std::invalid_argument);
  }
  CHECK_THROWS_AS(ex11::rope_rotate_half(xt::zeros<float>({1, 1, 2, 0}), 10000.0, 0),
                  std::invalid_argument);
  for (const double theta : {0.0, -2.0, std::numeric_limits<double>::infinity()}) {
    INFO("theta " << theta);
    CHECK_THROWS_AS(ex11::rope_rotate_half(wiggly<4>({1, 1, 2, 4}, 0.0), theta, 0),
                    std::invalid_argument);
  }
}
}  // TEST_SUITE

TEST_SUITE("ex11.10 The SwiGLU feed-forward network") {
attn::Matrix matrix(std::size_t R, std::size_t K, const std::vector<float>& values) {
  attn::Matrix m(std::array<std::size_t, 2>{R, K});
  for (std::size_t i = 0; i < values.size(); ++i) m.data()[i] = values[i];
  return m;
}
double sigmoid_d(double a) { return 1.0 / (1.0 + std::exp(-a)); }
// The FFN in double: y = (silu(x w_gate) * (x w_up)) w_down, token by token.
Tensor<3> swiglu_loop(const Tensor<3>& x, const attn::SwigluWeights<float>& w) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  const std::size_t F = w.w_gate.shape()[1];
  Tensor<3> y = xt::zeros<float>({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      std::vector<double> h(F, 0.0);
      for (std::size_t f = 0; f < F; ++f) {
        double a = 0.0, u = 0.0;
        for (std::size_t c = 0; c < C; ++c) {
          a += static_cast<double>(x(b, t, c)) * static_cast<double>(w.w_gate(c, f));
          u += static_cast<double>(x(b, t, c)) * static_cast<double>(w.w_up(c, f));
        }
        h[f] = a * sigmoid_d(a) * u;
      }
      for (std::size_t c = 0; c < C; ++c) {
        double s = 0.0;
        for (std::size_t f = 0; f < F; ++f) s += h[f] * static_cast<double>(w.w_down(f, c));
        y(b, t, c) = static_cast<float>(s);
      }
    }
  return y;
}
// One token, C = F = 1: x = 1, w_gate 2, w_up 3, w_down 0.5, so a = 2, u = 3.
TEST_CASE("one number through it: silu on the gate's branch, times the value's" *
          doctest::description("hint 1")) {
  const attn::SwigluWeights<float> w{matrix(1, 1, {2.0f}), matrix(1, 1, {3.0f}),
                                     matrix(1, 1, {0.5f})};
  Tensor<3> x = xt::ones<float>({1, 1, 1});
  const Tensor<3> y = ex11::swiglu(x, w);
  REQUIRE(y.shape() == (std::array<std::size_t, 3>{1, 1, 1}));
  const double got = static_cast<double>(y(0, 0, 0));
  const double want = 0.5 * 2.0 * sigmoid_d(2.0) * 3.0;  // w_down silu(a) u
  const struct {
    double value;
    const char* mistake;
  } mistakes[] = {
      {0.5 * 3.0 * sigmoid_d(3.0) * 2.0,
       "silu(x w_up) * (x w_gate): the branches are swapped, silu belongs to the gate's (w_gate)"},
      {0.5 * sigmoid_d(2.0) * 3.0,
       "sigmoid(a) * u: the gate is silu(a) = a sigmoid(a), not "
       "sigmoid(a)"},
      {0.5 * 6.0 * sigmoid_d(6.0),
       "silu(a * u): silu acts on the gate's branch alone, before "
       "the product"},
      {0.5 * 2.0 * 3.0, "a * u: the gate never went through silu"},
  };
  for (const auto& m : mistakes) {
    if (std::abs(got - m.value) < 1e-4 && std::abs(got - want) > 1e-4)
      FAIL_CHECK("x 1, w_gate 2, w_up 3, w_down 0.5 gave " << got << " = "
                                                           << std::string(m.mistake));
  }
  INFO("x 1, w_gate 2, w_up 3, w_down 0.5: a = 2, u = 3, expected 0.5 * silu(2) * 3 = " << want);
  CHECK(got == doctest::Approx(want).epsilon(1e-5));
}
TEST_CASE("a gate of 0 lets nothing through" * doctest::description("hint 1")) {
  const attn::SwigluWeights<float> w{xt::zeros<float>({3, 4}),
                                     matrix(3, 4, std::vector<float>(12, 1.0f)),
                                     matrix(4, 3, std::vector<float>(12, 1.0f))};
  const Tensor<3> x = wiggly<3>({1, 2, 3}, 0.7, 2.0);
  INFO("w_gate all 0: every a is 0, silu(0) = 0, so y must be 0 whatever w_up carries");
  CHECK_TENSOR_NEAR(ex11::swiglu(x, w), xt::zeros<float>({1, 2, 3}), 1e-7, 0.0);
}
TEST_CASE("gates of +100 and -100: silu(100) = 100, silu(-100) = about 0, never NaN" *
          doctest::description("hint 2")) {
  const attn::SwigluWeights<float> w{matrix(1, 1, {1.0f}), matrix(1, 1, {1.0f}),
                                     matrix(1, 1, {1.0f})};
  Tensor<3> x(std::array<std::size_t, 3>{1, 2, 1});
  x(0, 0, 0) = 100.0f;
  x(0, 1, 0) = -100.0f;
  const Tensor<3> y = ex11::swiglu(x, w);
  REQUIRE(y.shape() == (std::array<std::size_t, 3>{1, 2, 1}));
  INFO(
      "a = u = x: y = silu(x) * x, expected 10000 at x = 100 and about 0 (3.7e-40) at x = -100, "
      "got "
      << y(0, 0, 0) << " and " << y(0, 1, 0)
      << ". exp(100) overflows float (exp(89) already does): inf / inf or 0 * inf is NaN. "
         "Write sigmoid so that no inf meets another inf or a 0, e.g. 1 / (1 + exp(-a)), or "
         "compute it in double");
  CHECK(std::isfinite(y(0, 0, 0)));
  CHECK(std::isfinite(y(0, 1, 0)));
  CHECK(static_cast<double>(y(0, 0, 0)) == doctest::Approx(10000.0).epsilon(1e-5));
  CHECK(std::abs(y(0, 1, 0)) < 1e-6f);
}
TEST_CASE("every token matches a double-precision loop" * doctest::description("hint 3")) {
  const Tensor<3> x = wiggly<3>({2, 3, 4}, 0.3, 1.5);
  const attn::SwigluWeights<float> w{wiggly<2>({4, 6}, 1.1), wiggly<2>({4, 6}, 2.3),
                                     wiggly<2>({6, 4}, 0.9)};
  CHECK_TENSOR_NEAR(ex11::swiglu(x, w), swiglu_loop(x, w), 1e-5, 1e-4);
}
TEST_CASE("weights whose shapes disagree are rejected" * doctest::description("hint 1")) {
  const Tensor<3> x = wiggly<3>({1, 2, 4}, 0.3);
  const auto gate = wiggly<2>({4, 6}, 1.1), up = wiggly<2>({4, 6}, 2.3),
             down = wiggly<2>({6, 4}, 0.9);
  {
    INFO("w_up (4, 5) where w_gate is (4, 6)");
    CHECK_THROWS_AS(ex11::swiglu(x, {gate, wiggly<2>({4, 5}, 0.0), down}), std::invalid_argument);
  }
  {
    INFO("w_down (6, 3) where x has C = 4");
    CHECK_THROWS_AS(ex11::swiglu(x, {gate, up, wiggly<2>({6, 3}, 0.0)}), std::invalid_argument);
  }
  {
    INFO("w_gate (3, 6) where x has C = 4");
    CHECK_THROWS_AS(ex11::swiglu(x, {wiggly<2>({3, 6}, 0.0), wiggly<2>({3, 6}, 0.0), down}),
                    std::invalid_argument);
  }
}
}  // TEST_SUITE
