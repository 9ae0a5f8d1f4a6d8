// Tests for attn/ops/swa.hpp, sliding-window attention (chapter 11): a naive loop over the band of
// keys, the limits (window 1 copies v; window >= T is chapter 04's causal attention), and the
// backward by float64 central differences, which also catch a backward run with causal
// attention's weights (the window forgotten).
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "attn/core/random.hpp"
#include "attn/ops/attention.hpp"
#include "attn/ops/swa.hpp"
#include "gradcheck_helpers.hpp"
#include "test_helpers.hpp"

namespace {

using attn::testing::error_of;

using T4 = xt::xtensor<double, 4>;

// Query t attends to keys max(0, t - W + 1) .. t: softmax over that band only.
attn::WindowAttention<double> naive_swa(const T4& q, const T4& k, const T4& v, std::size_t W) {
  const std::size_t B = q.shape()[0], H = q.shape()[1], T = q.shape()[2], hs = q.shape()[3];
  attn::WindowAttention<double> r{xt::zeros<double>({B, H, T, hs}),
                                  xt::zeros<double>({B, H, T, T})};
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t) {
        const std::size_t first = t + 1 >= W ? t + 1 - W : 0;
        double sum = 0.0;
        for (std::size_t s = first; s <= t; ++s) {
          double dot = 0.0;
          for (std::size_t i = 0; i < hs; ++i) dot += q(b, h, t, i) * k(b, h, s, i);
          r.weights(b, h, t, s) = std::exp(dot / std::sqrt(static_cast<double>(hs)));
          sum += r.weights(b, h, t, s);
        }
        for (std::size_t s = first; s <= t; ++s) {
          r.weights(b, h, t, s) /= sum;
          for (std::size_t i = 0; i < hs; ++i)
            r.out(b, h, t, i) += r.weights(b, h, t, s) * v(b, h, s, i);
        }
      }
  return r;
}

}  // namespace

TEST_SUITE("swa") {

TEST_CASE("equals a naive loop over the band of keys (windows 1, 2, 3, T - 1, T, 2T)") {
  attn::Rng rng(41);
  const T4 q = attn::testing::randn64<4>(rng, {2, 2, 7, 4});
  const T4 k = attn::testing::randn64<4>(rng, {2, 2, 7, 4});
  const T4 v = attn::testing::randn64<4>(rng, {2, 2, 7, 4});
  for (const std::size_t W : {1u, 2u, 3u, 6u, 7u, 14u}) {
    CAPTURE(W);
    const auto want = naive_swa(q, k, v, W);
    const auto got = attn::sliding_window_attention<double>(q, k, v, W);
    CHECK_TENSOR_NEAR(got.out, want.out, 1e-13, 1e-12);
    CHECK_TENSOR_NEAR(got.weights, want.weights, 1e-14, 1e-12);
  }
}

TEST_CASE("window 1 copies v; window >= T is causal attention (chapter 04's, in float)") {
  attn::Rng rng(42);
  const attn::Tensor<4> q = attn::randn<4>(rng, {1, 3, 6, 8});
  const attn::Tensor<4> k = attn::randn<4>(rng, {1, 3, 6, 8});
  const attn::Tensor<4> v = attn::randn<4>(rng, {1, 3, 6, 8});
  const auto one = attn::sliding_window_attention<float>(q, k, v, 1);
  CHECK_TENSOR_NEAR(one.out, v, 0.0, 0.0);
  const attn::AttentionResult causal = attn::scaled_dot_product_attention(q, k, v, true);
  for (const std::size_t W : {6u, 7u, 1000u}) {
    CAPTURE(W);
    const auto r = attn::sliding_window_attention<float>(q, k, v, W);
    CHECK_TENSOR_NEAR(r.out, causal.out, 1e-6, 1e-5);
    CHECK_TENSOR_NEAR(r.weights, causal.weights, 1e-6, 1e-5);
  }
  // A window below T forgets: query 5 with W = 2 gives keys 0..3 weight exactly 0.
  const auto two = attn::sliding_window_attention<float>(q, k, v, 2);
  for (std::size_t s = 0; s < 4; ++s) CHECK(two.weights(0, 1, 5, s) == 0.0f);
  CHECK(two.weights(0, 1, 5, 4) + two.weights(0, 1, 5, 5) == doctest::Approx(1.0f));
}

TEST_CASE("backward: float64 central differences agree; the window forgotten in it fails") {
  attn::Rng rng(43);
  for (const std::size_t W : {1u, 3u, 9u}) {
    CAPTURE(W);
    T4 q = attn::testing::randn64<4>(rng, {1, 2, 7, 4}, 1.5);
    T4 k = attn::testing::randn64<4>(rng, {1, 2, 7, 4}, 1.5);
    T4 v = attn::testing::randn64<4>(rng, {1, 2, 7, 4});
    const T4 r = attn::testing::randn64<4>(rng, {1, 2, 7, 4});
    auto loss = [&] {
      return attn::testing::dot64(attn::sliding_window_attention<double>(q, k, v, W).out, r);
    };
    const auto fwd = attn::sliding_window_attention<double>(q, k, v, W);
    const auto g = attn::sliding_window_attention_backward<double>(r, q, k, v, fwd.weights, W);
    const std::string op = "swa W " + std::to_string(W);
    using attn::testing::central_differences64;
    attn::testing::check_grad64(op, "q", central_differences64<T4>(loss, q, g.dq));
    attn::testing::check_grad64(op, "k", central_differences64<T4>(loss, k, g.dk));
    attn::testing::check_grad64(op, "v", central_differences64<T4>(loss, v, g.dv));
    if (W < 7) {
      // Wrong: the backward fed causal attention's weights (every earlier key, not the window's).
      const auto full = attn::windowed_attention<double>(q, k, v, true, 0);
      const auto w = attn::windowed_attention_backward<double>(r, q, k, v, full.weights, true, 0);
      attn::testing::check_grad64_caught(op, "v", central_differences64<T4>(loss, v, w.dv));
    }
  }
}

TEST_CASE("bad input: window 0, mismatched shapes, a window without causal") {
  const T4 q = xt::zeros<double>({1, 1, 3, 2});
  CHECK(error_of([&] { (void)attn::sliding_window_attention<double>(q, q, q, 0); }) ==
        "attn::sliding_window_attention: window must be at least 1 (the query's own key), got 0");
  const T4 k = xt::zeros<double>({1, 1, 4, 2});
  CHECK(error_of([&] {
          (void)attn::sliding_window_attention<double>(q, k, k, 2);
        }).starts_with("attn::windowed_attention: expected q, k, v of one shape (B, H, T, hs)"));
  CHECK(error_of([&] { (void)attn::windowed_attention<double>(q, q, q, false, 2); }) ==
        "attn::windowed_attention: a sliding window is causal: window = 2 needs causal attention "
        "(or window 0 for none)");
}

}  // TEST_SUITE
