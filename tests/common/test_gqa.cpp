// Tests for attn/ops/gqa.hpp, grouped-query attention (chapter 11): with n_kv_heads = n_heads it is
// chapter 05's multi-head attention; with fewer K/V heads it is MHA whose K/V columns are shared
// (tiled), n_kv_heads = 1 being multi-query attention; RoPE and the window compose as their own
// ops; and the backward passes float64 central differences, while a K/V gradient that is not
// summed over the group's query heads fails.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "attn/core/random.hpp"
#include "attn/ops/attention.hpp"
#include "attn/ops/gqa.hpp"
#include "attn/ops/linear.hpp"
#include "attn/ops/rope.hpp"
#include "attn/ops/swa.hpp"
#include "gradcheck_helpers.hpp"
#include "test_helpers.hpp"

namespace {

using attn::testing::error_of;

using T3 = xt::xtensor<double, 3>;
using T4 = xt::xtensor<double, 4>;
using M64 = xt::xtensor<double, 2>;

template <class S>
attn::GqaWeights<S> random_gqa(attn::Rng& rng, std::size_t C, std::size_t KV_hs) {
  const double std = 1.0 / std::sqrt(static_cast<double>(C));
  attn::GqaWeights<double> w{
      attn::testing::randn64<2>(rng, {C, C}, std), attn::testing::randn64<2>(rng, {C, KV_hs}, std),
      attn::testing::randn64<2>(rng, {C, KV_hs}, std), attn::testing::randn64<2>(rng, {C, C}, std)};
  return {xt::cast<S>(w.w_q), xt::cast<S>(w.w_k), xt::cast<S>(w.w_v), xt::cast<S>(w.w_o)};
}

// (C, KV*hs) -> (C, H*hs): column block h is K/V block h / (H / KV), as MHA's (C, C) weight.
template <class S>
xt::xtensor<S, 2> tile_kv(const xt::xtensor<S, 2>& w, std::size_t H, std::size_t KV,
                          std::size_t hs) {
  xt::xtensor<S, 2> out = xt::xtensor<S, 2>::from_shape({w.shape()[0], H * hs});
  for (std::size_t h = 0; h < H; ++h) {
    const std::size_t g = h / (H / KV);
    xt::view(out, xt::all(), xt::range(h * hs, (h + 1) * hs)) =
        xt::view(w, xt::all(), xt::range(g * hs, (g + 1) * hs));
  }
  return out;
}

// The reverse of tile_kv for a gradient: block g collects the blocks of its group's heads
// (`first_only`: the mistake of keeping only the first head's).
M64 untile_grad(const M64& d, std::size_t H, std::size_t KV, std::size_t hs, bool first_only) {
  M64 out = xt::zeros<double>({d.shape()[0], KV * hs});
  for (std::size_t h = 0; h < H; ++h) {
    const std::size_t g = h / (H / KV);
    if (first_only && h % (H / KV) != 0) continue;
    xt::view(out, xt::all(), xt::range(g * hs, (g + 1) * hs)) +=
        xt::view(d, xt::all(), xt::range(h * hs, (h + 1) * hs));
  }
  return out;
}

}  // namespace

TEST_SUITE("gqa") {

TEST_CASE("n_kv_heads = n_heads is chapter 05's multi-head attention (float, causal or not)") {
  // The default config is that attention too: as many K/V heads as query heads, no window.
  CHECK(attn::GqaConfig{}.n_kv_heads == attn::GqaConfig{}.n_heads);
  CHECK_FALSE(attn::GqaConfig{}.window);
  attn::Rng rng(51);
  const attn::Tensor<3> x = attn::randn<3>(rng, {2, 5, 8});
  const attn::GqaWeights<float> w = random_gqa<float>(rng, 8, 8);
  for (const bool causal : {true, false}) {
    CAPTURE(causal);
    attn::GqaConfig config;
    config.n_heads = config.n_kv_heads = 2;
    config.causal = causal;
    const attn::GqaResult<float> g = attn::gqa_forward<float>(x, w, config);
    const attn::MhaResult m = attn::mha_forward(x, {w.w_q, w.w_k, w.w_v, w.w_o}, 2, causal);
    CHECK_TENSOR_NEAR(g.out, m.out, 1e-6, 1e-5);
    CHECK_TENSOR_NEAR(g.weights, m.weights, 1e-6, 1e-5);
  }
}

TEST_CASE("fewer K/V heads: MHA with K/V columns shared by each group (MQA at n_kv_heads 1)") {
  attn::Rng rng(52);
  const std::size_t C = 12, H = 4, hs = 3;
  const attn::Tensor<3> x = attn::randn<3>(rng, {2, 6, C});
  for (const std::size_t KV : {1u, 2u}) {
    CAPTURE(KV);
    const attn::GqaWeights<float> w = random_gqa<float>(rng, C, KV * hs);
    attn::GqaConfig config;
    config.n_heads = H;
    config.n_kv_heads = KV;
    const attn::GqaResult<float> g = attn::gqa_forward<float>(x, w, config);
    const attn::MhaWeights tiled{w.w_q, tile_kv(w.w_k, H, KV, hs), tile_kv(w.w_v, H, KV, hs),
                                 w.w_o};
    const attn::MhaResult m = attn::mha_forward(x, tiled, H, true);
    CHECK_TENSOR_NEAR(g.out, m.out, 1e-6, 1e-5);
    CHECK_TENSOR_NEAR(g.weights, m.weights, 1e-6, 1e-5);
  }
}

TEST_CASE("repeat_kv and sum_kv_groups are adjoint: <repeat(a), b> = <a, sum(b)>") {
  attn::Rng rng(53);
  const T4 a = attn::testing::randn64<4>(rng, {2, 2, 3, 4});
  const T4 b = attn::testing::randn64<4>(rng, {2, 6, 3, 4});
  const T4 rep = attn::repeat_kv<double>(a, 6);
  CHECK(rep(1, 2, 2, 3) == a(1, 0, 2, 3));  // head 2 of 6 reads group 2 / 3 = 0
  CHECK(rep(1, 3, 2, 3) == a(1, 1, 2, 3));
  CHECK(attn::testing::dot64(rep, b) ==
        doctest::Approx(attn::testing::dot64(a, attn::sum_kv_groups<double>(b, 2))).epsilon(1e-13));
}

TEST_CASE("RoPE and the window compose as their own ops (rope, sliding_window_attention)") {
  attn::Rng rng(54);
  const std::size_t C = 8, H = 2, KV = 1, hs = 4, T = 7;
  const T3 x = attn::testing::randn64<3>(rng, {1, T, C});
  const attn::GqaWeights<double> w = random_gqa<double>(rng, C, KV * hs);
  attn::GqaConfig config;
  config.n_heads = H;
  config.n_kv_heads = KV;
  config.rope = true;
  config.theta = 100.0;
  config.window = 3;
  const attn::GqaResult<double> g = attn::gqa_forward<double>(x, w, config);
  // By hand: project, split, rotate, share the K/V head, attend in the window, merge, project.
  auto heads = [&](const M64& wm, std::size_t n) {
    T4 out = xt::zeros<double>({std::size_t{1}, n, T, hs});
    for (std::size_t h = 0; h < n; ++h)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t i = 0; i < hs; ++i)
          for (std::size_t c = 0; c < C; ++c) out(0, h, t, i) += x(0, t, c) * wm(c, h * hs + i);
    return out;
  };
  const T4 q = attn::rope<double>(heads(w.w_q, H), 100.0);
  const T4 k = attn::rope<double>(heads(w.w_k, KV), 100.0);
  const T4 v = heads(w.w_v, KV);
  const T4 k2 = xt::concatenate(xt::xtuple(k, k), 1);
  const T4 v2 = xt::concatenate(xt::xtuple(v, v), 1);
  const auto a = attn::sliding_window_attention<double>(q, k2, v2, 3);
  T3 want = xt::zeros<double>({std::size_t{1}, T, C});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t o = 0; o < C; ++o)
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t i = 0; i < hs; ++i)
          want(0, t, o) += a.out(0, h, t, i) * w.w_o(h * hs + i, o);
  CHECK_TENSOR_NEAR(g.out, want, 1e-12, 1e-10);
  CHECK_TENSOR_NEAR(g.weights, a.weights, 1e-14, 1e-12);
  // Without RoPE the result differs (the option is not ignored), and a window >= T is none.
  attn::GqaConfig plain = config;
  plain.rope = false;
  CHECK(xt::amax(xt::abs(attn::gqa_forward<double>(x, w, plain).out - g.out))() > 1e-3);
  plain.window = T;
  attn::GqaConfig no_window = plain;
  no_window.window = std::nullopt;
  CHECK_TENSOR_NEAR(attn::gqa_forward<double>(x, w, plain).out,
                    attn::gqa_forward<double>(x, w, no_window).out, 1e-14, 1e-12);
}

TEST_CASE("backward: float64 central differences agree; a K/V gradient not summed fails") {
  attn::Rng rng(55);
  const std::size_t C = 8, H = 4, hs = 2;
  struct Variant {
    std::size_t KV;
    bool rope;
    std::optional<std::size_t> window;  // none: every earlier key
  };
  for (const Variant variant :
       {Variant{2, true, 3}, Variant{1, false, std::nullopt}, Variant{4, true, std::nullopt}}) {
    const std::size_t KV = variant.KV;
    const std::string op = "gqa KV " + std::to_string(KV) + (variant.rope ? " rope" : "") +
                           (variant.window ? " window " + std::to_string(*variant.window) : "");
    attn::GqaConfig config;
    config.n_heads = H;
    config.n_kv_heads = KV;
    config.rope = variant.rope;
    config.theta = 30.0;
    config.window = variant.window;
    T3 x = attn::testing::randn64<3>(rng, {2, 5, C});
    attn::GqaWeights<double> w = random_gqa<double>(rng, C, KV * hs);
    w.w_q *= 2.0;  // sharper attention: the softmax's gradient matters
    const T3 r = attn::testing::randn64<3>(rng, {2, 5, C});
    auto loss = [&] {
      return attn::testing::dot64(attn::gqa_forward<double>(x, w, config).out, r);
    };
    attn::GqaCache<double> cache;
    (void)attn::gqa_forward<double>(x, w, config, cache);
    T3 dx;
    attn::GqaWeights<double> g{xt::zeros_like(w.w_q), xt::zeros_like(w.w_k), xt::zeros_like(w.w_v),
                               xt::zeros_like(w.w_o)};
    attn::gqa_backward<double>(r, cache, w, config, dx, g);
    using attn::testing::central_differences64;
    attn::testing::check_grad64(op, "x", central_differences64<T3>(loss, x, dx));
    attn::testing::check_grad64(op, "w_q", central_differences64<M64>(loss, w.w_q, g.w_q));
    attn::testing::check_grad64(op, "w_k", central_differences64<M64>(loss, w.w_k, g.w_k));
    attn::testing::check_grad64(op, "w_v", central_differences64<M64>(loss, w.w_v, g.w_v));
    attn::testing::check_grad64(op, "w_o", central_differences64<M64>(loss, w.w_o, g.w_o));
    if (KV == H) continue;
    // The same model as MHA with tiled K/V weights: its per-head gradients, summed over each
    // group, are the GQA gradients; keeping only the first head of each group is the bug.
    attn::GqaConfig mha = config;
    mha.n_kv_heads = H;
    const attn::GqaWeights<double> tiled{w.w_q, tile_kv(w.w_k, H, KV, hs),
                                         tile_kv(w.w_v, H, KV, hs), w.w_o};
    attn::GqaCache<double> mcache;
    (void)attn::gqa_forward<double>(x, tiled, mha, mcache);
    T3 mdx;
    attn::GqaWeights<double> mg{xt::zeros_like(tiled.w_q), xt::zeros_like(tiled.w_k),
                                xt::zeros_like(tiled.w_v), xt::zeros_like(tiled.w_o)};
    attn::gqa_backward<double>(r, mcache, tiled, mha, mdx, mg);
    CHECK_TENSOR_NEAR(untile_grad(mg.w_k, H, KV, hs, false), g.w_k, 1e-12, 1e-10);
    const M64 not_summed = untile_grad(mg.w_k, H, KV, hs, true);
    attn::testing::check_grad64_caught(op, "w_k",
                                       central_differences64<M64>(loss, w.w_k, not_summed));
    const M64 v_not_summed = untile_grad(mg.w_v, H, KV, hs, true);
    attn::testing::check_grad64_caught(op, "w_v",
                                       central_differences64<M64>(loss, w.w_v, v_not_summed));
  }
}

TEST_CASE("bad input: every inconsistent setting is a one-line error naming it") {
  attn::Rng rng(56);
  const attn::Tensor<3> x = attn::randn<3>(rng, {1, 3, 12});
  attn::GqaConfig config;
  config.n_heads = 4;
  config.n_kv_heads = 3;
  const attn::GqaWeights<float> w = random_gqa<float>(rng, 12, 9);
  CHECK(error_of([&] { (void)attn::gqa_forward<float>(x, w, config); }) ==
        "attn::gqa: n_kv_heads = 3 does not divide n_heads = 4 (each K/V head serves an equal "
        "group of query heads)");
  config.n_kv_heads = 0;
  CHECK(error_of([&] {
          (void)attn::gqa_forward<float>(x, w, config);
        }).starts_with("attn::gqa: n_kv_heads = 0 does not divide n_heads = 4"));
  config.n_heads = 5;
  config.n_kv_heads = 1;
  CHECK(error_of([&] { (void)attn::gqa_forward<float>(x, w, config); }) ==
        "attn::gqa: n_heads = 5 does not divide C = 12");
  config.n_heads = 4;  // hs = 3
  const attn::GqaWeights<float> w1 = random_gqa<float>(rng, 12, 3);
  CHECK(error_of([&] { (void)attn::gqa_forward<float>(x, w, config); }) ==
        "attn::gqa: w_k is (12, 9), expected (12, 3)");
  config.rope = true;
  CHECK(error_of([&] { (void)attn::gqa_forward<float>(x, w1, config); }) ==
        "attn::gqa: head size hs = 3 is odd, but RoPE rotates pairs of features (expected an even "
        "hs >= 2)");
  config.n_heads = 6;  // hs = 2
  config.n_kv_heads = 2;
  config.theta = 0.0;
  const attn::GqaWeights<float> w2 = random_gqa<float>(rng, 12, 4);
  CHECK(error_of([&] {
          (void)attn::gqa_forward<float>(x, w2, config);
        }).starts_with("attn::gqa: theta must be a finite number > 0"));
  config.theta = 10000.0;
  config.causal = false;
  config.window = 2;
  CHECK(error_of([&] { (void)attn::gqa_forward<float>(x, w2, config); }) ==
        "attn::gqa: a sliding window is causal: window = 2 needs causal attention (or no "
        "window)");
}

}  // TEST_SUITE
