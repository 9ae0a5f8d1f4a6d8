// Tests for attn/ops/attention_ref.hpp, the reference attention with every option: against a
// naive formulation written here another way (a full (T, S) score matrix with -inf in the hidden
// places, each K/V head copied out to its query heads, softmax by attn::softmax), the identities
// that tie the options together (a cache step is a row of the whole sequence, KV groups are
// repeated heads, a bias of one constant per row changes nothing), the backward by float64
// central differences with every option at once, and each refusal in one line.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "attn/core/random.hpp"
#include "attn/ops/attention_ref.hpp"
#include "attn/ops/gqa.hpp"
#include "attn/ops/softmax.hpp"
#include "gradcheck_helpers.hpp"
#include "test_helpers.hpp"

namespace {

using attn::testing::error_of;
using T3 = xt::xtensor<double, 3>;
using T4 = xt::xtensor<double, 4>;

// The same attention written as the pages first write it: repeat the K/V heads, build the whole
// (T, S) score matrix, put -inf where a key is hidden, softmax each row, multiply by V.
attn::AttentionRefResult<double> naive(const T4& q, const T4& k, const T4& v,
                                       const attn::AttentionOptions& o, const T3* bias) {
  const std::size_t B = q.shape()[0], H = q.shape()[1], T = q.shape()[2], hs = q.shape()[3];
  const std::size_t S = k.shape()[2], hv = v.shape()[3];
  const T4 kr = attn::repeat_kv<double>(k, H), vr = attn::repeat_kv<double>(v, H);
  attn::AttentionRefResult<double> r{xt::zeros<double>({B, H, T, hv}),
                                     xt::zeros<double>({B, H, T, S})};
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h) {
      xt::xtensor<double, 2> scores = xt::zeros<double>({T, S});
      for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < S; ++j) {
          const std::size_t p = o.offset + i;
          const bool hidden = (o.causal && j > p) || (o.window && j + *o.window <= p);
          double dot = 0.0;
          for (std::size_t d = 0; d < hs; ++d) dot += q(b, h, i, d) * kr(b, h, j, d);
          scores(i, j) =
              hidden ? -std::numeric_limits<double>::infinity()
                     : dot / std::sqrt(static_cast<double>(hs)) + (bias ? (*bias)(h, i, j) : 0.0);
        }
      const xt::xtensor<double, 2> p = attn::softmax(scores);
      for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < S; ++j) {
          r.probs(b, h, i, j) = p(i, j);
          for (std::size_t d = 0; d < hv; ++d) r.out(b, h, i, d) += p(i, j) * vr(b, h, j, d);
        }
    }
  return r;
}

attn::AttentionOptions options(bool causal, std::optional<std::size_t> window,
                               std::size_t offset = 0) {
  attn::AttentionOptions o;
  o.causal = causal;
  o.window = window;
  o.offset = offset;
  return o;
}

// ALiBi's bias for H heads (Press et al. 2022): head h's slope m_h = 2^(-8 (h + 1) / H), and the
// score of query i for key j lowered by m_h times their distance, for T queries at offset over S.
T3 alibi(std::size_t H, std::size_t T, std::size_t S, std::size_t offset) {
  T3 bias = xt::zeros<double>({H, T, S});
  for (std::size_t h = 0; h < H; ++h) {
    const double m = std::pow(2.0, -8.0 * static_cast<double>(h + 1) / static_cast<double>(H));
    for (std::size_t i = 0; i < T; ++i)
      for (std::size_t j = 0; j < S; ++j)
        bias(h, i, j) = -m * std::abs(static_cast<double>(offset + i) - static_cast<double>(j));
  }
  return bias;
}

}  // namespace

TEST_SUITE("attention_ref") {

TEST_CASE("equals the naive (T, S) formulation: causal or not, windows, K/V groups, a bias") {
  attn::Rng rng(7);
  const std::size_t B = 2, H = 4, T = 6, hs = 3, hv = 5;
  for (const std::size_t KV : {1u, 2u, 4u})
    for (const bool causal : {false, true})
      for (const std::optional<std::size_t> window :
           {std::optional<std::size_t>{}, std::optional<std::size_t>{1},
            std::optional<std::size_t>{3}, std::optional<std::size_t>{T}})
        for (const bool with_bias : {false, true}) {
          if (window && !causal) continue;
          CAPTURE(KV);
          CAPTURE(causal);
          CAPTURE(window.value_or(0));
          CAPTURE(with_bias);
          const T4 q = attn::testing::randn64<4>(rng, {B, H, T, hs});
          const T4 k = attn::testing::randn64<4>(rng, {B, KV, T, hs});
          const T4 v = attn::testing::randn64<4>(rng, {B, KV, T, hv});
          const T3 bias = alibi(H, T, T, 0);
          const attn::AttentionOptions o = options(causal, window);
          const auto want = naive(q, k, v, o, with_bias ? &bias : nullptr);
          const auto got = with_bias ? attn::attention_ref<double>(q, k, v, o, bias)
                                     : attn::attention_ref<double>(q, k, v, o);
          CHECK_TENSOR_NEAR(got.out, want.out, 1e-13, 1e-12);
          CHECK_TENSOR_NEAR(got.probs, want.probs, 1e-14, 1e-12);
        }
}

TEST_CASE("a KV-cache step (one query at offset pos over pos + 1 keys) is row pos, bit for bit") {
  attn::Rng rng(8);
  const std::size_t H = 4, KV = 2, T = 9, hs = 4;
  const attn::Tensor<4> q = attn::randn<4>(rng, {1, H, T, hs});
  const attn::Tensor<4> k = attn::randn<4>(rng, {1, KV, T, hs});
  const attn::Tensor<4> v = attn::randn<4>(rng, {1, KV, T, hs});
  for (const std::optional<std::size_t> window :
       {std::optional<std::size_t>{}, std::optional<std::size_t>{3}}) {
    const auto whole = attn::attention_ref<float>(q, k, v, options(true, window));
    const xt::xtensor<float, 3> bias_all = xt::cast<float>(alibi(H, T, T, 0));
    const auto whole_biased = attn::attention_ref<float>(q, k, v, options(true, window), bias_all);
    for (std::size_t pos = 0; pos < T; ++pos) {
      CAPTURE(pos);
      const attn::Tensor<4> q1 = xt::view(q, xt::all(), xt::all(), xt::range(pos, pos + 1));
      const attn::Tensor<4> k1 = xt::view(k, xt::all(), xt::all(), xt::range(0, pos + 1));
      const attn::Tensor<4> v1 = xt::view(v, xt::all(), xt::all(), xt::range(0, pos + 1));
      const auto step = attn::attention_ref<float>(q1, k1, v1, options(true, window, pos));
      const attn::Tensor<4> row =
          xt::view(whole.out, xt::all(), xt::all(), xt::range(pos, pos + 1));
      CHECK_TENSOR_NEAR(step.out, row, 0.0, 0.0);
      const xt::xtensor<float, 3> bias1 = xt::cast<float>(alibi(H, 1, pos + 1, pos));
      const auto biased = attn::attention_ref<float>(q1, k1, v1, options(true, window, pos), bias1);
      const attn::Tensor<4> brow =
          xt::view(whole_biased.out, xt::all(), xt::all(), xt::range(pos, pos + 1));
      CHECK_TENSOR_NEAR(biased.out, brow, 0.0, 0.0);
    }
  }
}

TEST_CASE("K/V groups are repeated heads; a bias constant along each row changes nothing") {
  attn::Rng rng(9);
  const T4 q = attn::testing::randn64<4>(rng, {1, 6, 5, 2});
  const T4 k = attn::testing::randn64<4>(rng, {1, 2, 5, 2});
  const T4 v = attn::testing::randn64<4>(rng, {1, 2, 5, 2});
  const auto grouped = attn::attention_ref<double>(q, k, v, options(true, std::nullopt));
  const auto repeated = attn::attention_ref<double>(
      q, attn::repeat_kv<double>(k, 6), attn::repeat_kv<double>(v, 6), options(true, {}));
  CHECK_TENSOR_NEAR(grouped.out, repeated.out, 0.0, 0.0);
  // softmax(s + c) = softmax(s): a bias of c_{h,i} for every key of row i is no bias at all.
  T3 rows = xt::zeros<double>({6, 5, 5});
  for (std::size_t h = 0; h < 6; ++h)
    for (std::size_t i = 0; i < 5; ++i)
      for (std::size_t j = 0; j < 5; ++j) rows(h, i, j) = 3.0 * static_cast<double>(h) - 2.0 * i;
  const auto shifted = attn::attention_ref<double>(q, k, v, options(true, {}), rows);
  CHECK_TENSOR_NEAR(shifted.out, grouped.out, 1e-14, 1e-12);
  // ... while ALiBi's does: nearer keys gain weight.
  const auto tilted = attn::attention_ref<double>(q, k, v, options(true, {}), alibi(6, 5, 5, 0));
  CHECK(tilted.probs(0, 0, 4, 4) / tilted.probs(0, 0, 4, 0) >
        grouped.probs(0, 0, 4, 4) / grouped.probs(0, 0, 4, 0));
}

TEST_CASE("backward: float64 central differences with groups, a window, an offset and a bias") {
  attn::Rng rng(10);
  struct Case {
    std::size_t KV;
    bool causal;
    std::optional<std::size_t> window;
    std::size_t offset, S;
  };
  for (const Case c : {Case{3, false, {}, 0, 5}, Case{1, true, {}, 0, 5}, Case{3, true, 2, 0, 5},
                       Case{1, true, 3, 4, 9}, Case{3, true, {}, 2, 8}}) {
    CAPTURE(c.KV);
    CAPTURE(c.window.value_or(0));
    CAPTURE(c.offset);
    const std::size_t H = 3, T = 5, hs = 4, hv = 3;
    T4 q = attn::testing::randn64<4>(rng, {2, H, T, hs}, 1.5);
    T4 k = attn::testing::randn64<4>(rng, {2, c.KV, c.S, hs}, 1.5);
    T4 v = attn::testing::randn64<4>(rng, {2, c.KV, c.S, hv});
    const T4 r = attn::testing::randn64<4>(rng, {2, H, T, hv});
    const T3 bias = alibi(H, T, c.S, c.offset);
    const attn::AttentionOptions o = options(c.causal, c.window, c.offset);
    auto loss = [&] {
      return attn::testing::dot64(attn::attention_ref<double>(q, k, v, o, bias).out, r);
    };
    const auto fwd = attn::attention_ref<double>(q, k, v, o, bias);
    const auto g = attn::attention_ref_backward<double>(r, q, k, v, fwd.probs, o);
    const std::string op = "attention_ref KV " + std::to_string(c.KV);
    using attn::testing::central_differences64;
    attn::testing::check_grad64(op, "q", central_differences64<T4>(loss, q, g.dq));
    attn::testing::check_grad64(op, "k", central_differences64<T4>(loss, k, g.dk));
    attn::testing::check_grad64(op, "v", central_differences64<T4>(loss, v, g.dv));
    if (c.KV < H) {
      // Wrong: the gradient of only the first query head of each group (the sum forgotten).
      const auto first = attn::attention_ref_backward<double>(
          r, q, attn::repeat_kv<double>(k, H), attn::repeat_kv<double>(v, H), fwd.probs, o);
      T4 dv_first = xt::zeros<double>(v.shape());
      for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t g2 = 0; g2 < c.KV; ++g2)
          xt::view(dv_first, b, g2) = xt::view(first.dv, b, g2 * (H / c.KV));
      attn::testing::check_grad64_caught(op, "v", central_differences64<T4>(loss, v, dv_first));
    }
  }
}

TEST_CASE("bad input is refused in one line naming attention_ref") {
  const T4 q = xt::zeros<double>({1, 4, 3, 2});
  const T4 k = xt::zeros<double>({1, 2, 3, 2});
  CHECK(error_of([&] { (void)attn::attention_ref<double>(q, k, k, options(true, 0)); }) ==
        "attn::attention_ref: window must be at least 1 (the query's own key), got 0");
  CHECK(error_of([&] { (void)attn::attention_ref<double>(q, k, k, options(false, 2)); }) ==
        "attn::attention_ref: a sliding window is causal: window = 2 needs causal attention (or "
        "no window)");
  const T4 k3 = xt::zeros<double>({1, 3, 3, 2});
  CHECK(error_of([&] { (void)attn::attention_ref<double>(q, k3, k3, options(true, {})); })
            .starts_with("attn::attention_ref: expected hs >= 1, at least one key (S >= 1) and "
                         "K/V heads KV dividing H"));
  CHECK(error_of([&] { (void)attn::attention_ref<double>(q, k, k, options(true, {}, 1)); }) ==
        "attn::attention_ref: causal queries at positions 1..3 need the keys up to their own "
        "(S >= 4), got S = 3");
  attn::AttentionOptions far = options(false, {});
  far.offset = std::numeric_limits<std::size_t>::max() - 1;
  CHECK(error_of([&] { (void)attn::attention_ref<double>(q, k, k, far); })
            .starts_with("attn::attention_ref: offset = 18446744073709551614 puts the queries' "
                         "positions past 2^64"));
  const T4 short_v = xt::zeros<double>({1, 2, 2, 2});
  CHECK(error_of([&] { (void)attn::attention_ref<double>(q, k, short_v, options(false, {})); })
            .starts_with("attn::attention_ref: expected q (B, H, T, hs), k (B, KV, S, hs), v (B, "
                         "KV, S, hv)"));
  const T3 bias = xt::zeros<double>({4, 3, 2});
  CHECK(error_of([&] {
          (void)attn::attention_ref<double>(q, k, k, options(true, {}), bias);
        }).starts_with("attn::attention_ref: expected a score bias (H, T, S) = (4, 3, 3)"));
  const T4 probs = xt::zeros<double>({1, 4, 3, 2});
  CHECK(error_of([&] {
          (void)attn::attention_ref_backward<double>(q, q, k, k, probs, options(true, {}));
        })
            .starts_with("attn::attention_ref_backward: expected the forward's attention "
                         "probabilities (B, H, T, S) = (1, 4, 3, 3)"));
}

}  // TEST_SUITE
