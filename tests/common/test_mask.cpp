// Tests for attn/ops/mask.hpp: causal masks and masked softmax (chapters 02-03).
// The patterns are spelled out by hand; masked softmax is compared with a per-row reference in
// double, across ranks, and on the inputs that break it: inf/NaN scores under the mask, rows
// with no allowed key, and the naive triu * -inf mask whose zeros turn into NaN.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attn/ops/mask.hpp"
#include "attn/ops/softmax.hpp"
#include "attn/core/random.hpp"
#include "attn/train/gradcheck.hpp"
#include "gradcheck_helpers.hpp"
#include "test_helpers.hpp"

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Softmax of each (T, S) slice's rows over the allowed keys only, in double; zeros elsewhere and
// for rows with no allowed key.
template <std::size_t N>
attn::Tensor<N> reference_masked_softmax(const attn::Tensor<N>& scores, const attn::Mask& allowed) {
  const std::size_t T = allowed.shape()[0];
  const std::size_t S = allowed.shape()[1];
  attn::Tensor<N> out(scores.shape());
  for (std::size_t b = 0; b < scores.size() / (T * S); ++b) {
    for (std::size_t t = 0; t < T; ++t) {
      const float* in = scores.data() + (b * T + t) * S;
      float* row = out.data() + (b * T + t) * S;
      double sum = 0.0;
      for (std::size_t s = 0; s < S; ++s)
        if (allowed(t, s)) sum += std::exp(static_cast<double>(in[s]));
      for (std::size_t s = 0; s < S; ++s)
        row[s] =
            allowed(t, s) ? static_cast<float>(std::exp(static_cast<double>(in[s])) / sum) : 0.0f;
    }
  }
  return out;
}

}  // namespace

TEST_SUITE("mask") {

TEST_CASE("causal_mask is true on and below the diagonal") {
  SUBCASE("T = 1") {
    const attn::Mask m = attn::causal_mask(1);
    REQUIRE(m.shape()[0] == 1);
    CHECK(m(0, 0));
  }
  SUBCASE("T = 3") {
    const attn::Mask want = {{true, false, false}, {true, true, false}, {true, true, true}};
    CHECK(attn::causal_mask(3) == want);
  }
  SUBCASE("T = 4") {
    const attn::Mask want = {{true, false, false, false},
                             {true, true, false, false},
                             {true, true, true, false},
                             {true, true, true, true}};
    CHECK(attn::causal_mask(4) == want);
  }
}

TEST_CASE("the additive mask is 0 where allowed and -inf above the diagonal, never NaN") {
  for (std::size_t T : {1u, 3u, 4u}) {
    const attn::Matrix m = attn::causal_mask_additive(T);
    REQUIRE(m.shape()[0] == T);
    REQUIRE(m.shape()[1] == T);
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t s = 0; s < T; ++s) CHECK(m(t, s) == (s <= t ? 0.0f : -kInf));
  }
}

TEST_CASE("the naive triu(ones, 1) * -inf mask is NaN exactly on and below the diagonal") {
  const std::size_t T = 4;
  const attn::Matrix m = attn::causal_mask_additive_naive(T);
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t s = 0; s < T; ++s) {
      if (s <= t) {
        CHECK(std::isnan(m(t, s)));  // 0 * -inf
      } else {
        CHECK(m(t, s) == -kInf);  // 1 * -inf
      }
    }
  }
}

TEST_CASE("masked softmax matches a per-row reference, with masked weights exactly 0") {
  attn::Rng rng(21);
  const attn::Mask causal = attn::causal_mask(5);
  SUBCASE("rank 2 (T, T)") {
    const attn::Matrix s = attn::randn(rng, 5, 5, 2.0f);
    CHECK_TENSOR_NEAR(attn::masked_softmax<2>(s, causal), reference_masked_softmax<2>(s, causal),
                      1e-7, 1e-5);
  }
  SUBCASE("rank 3 (B, T, T)") {
    const attn::Tensor<3> s = attn::randn<3>(rng, {3, 5, 5}, 2.0f);
    CHECK_TENSOR_NEAR(attn::masked_softmax<3>(s, causal), reference_masked_softmax<3>(s, causal),
                      1e-7, 1e-5);
  }
  SUBCASE("rank 4 (B, H, T, T)") {
    const attn::Tensor<4> s = attn::randn<4>(rng, {2, 3, 5, 5}, 2.0f);
    const attn::Tensor<4> w = attn::masked_softmax<4>(s, causal);
    CHECK_TENSOR_NEAR(w, reference_masked_softmax<4>(s, causal), 1e-7, 1e-5);
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::size_t t = (i / 5) % 5;
      const std::size_t k = i % 5;
      if (k > t) CHECK(w.data()[i] == 0.0f);
    }
  }
  SUBCASE("a rectangular (T, S) mask") {
    const attn::Mask m = {{true, false, true, false, true},
                          {false, true, true, true, false},
                          {true, true, true, true, true}};
    const attn::Tensor<3> s = attn::randn<3>(rng, {2, 3, 5});
    CHECK_TENSOR_NEAR(attn::masked_softmax<3>(s, m), reference_masked_softmax<3>(s, m), 1e-7, 1e-5);
  }
}

TEST_CASE("the boolean and the additive causal masks give the same weights") {
  attn::Rng rng(4);
  const attn::Tensor<4> s = attn::randn<4>(rng, {2, 2, 6, 6}, 3.0f);
  CHECK_TENSOR_NEAR(attn::masked_softmax<4>(s, attn::causal_mask(6)),
                    attn::masked_softmax<4>(s, attn::causal_mask_additive(6)), 1e-7, 1e-6);
}

TEST_CASE("the (T, T) mask broadcasts over (B, H, T, T): every slice is masked the same way") {
  attn::Rng rng(8);
  const attn::Tensor<4> s = attn::randn<4>(rng, {2, 3, 4, 4});
  const attn::Mask causal = attn::causal_mask(4);
  const attn::Tensor<4> w = attn::masked_softmax<4>(s, causal);
  for (std::size_t b = 0; b < 2; ++b) {
    for (std::size_t h = 0; h < 3; ++h) {
      const attn::Matrix slice = xt::view(s, b, h, xt::all(), xt::all());
      const attn::Matrix want = attn::masked_softmax<2>(slice, causal);
      const attn::Matrix got = xt::view(w, b, h, xt::all(), xt::all());
      CHECK_TENSOR_NEAR(got, want, 0.0, 0.0);
    }
  }
}

TEST_CASE("masked positions get exactly 0 even when their score is inf or NaN") {
  attn::Matrix s = {{1.0f, kNaN, kInf}, {2.0f, 3.0f, -kInf}, {0.5f, 0.5f, 0.5f}};
  s(1, 2) = kNaN;
  const attn::Matrix w = attn::masked_softmax<2>(s, attn::causal_mask(3));
  const attn::Matrix want = {{1.0f, 0.0f, 0.0f},
                             {0.26894142f, 0.73105858f, 0.0f},
                             {1.0f / 3.0f, 1.0f / 3.0f, 1.0f / 3.0f}};
  CHECK_TENSOR_NEAR(w, want, 1e-7, 1e-6);
  CHECK(w(0, 1) == 0.0f);
  CHECK(w(0, 2) == 0.0f);
  CHECK(w(1, 2) == 0.0f);
}

TEST_CASE("a query with no allowed key gets a row of zeros, never NaN") {
  const attn::Mask m = {{false, false, false}, {true, false, true}};
  attn::Rng rng(2);
  const attn::Tensor<3> s = attn::randn<3>(rng, {2, 2, 3});
  const attn::Tensor<3> w = attn::masked_softmax<3>(s, m);
  for (std::size_t b = 0; b < 2; ++b) {
    for (std::size_t k = 0; k < 3; ++k) CHECK(w(b, 0, k) == 0.0f);
    CHECK(w(b, 1, 0) + w(b, 1, 2) == doctest::Approx(1.0f));
  }
  SUBCASE("the same with an additive mask that is -inf across the row") {
    const attn::Matrix add = {{-kInf, -kInf, -kInf}, {0.0f, -kInf, 0.0f}};
    CHECK_TENSOR_NEAR(attn::masked_softmax<3>(s, add), w, 1e-7, 1e-6);
  }
}

TEST_CASE("a NaN in an additive mask propagates: the naive mask makes every weight NaN") {
  attn::Rng rng(6);
  const attn::Matrix s = attn::randn(rng, 4, 4);
  const attn::Matrix w = attn::masked_softmax<2>(s, attn::causal_mask_additive_naive(4));
  for (const float v : w) CHECK(std::isnan(v));
}

TEST_CASE("masked softmax of zeros under the causal mask averages the past: 1 / (t + 1)") {
  const attn::Matrix zeros = xt::zeros<float>({4, 4});
  const attn::Matrix w = attn::masked_softmax<2>(zeros, attn::causal_mask(4));
  for (std::size_t t = 0; t < 4; ++t)
    for (std::size_t s = 0; s < 4; ++s)
      CHECK(w(t, s) == doctest::Approx(s <= t ? 1.0 / static_cast<double>(t + 1) : 0.0));
}

TEST_CASE("a mask whose shape does not match the last two axes is an error naming both shapes") {
  const attn::Tensor<3> s = xt::zeros<float>({2, 4, 4});
  CHECK_THROWS_WITH_AS(attn::masked_softmax<3>(s, attn::causal_mask(3)),
                       "attn::masked_softmax: expected scores of shape (..., T, S) matching mask "
                       "(T, S), got scores (2, 4, 4) and mask (3, 3)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(attn::masked_softmax<3>(s, attn::causal_mask_additive(3)),
                       "attn::masked_softmax: expected scores of shape (..., T, S) matching mask "
                       "(T, S), got scores (2, 4, 4) and mask (3, 3)",
                       std::invalid_argument);
  const attn::Matrix rect = xt::zeros<float>({4, 5});
  CHECK_THROWS_AS(attn::masked_softmax<2>(rect, attn::causal_mask(4)), std::invalid_argument);
}

}  // TEST_SUITE

TEST_SUITE("mask.backward") {

using attn::testing::check_gradients;
using attn::testing::cspan_of;
using attn::testing::span_of;
using attn::testing::upstream;

TEST_CASE("masked_softmax_backward matches central differences; masked scores get no gradient") {
  attn::Rng rng(82);
  for (std::size_t T : {1, 2, 5}) {
    const attn::Mask mask = attn::causal_mask(T);
    attn::Tensor<3> s = attn::randn<3>(rng, {2, T, T}, 2.0f);
    const attn::Tensor<3> r = upstream(s, 9);
    const attn::Tensor<3> ds =
        attn::masked_softmax_backward<3>(attn::masked_softmax<3>(s, mask), r);
    check_gradients("masked_softmax T=" + std::to_string(T),
                    attn::grad_check(
                        [&] {
                          return attn::weighted_sum(cspan_of(attn::masked_softmax<3>(s, mask)),
                                                    cspan_of(r));
                        },
                        {{"scores", span_of(s), cspan_of(ds)}}));
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t u = t + 1; u < T; ++u) CHECK(ds(b, t, u) == 0.0f);
  }
}

TEST_CASE("masked_softmax_backward at rank 2 and 4, and its shape error") {
  attn::Rng rng(83);
  const attn::Mask mask = attn::causal_mask(3);
  const attn::Matrix s2 = attn::randn<2>(rng, {3, 3});
  const attn::Matrix y2 = attn::masked_softmax<2>(s2, mask);
  const attn::Matrix r2 = upstream(s2, 1);
  CHECK_TENSOR_NEAR(attn::masked_softmax_backward<2>(y2, r2), attn::softmax_backward<2>(y2, r2),
                    0.0, 0.0);
  const attn::Tensor<4> s4 = attn::randn<4>(rng, {1, 2, 3, 3});
  const attn::Tensor<4> y4 = attn::masked_softmax<4>(s4, mask);
  CHECK(attn::masked_softmax_backward<4>(y4, upstream(s4, 2)).shape() == s4.shape());
  CHECK_THROWS_WITH_AS(
      attn::masked_softmax_backward<2>(y2, attn::Matrix(xt::zeros<float>({3, 2}))),
      "attn::masked_softmax_backward: expected dy of the same shape as y (3, 3), got dy (3, 2)",
      std::invalid_argument);
}

}  // TEST_SUITE
