// Tests for attn/fast/{rope,rmsnorm,swiglu,gqa}.hpp: chapter 11's parts on the fast path, each
// against its reference in attn/ops/ over the shapes at the limits (T 1, B 1, odd head sizes
// where RoPE allows them, n_kv_heads 1 and = H, window 1 and = T, sequences crossing the
// kernels' 64-query blocks and 128-token chunks), on 1 and 3 threads. Agreement is bitwise where
// both sides take the same sums in the same order (RoPE, RMSNorm, GQA with KV = H against
// chapter 05's fast MHA), else the golden tolerance |fast - ref| <= 1e-5 + 1e-4 |ref|. Then the
// block with every part, forward and backward, against its float64 composition from the ops.
#include <doctest/doctest.h>

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/core/threads.hpp"
#include "attn/fast/attention.hpp"
#include "attn/fast/gqa.hpp"
#include "attn/fast/rmsnorm.hpp"
#include "attn/fast/rope.hpp"
#include "attn/fast/swiglu.hpp"
#include "attn/model/block.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/ops/gqa.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/rmsnorm.hpp"
#include "attn/ops/rope.hpp"
#include "attn/ops/swiglu.hpp"
#include "test_fixtures.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Tensor;
using attn::Tensor64;

constexpr double kAtol = 1e-5;  // the golden tolerance: |got - ref| <= kAtol + kRtol |ref|
constexpr double kRtol = 1e-4;

// Runs f() with the library on `threads` threads, restoring the previous count.
template <class F>
void on_threads(std::size_t threads, F f) {
  const std::size_t saved = attn::num_threads();
  attn::set_num_threads(threads);
  f();
  attn::set_num_threads(saved);
}

template <class T>
Tensor64<T::rank> to64(const T& t) {
  return xt::eval(xt::cast<double>(t));
}

// ---- RoPE ----

TEST_CASE("fast RoPE equals attn::rope bit for bit, forward and backward") {
  struct Shape {
    std::size_t B, H, T, hs, offset;
    double theta;
  };
  const std::array<Shape, 5> shapes{{{1, 1, 1, 2, 0, 10000.0},
                                     {2, 3, 5, 6, 0, 10000.0},
                                     {1, 2, 70, 16, 7, 10000.0},
                                     {2, 1, 3, 4, 1000, 500.0},
                                     {3, 2, 130, 8, 0, 10000.0}}};
  attn::Rng rng(1);
  for (const Shape& s : shapes) {
    INFO("B " << s.B << " H " << s.H << " T " << s.T << " hs " << s.hs << " offset " << s.offset);
    const Tensor<4> x = attn::randn<4>(rng, {s.B, s.H, s.T, s.hs});
    for (std::size_t threads : {1, 3}) {
      on_threads(threads, [&] {
        CHECK_TENSOR_NEAR(attn::fast::rope(x, s.theta, s.offset),
                          attn::rope<float>(x, s.theta, s.offset), 0.0, 0.0);
        CHECK_TENSOR_NEAR(attn::fast::rope_backward(x, s.theta, s.offset),
                          attn::rope_backward<float>(x, s.theta, s.offset), 0.0, 0.0);
      });
    }
  }
}

TEST_CASE("fast RoPE turns only the first `width` floats of each row, by the row's position") {
  attn::Rng rng(2);
  const std::size_t B = 2, T = 3, hs = 4, width = 8, stride = 11;  // two heads, 3 floats after
  Tensor<3> buf = attn::randn<3>(rng, {B, T, stride});
  const Tensor<3> before = buf;
  attn::fast::Workspace ws;
  attn::fast::rope_in_place({buf.data(), B, T, width, stride}, hs, 10000.0, 0, false, ws);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      // Head j of row (b, t) as a (1, 1, 1, hs) tensor at position t.
      for (std::size_t j = 0; j < 2; ++j) {
        Tensor<4> head({1, 1, 1, hs});
        for (std::size_t i = 0; i < hs; ++i) head(0, 0, 0, i) = before(b, t, j * hs + i);
        const Tensor<4> want = attn::rope<float>(head, 10000.0, t);
        for (std::size_t i = 0; i < hs; ++i) CHECK(buf(b, t, j * hs + i) == want(0, 0, 0, i));
      }
      for (std::size_t i = width; i < stride; ++i) CHECK(buf(b, t, i) == before(b, t, i));
    }
}

TEST_CASE("fast RoPE refuses an odd head size and a bad theta, in one line") {
  attn::Rng rng(3);
  const Tensor<4> x = attn::randn<4>(rng, {1, 1, 2, 5});
  CHECK_THROWS_WITH_AS(attn::fast::rope(x), doctest::Contains("hs = 5 is odd"),
                       std::invalid_argument);
  const Tensor<4> y = attn::randn<4>(rng, {1, 1, 2, 4});
  CHECK_THROWS_WITH_AS(attn::fast::rope(y, 0.0), doctest::Contains("theta"), std::invalid_argument);
}

// ---- RMSNorm ----

TEST_CASE("fast RMSNorm equals attn::rms_norm bit for bit, forward and backward") {
  const std::array<std::array<std::size_t, 3>, 4> shapes{
      {{1, 1, 1}, {2, 3, 5}, {3, 100, 7}, {1, 1, 64}}};
  attn::Rng rng(4);
  for (const auto& shape : shapes) {
    INFO("x " << attn::shape_str(shape));
    const std::size_t C = shape[2];
    const Tensor<3> x = attn::randn<3>(rng, shape);
    const Tensor<3> dy = attn::randn<3>(rng, shape);
    const attn::Vector gamma = 1.0f + attn::randn<1>(rng, {C}, 0.2f);
    const attn::Vector dgamma0 = attn::randn<1>(rng, {C});  // gradients accumulate onto it
    attn::RmsNormCache<float> ref_cache;
    const Tensor<3> ref = attn::rms_norm<float, 3>(x, gamma, 1e-5, ref_cache);
    const attn::RmsNormGrads<float, 3> g =
        attn::rms_norm_backward<float, 3>(dy, x, gamma, ref_cache);
    const attn::Vector want_dgamma = dgamma0 + g.dgamma;
    for (std::size_t threads : {1, 3}) {
      on_threads(threads, [&] {
        attn::RmsNormCache<float> cache;
        Tensor<3> y;
        attn::fast::rms_norm(x, gamma, 1e-5, cache, y);
        CHECK_TENSOR_NEAR(y, ref, 0.0, 0.0);
        CHECK_TENSOR_NEAR(cache.rstd, ref_cache.rstd, 0.0, 0.0);
        Tensor<3> dx;
        attn::Vector dgamma = dgamma0;
        attn::fast::rms_norm_backward(dy, x, gamma, cache, dx, dgamma);
        CHECK_TENSOR_NEAR(dx, g.dx, 0.0, 0.0);
        CHECK_TENSOR_NEAR(dgamma, want_dgamma, 0.0, 0.0);
        // dx may be dy itself (the block passes one buffer).
        Tensor<3> inplace = dy;
        attn::Vector dgamma2 = dgamma0;
        attn::fast::rms_norm_backward(inplace, x, gamma, cache, inplace, dgamma2);
        CHECK_TENSOR_NEAR(inplace, g.dx, 0.0, 0.0);
        CHECK_TENSOR_NEAR(dgamma2, want_dgamma, 0.0, 0.0);
      });
    }
  }
}

TEST_CASE("fast rms_norm_backward names a mis-shaped dy, cache or dgamma, and adds nothing") {
  attn::Rng rng(14);
  const Tensor<3> x = attn::randn<3>(rng, {2, 3, 4});
  const attn::Vector gamma = xt::ones<float>({4});
  attn::RmsNormCache<float> cache;
  Tensor<3> y, dx;
  attn::fast::rms_norm(x, gamma, 1e-5, cache, y);
  const std::string want =
      "attn::fast::rms_norm_backward: expected dy like x (2, 3, 4), a cache from its forward "
      "(rstd (6,)), dgamma (4,), got ";
  attn::Vector dgamma = xt::zeros<float>({5});  // another width's gain
  CHECK_THROWS_WITH_AS(attn::fast::rms_norm_backward(x, x, gamma, cache, dx, dgamma),
                       (want + "dy (2, 3, 4), rstd (6,), dgamma (5,)").c_str(),
                       std::invalid_argument);
  CHECK(xt::all(xt::equal(dgamma, 0.0f)));
  dgamma = xt::zeros<float>({4});
  const Tensor<3> dy_bad = xt::zeros<float>({2, 3, 5});
  CHECK_THROWS_WITH_AS(attn::fast::rms_norm_backward(dy_bad, x, gamma, cache, dx, dgamma),
                       (want + "dy (2, 3, 5), rstd (6,), dgamma (4,)").c_str(),
                       std::invalid_argument);
  attn::RmsNormCache<float> other;  // filled by a shorter sequence's forward
  attn::fast::rms_norm(Tensor<3>(attn::randn<3>(rng, {1, 3, 4})), gamma, 1e-5, other, y);
  CHECK_THROWS_WITH_AS(attn::fast::rms_norm_backward(x, x, gamma, other, dx, dgamma),
                       (want + "dy (2, 3, 4), rstd (3,), dgamma (4,)").c_str(),
                       std::invalid_argument);
  CHECK(xt::all(xt::equal(dgamma, 0.0f)));
}

TEST_CASE("fast rms_norm_rows gives rms_norm's rows, in place too") {
  attn::Rng rng(13);
  const Tensor<3> x = attn::randn<3>(rng, {3, 100, 7});  // 300 rows: two pieces of 256
  const attn::Vector gamma = 1.0f + attn::randn<1>(rng, {7}, 0.2f);
  const Tensor<3> want = attn::rms_norm<float, 3>(x, gamma, 1e-5);
  Tensor<3> y = xt::zeros<float>(x.shape());
  attn::fast::rms_norm_rows(x.data(), 300, 7, gamma.data(), 1e-5, y.data());
  CHECK_TENSOR_NEAR(y, want, 0.0, 0.0);
  Tensor<3> inplace = x;
  attn::fast::rms_norm_rows(inplace.data(), 300, 7, gamma.data(), 1e-5, inplace.data());
  CHECK_TENSOR_NEAR(inplace, want, 0.0, 0.0);
}

// ---- SwiGLU ----

TEST_CASE("fast SwiGLU equals the reference within the golden tolerance, forward and backward") {
  // (B, T, C, F): one of each, odd sizes, and 200 tokens (two chunks of 128).
  const std::array<std::array<std::size_t, 4>, 4> shapes{
      {{1, 1, 1, 1}, {2, 3, 5, 7}, {2, 100, 8, 24}, {1, 9, 16, 40}}};
  attn::Rng rng(5);
  for (const auto& s : shapes) {
    const std::size_t B = s[0], T = s[1], C = s[2], F = s[3];
    INFO("B " << B << " T " << T << " C " << C << " F " << F);
    const attn::SwigluWeights<float> w{attn::randn(rng, C, F, 0.5f), attn::randn(rng, C, F, 0.5f),
                                       attn::randn(rng, F, C, 0.5f)};
    const Tensor<3> x = attn::randn<3>(rng, {B, T, C}, 2.0f);  // gates well into both tails
    const Tensor<3> dy = attn::randn<3>(rng, {B, T, C});
    attn::SwigluCache<float> ref_cache;
    const Tensor<3> ref = attn::swiglu_forward<float>(x, w, ref_cache);
    attn::SwigluWeights<float> ref_g{xt::zeros<float>({C, F}), xt::zeros<float>({C, F}),
                                     xt::zeros<float>({F, C})};
    Tensor<3> ref_dx;
    attn::swiglu_backward<float>(dy, ref_cache, w, ref_dx, ref_g);
    Tensor<3> first_dx;
    for (std::size_t threads : {1, 3}) {
      on_threads(threads, [&] {
        attn::SwigluCache<float> cache;
        Tensor<3> y;
        attn::fast::swiglu_forward(x, w, cache, y);
        CHECK_TENSOR_NEAR(y, ref, kAtol, kRtol);
        CHECK_TENSOR_NEAR(cache.h, ref_cache.h, kAtol, kRtol);
        CHECK_TENSOR_NEAR(attn::fast::swiglu_forward(x, w), y, 0.0, 0.0);
        attn::SwigluWeights<float> g{xt::zeros<float>({C, F}), xt::zeros<float>({C, F}),
                                     xt::zeros<float>({F, C})};
        Tensor<3> dx;
        attn::fast::swiglu_backward(dy, cache, w, dx, g);
        CHECK_TENSOR_NEAR(dx, ref_dx, kAtol, kRtol);
        CHECK_TENSOR_NEAR(g.w_gate, ref_g.w_gate, kAtol, kRtol);
        CHECK_TENSOR_NEAR(g.w_up, ref_g.w_up, kAtol, kRtol);
        CHECK_TENSOR_NEAR(g.w_down, ref_g.w_down, kAtol, kRtol);
        // The gradients accumulate: a second backward doubles them.
        const attn::Matrix once = g.w_up;
        attn::fast::swiglu_backward(dy, cache, w, dx, g);
        CHECK_TENSOR_NEAR(g.w_up, 2.0f * once, kAtol, kRtol);
        // The same bits on any thread count.
        if (threads == 1) first_dx = dx;
        CHECK_TENSOR_NEAR(dx, first_dx, 0.0, 0.0);
      });
    }
  }
}

TEST_CASE("fast SwiGLU: a gate off by one part in a thousand fails the tolerance") {
  attn::Rng rng(6);
  const std::size_t C = 8, F = 16;
  const attn::SwigluWeights<float> w{attn::randn(rng, C, F, 0.5f), attn::randn(rng, C, F, 0.5f),
                                     attn::randn(rng, F, C, 0.5f)};
  const Tensor<3> x = attn::randn<3>(rng, {2, 5, C}, 2.0f);
  attn::SwigluCache<float> cache;
  Tensor<3> y;
  attn::fast::swiglu_forward(x, w, cache, y);
  attn::SwigluWeights<float> off = w;
  off.w_up *= 1.001f;  // h = silu(a) * u scaled by 1.001
  CHECK_FALSE(
      attn::testing::tensor_mismatch(y, attn::swiglu_forward<float>(x, off), kAtol, kRtol).empty());
}

TEST_CASE("fast SwiGLU refuses mis-shaped weights, in one line") {
  attn::Rng rng(7);
  const attn::SwigluWeights<float> w{attn::randn(rng, 4, 6), attn::randn(rng, 4, 5),
                                     attn::randn(rng, 6, 4)};
  attn::SwigluCache<float> cache;
  Tensor<3> y;
  CHECK_THROWS_WITH_AS(attn::fast::swiglu_forward(attn::randn<3>(rng, {1, 2, 4}), w, cache, y),
                       doctest::Contains("w_up is (4, 5), expected (4, 6)"), std::invalid_argument);
}

TEST_CASE("fast SwiGLU's backward refuses gradients of another width, before adding anything") {
  // The gradients of a narrower SwiGLU (F = 12, w of F = 16): shaped alike among themselves, so
  // only a check against w stops the GEMMs, sized by w's F, from writing past them.
  attn::Rng rng(8);
  const std::size_t C = 8, F = 16, narrow = 12;
  const attn::SwigluWeights<float> w{attn::randn(rng, C, F), attn::randn(rng, C, F),
                                     attn::randn(rng, F, C)};
  const Tensor<3> x = attn::randn<3>(rng, {2, 3, C});
  attn::SwigluCache<float> cache;
  Tensor<3> y;
  attn::fast::swiglu_forward(x, w, cache, y);
  attn::SwigluWeights<float> g{attn::randn(rng, C, narrow), attn::randn(rng, C, narrow),
                               attn::randn(rng, narrow, C)};
  const attn::SwigluWeights<float> before = g;
  Tensor<3> dx = attn::randn<3>(rng, {2, 3, C});
  const Tensor<3> dx_before = dx;
  CHECK_THROWS_WITH_AS(attn::fast::swiglu_backward(attn::randn<3>(rng, {2, 3, C}), cache, w, dx, g),
                       "attn::fast::swiglu_backward: grads.w_gate is (8, 12), expected (8, 16)",
                       std::invalid_argument);
  // Nothing added, nothing written.
  CHECK_TENSOR_NEAR(g.w_gate, before.w_gate, 0.0, 0.0);
  CHECK_TENSOR_NEAR(g.w_up, before.w_up, 0.0, 0.0);
  CHECK_TENSOR_NEAR(g.w_down, before.w_down, 0.0, 0.0);
  CHECK_TENSOR_NEAR(dx, dx_before, 0.0, 0.0);
  // One tensor off is enough: w_down of the right width for w_gate and w_up, but not for w.
  attn::SwigluWeights<float> one_off{xt::zeros<float>({C, F}), xt::zeros<float>({C, F}),
                                     xt::zeros<float>({narrow, C})};
  CHECK_THROWS_WITH_AS(
      attn::fast::swiglu_backward(attn::randn<3>(rng, {2, 3, C}), cache, w, dx, one_off),
      "attn::fast::swiglu_backward: grads.w_down is (12, 8), expected (16, 8)",
      std::invalid_argument);
  CHECK_TENSOR_NEAR(one_off.w_gate, attn::Matrix(xt::zeros<float>({C, F})), 0.0, 0.0);
}

// ---- Grouped-query attention, RoPE, sliding window ----

struct GqaCase {
  std::size_t B, T, C, H, KV;
  std::optional<std::size_t> window;  // none: every earlier key
  bool rope;
};

std::string describe(const GqaCase& c) {
  return "B " + std::to_string(c.B) + " T " + std::to_string(c.T) + " C " + std::to_string(c.C) +
         " H " + std::to_string(c.H) + " KV " + std::to_string(c.KV) + " window " +
         (c.window ? std::to_string(*c.window) : std::string("none")) + (c.rope ? " rope" : "");
}

// Every case of the grid: hs 4 (BLAS products), 8 (hand-written ones), 3 (odd, without RoPE);
// T 1, 5 and 70 (two blocks of 64 queries); KV 1, 2 and H; window none, 1, 3 and T.
std::vector<GqaCase> gqa_cases() {
  std::vector<GqaCase> out;
  const std::array<std::array<std::size_t, 2>, 3> widths{{{16, 4}, {32, 4}, {12, 4}}};
  for (const auto& [C, H] : widths)
    for (std::size_t T : {1, 5, 70})
      for (std::size_t KV : {1, 2, 4})
        for (const std::optional<std::size_t> window :
             {std::optional<std::size_t>{}, std::optional<std::size_t>{1},
              std::optional<std::size_t>{3}, std::optional<std::size_t>{T}})
          for (bool rope : {false, true}) {
            if (rope && (C / H) % 2 != 0) continue;
            out.push_back({T == 70 ? std::size_t{1} : std::size_t{2}, T, C, H, KV, window, rope});
          }
  return out;
}

attn::GqaConfig gqa_config(const GqaCase& c) {
  attn::GqaConfig g;
  g.n_heads = c.H;
  g.n_kv_heads = c.KV;
  g.rope = c.rope;
  g.window = c.window;
  return g;
}

attn::MhaWeights gqa_weights(attn::Rng& rng, const GqaCase& c) {
  const std::size_t kv = c.KV * (c.C / c.H);
  return {attn::randn(rng, c.C, c.C, 0.2f), attn::randn(rng, c.C, kv, 0.2f),
          attn::randn(rng, c.C, kv, 0.2f), attn::randn(rng, c.C, c.C, 0.2f)};
}

attn::MhaWeights zeros_like(const attn::MhaWeights& w) {
  return {xt::zeros<float>(w.w_q.shape()), xt::zeros<float>(w.w_k.shape()),
          xt::zeros<float>(w.w_v.shape()), xt::zeros<float>(w.w_o.shape())};
}

TEST_CASE("fast grouped-query attention equals attn::gqa_forward / gqa_backward over the grid") {
  attn::Rng rng(8);
  for (const GqaCase& c : gqa_cases()) {
    INFO(describe(c));
    const attn::GqaConfig cfg = gqa_config(c);
    const attn::MhaWeights w = gqa_weights(rng, c);
    const Tensor<3> x = attn::randn<3>(rng, {c.B, c.T, c.C});
    const Tensor<3> dout = attn::randn<3>(rng, {c.B, c.T, c.C});
    // The reference, float in and out, sums in double.
    const attn::GqaWeights<float> rw{w.w_q, w.w_k, w.w_v, w.w_o};
    attn::GqaCache<float> ref_cache;
    const Tensor<3> ref = attn::gqa_forward<float>(x, rw, cfg, ref_cache);
    attn::GqaWeights<float> rg{xt::zeros<float>(w.w_q.shape()), xt::zeros<float>(w.w_k.shape()),
                               xt::zeros<float>(w.w_v.shape()), xt::zeros<float>(w.w_o.shape())};
    Tensor<3> ref_dx;
    attn::gqa_backward<float>(dout, ref_cache, rw, cfg, ref_dx, rg);
    on_threads(c.B * c.H > 4 ? 3 : 1, [&] {
      attn::fast::MhaCache cache;
      Tensor<3> out;
      attn::fast::gqa_forward(x, w, cfg, cache, out);
      CHECK_TENSOR_NEAR(out, ref, kAtol, kRtol);
      CHECK_TENSOR_NEAR(cache.weights, ref_cache.weights, kAtol, kRtol);
      // The evaluation forward: the training forward's bits, with or without the weights.
      const attn::MhaResult eval = attn::fast::gqa_forward(x, w, cfg, true);
      CHECK_TENSOR_NEAR(eval.out, out, 0.0, 0.0);
      CHECK_TENSOR_NEAR(eval.weights, cache.weights, 0.0, 0.0);
      CHECK_TENSOR_NEAR(attn::fast::gqa_forward(x, w, cfg, false).out, out, 0.0, 0.0);
      attn::MhaWeights g = zeros_like(w);
      Tensor<3> dx;
      attn::fast::gqa_backward(dout, cache, w, cfg, dx, g);
      CHECK_TENSOR_NEAR(dx, ref_dx, kAtol, kRtol);
      CHECK_TENSOR_NEAR(g.w_q, rg.w_q, kAtol, kRtol);
      CHECK_TENSOR_NEAR(g.w_k, rg.w_k, kAtol, kRtol);
      CHECK_TENSOR_NEAR(g.w_v, rg.w_v, kAtol, kRtol);
      CHECK_TENSOR_NEAR(g.w_o, rg.w_o, kAtol, kRtol);
    });
  }
}

TEST_CASE("fast GQA with KV = H, no RoPE, no window is chapter 05's fast MHA, bit for bit") {
  attn::Rng rng(9);
  for (const GqaCase& c :
       {GqaCase{2, 5, 16, 4, 4, std::nullopt, false}, GqaCase{1, 70, 32, 4, 4, std::nullopt, false},
        GqaCase{3, 9, 12, 4, 4, std::nullopt, false}}) {
    INFO(describe(c));
    const attn::MhaWeights w = gqa_weights(rng, c);
    const Tensor<3> x = attn::randn<3>(rng, {c.B, c.T, c.C});
    const Tensor<3> dout = attn::randn<3>(rng, {c.B, c.T, c.C});
    attn::fast::MhaCache a, b;
    Tensor<3> out_a, out_b, dx_a, dx_b;
    attn::fast::gqa_forward(x, w, gqa_config(c), a, out_a);
    attn::fast::mha_forward(x, w, c.H, true, b, out_b);
    CHECK_TENSOR_NEAR(out_a, out_b, 0.0, 0.0);
    attn::MhaWeights ga = zeros_like(w), gb = zeros_like(w);
    attn::fast::gqa_backward(dout, a, w, gqa_config(c), dx_a, ga);
    attn::fast::mha_backward(dout, b, w, c.H, true, dx_b, gb);
    CHECK_TENSOR_NEAR(dx_a, dx_b, 0.0, 0.0);
    CHECK_TENSOR_NEAR(ga.w_k, gb.w_k, 0.0, 0.0);
    CHECK_TENSOR_NEAR(ga.w_o, gb.w_o, 0.0, 0.0);
    // A window of T keys is no window at all.
    GqaCase wide = c;
    wide.window = c.T;
    attn::fast::MhaCache d;
    Tensor<3> out_d;
    attn::fast::gqa_forward(x, w, gqa_config(wide), d, out_d);
    CHECK_TENSOR_NEAR(out_d, out_b, 0.0, 0.0);
  }
}

TEST_CASE("fast GQA: a window of 1 attends to each query's own key only") {
  attn::Rng rng(10);
  const GqaCase c{2, 70, 32, 4, 2, 1, false};
  const attn::MhaWeights w = gqa_weights(rng, c);
  const Tensor<3> x = attn::randn<3>(rng, {c.B, c.T, c.C});
  const attn::MhaResult r = attn::fast::gqa_forward(x, w, gqa_config(c), true);
  for (std::size_t t = 0; t < c.T; ++t)
    for (std::size_t s = 0; s < c.T; ++s) CHECK(r.weights(1, 3, t, s) == (s == t ? 1.0f : 0.0f));
}

TEST_CASE("fast GQA refuses bad configs and weights, in one line") {
  attn::Rng rng(11);
  const GqaCase c{1, 4, 12, 4, 2, std::nullopt, false};
  const attn::MhaWeights w = gqa_weights(rng, c);
  const Tensor<3> x = attn::randn<3>(rng, {1, 4, 12});
  attn::GqaConfig cfg = gqa_config(c);
  cfg.n_kv_heads = 3;
  CHECK_THROWS_WITH_AS(attn::fast::gqa_forward(x, w, cfg), doctest::Contains("n_kv_heads = 3"),
                       std::invalid_argument);
  cfg = gqa_config(c);
  cfg.rope = true;  // hs = 3
  CHECK_THROWS_WITH_AS(attn::fast::gqa_forward(x, w, cfg), doctest::Contains("hs = 3 is odd"),
                       std::invalid_argument);
  cfg = gqa_config(c);
  cfg.causal = false;
  cfg.window = 2;
  CHECK_THROWS_WITH_AS(attn::fast::gqa_forward(x, w, cfg), doctest::Contains("causal"),
                       std::invalid_argument);
  cfg = gqa_config(c);
  cfg.n_kv_heads = 4;  // w_k is (12, 6): KV = 2
  CHECK_THROWS_WITH_AS(attn::fast::gqa_forward(x, w, cfg),
                       doctest::Contains("w_k is (12, 6), expected (12, 12)"),
                       std::invalid_argument);
  // Gradients shaped for another K/V head count are named as the gradients, not the weights.
  cfg = gqa_config(c);
  attn::fast::MhaCache cache;
  Tensor<3> out, dx;
  attn::fast::gqa_forward(x, w, cfg, cache, out);
  attn::MhaWeights g = zeros_like(w);
  g.w_k = xt::zeros<float>({12, 12});
  CHECK_THROWS_WITH_AS(attn::fast::gqa_backward(out, cache, w, cfg, dx, g),
                       "attn::fast::gqa_backward: grads.w_k is (12, 12), expected (12, 6)",
                       std::invalid_argument);
}

// ---- The block with every part, against its float64 composition from the ops ----

struct Block64Result {
  Tensor64<3> out, dx;
  attn::GqaWeights<double> da;
  Tensor64<1> dg1, db1, dg2, db2;
  attn::SwigluWeights<double> dsw;
  attn::FfnWeights64 dmlp;
};

// Pre-norm: x1 = x + gqa(norm1(x)), out = x1 + ffn(norm2(x1)), and its backward, every op in
// double (chapter 11's rms_norm, gqa, swiglu; chapter 06's layer_norm and MLP).
Block64Result block64(const Tensor64<3>& x, const Tensor64<3>& dout, const attn::BlockWeights& wf,
                      const attn::BlockConfig& cfg) {
  const std::size_t C = x.shape()[2];
  const double eps = static_cast<double>(cfg.eps);
  const attn::ModelSpec& spec = cfg.spec;
  const bool rms = spec.normalization == attn::Normalization::rmsnorm;
  const auto beta = [&](const attn::Vector& b) {
    return b.size() != 0 ? to64(b) : Tensor64<1>(xt::zeros<double>({C}));
  };
  const Tensor64<1> g1 = to64(wf.ln1_gamma), g2 = to64(wf.ln2_gamma);
  const Tensor64<1> b1 = beta(wf.ln1_beta), b2 = beta(wf.ln2_beta);
  struct Norm {
    attn::RmsNormCache<double> rms;
    attn::LayerNormCache64 ln;
  } n1, n2;
  const auto norm = [&](const Tensor64<3>& v, const Tensor64<1>& g, const Tensor64<1>& b,
                        Norm& cache) -> Tensor64<3> {
    if (rms) return attn::rms_norm<double, 3>(v, g, eps, cache.rms);
    return attn::layer_norm<3, double>(v, g, b, eps, cache.ln);
  };
  Block64Result r;
  const auto norm_back = [&](const Tensor64<3>& dy, const Tensor64<3>& v, const Tensor64<1>& g,
                             const Norm& cache, Tensor64<1>& dg, Tensor64<1>& db) {
    if (rms) {
      attn::RmsNormGrads<double, 3> gr = attn::rms_norm_backward<double, 3>(dy, v, g, cache.rms);
      dg = gr.dgamma;
      return gr.dx;
    }
    Tensor64<3> dx;
    dg = xt::zeros<double>({C});
    db = xt::zeros<double>({C});
    attn::layer_norm_backward<3, double>(dy, v, g, cache.ln, dx, dg, db);
    return dx;
  };
  attn::GqaConfig gc;
  gc.n_heads = spec.n_heads;
  gc.n_kv_heads = spec.n_kv_heads;
  gc.rope = spec.rope();
  gc.theta = spec.rope_theta;
  gc.window = spec.window;
  const attn::GqaWeights<double> a{to64(wf.attn.w_q), to64(wf.attn.w_k), to64(wf.attn.w_v),
                                   to64(wf.attn.w_o)};
  attn::GqaCache<double> ac;
  const Tensor64<3> x1 = x + attn::gqa_forward<double>(norm(x, g1, b1, n1), a, gc, ac);
  const Tensor64<3> h = norm(x1, g2, b2, n2);
  Tensor64<3> dh;
  if (spec.ffn == attn::FfnKind::swiglu) {
    const attn::SwigluWeights<double> sw{to64(wf.swiglu.w_gate), to64(wf.swiglu.w_up),
                                         to64(wf.swiglu.w_down)};
    attn::SwigluCache<double> sc;
    r.out = x1 + attn::swiglu_forward<double>(h, sw, sc);
    r.dsw = {xt::zeros<double>(sw.w_gate.shape()), xt::zeros<double>(sw.w_up.shape()),
             xt::zeros<double>(sw.w_down.shape())};
    attn::swiglu_backward<double>(dout, sc, sw, dh, r.dsw);
  } else {
    const std::size_t F = wf.ffn.w1.shape()[1];
    attn::FfnWeights64 m{
        to64(wf.ffn.w1), wf.ffn.b1.size() ? to64(wf.ffn.b1) : xt::zeros<double>({F}),
        to64(wf.ffn.w2), wf.ffn.b2.size() ? to64(wf.ffn.b2) : xt::zeros<double>({C})};
    attn::FfnCache64 fc;
    r.out = x1 + attn::ffn_forward<double>(h, m, spec.activation, fc);
    r.dmlp = {xt::zeros<double>(m.w1.shape()), xt::zeros<double>(m.b1.shape()),
              xt::zeros<double>(m.w2.shape()), xt::zeros<double>(m.b2.shape())};
    attn::ffn_backward<double>(dout, fc, m, spec.activation, dh, r.dmlp);
  }
  const Tensor64<3> dx1 = dout + norm_back(dh, x1, g2, n2, r.dg2, r.db2);
  r.da = {xt::zeros<double>(a.w_q.shape()), xt::zeros<double>(a.w_k.shape()),
          xt::zeros<double>(a.w_v.shape()), xt::zeros<double>(a.w_o.shape())};
  Tensor64<3> dh1;
  attn::gqa_backward<double>(dx1, ac, a, gc, dh1, r.da);
  r.dx = dx1 + norm_back(dh1, x, g1, n1, r.dg1, r.db1);
  return r;
}

std::vector<attn::BlockConfig> block_parts() {
  std::vector<attn::BlockConfig> v;
  const auto with = [&](auto change) {
    v.push_back(attn::testing::block_config(32, 4, change));  // C = 32: hs = 8
  };
  with([](attn::ModelChoices& c) { c.positions = attn::Positions::rope; });
  with([](attn::ModelChoices& c) { c.ffn = attn::FfnKind::swiglu; });
  with([](attn::ModelChoices& c) { c.n_kv_heads = 2; });
  with([](attn::ModelChoices& c) { c.n_kv_heads = 1; });
  with([](attn::ModelChoices& c) { c.window = 3; });
  with([](attn::ModelChoices& c) { c.normalization = attn::Normalization::rmsnorm; });
  with([](attn::ModelChoices& c) { c.bias = false; });
  with([](attn::ModelChoices& c) {  // every part together
    c.positions = attn::Positions::rope;
    c.ffn = attn::FfnKind::swiglu;
    c.n_kv_heads = 2;
    c.window = 5;
    c.normalization = attn::Normalization::rmsnorm;
    c.bias = false;
  });
  return v;
}

TEST_CASE("the block's training forward and backward with every part equal the float64 ops") {
  attn::Rng rng(12);
  const std::size_t B = 2, T = 9, C = 32;
  for (const attn::BlockConfig& cfg : block_parts()) {
    const attn::ModelSpec& p = cfg.spec;
    INFO("KV " << p.n_kv_heads << " rope " << p.rope() << " window " << p.window.value_or(0) << " "
               << attn::ffn_kind_name(p.ffn) << " " << attn::normalization_name(p.normalization)
               << " bias " << p.bias);
    const std::size_t F = p.ffn == attn::FfnKind::swiglu ? attn::swiglu_width(C) : 4 * C;
    REQUIRE(p.n_embd == C);
    REQUIRE(p.ffn_hidden == F);  // the spec's default width
    attn::BlockWeights w =       // the one block of a one-layer model of p, drawn by lm_init
        attn::lm_init(rng, attn::with_choices(p, [](attn::ModelChoices& m) { m.n_layers = 1; }))
            .blocks[0];
    // Weights that matter: N(0, 0.2) matrices, gammas near 1, betas and biases non-zero.
    for (attn::Matrix* m : {&w.attn.w_q, &w.attn.w_k, &w.attn.w_v, &w.attn.w_o, &w.ffn.w1,
                            &w.ffn.w2, &w.swiglu.w_gate, &w.swiglu.w_up, &w.swiglu.w_down})
      *m *= 10.0f;
    for (attn::Vector* g : {&w.ln1_gamma, &w.ln2_gamma}) *g += attn::randn<1>(rng, {C}, 0.2f);
    for (attn::Vector* b : {&w.ln1_beta, &w.ln2_beta, &w.ffn.b1, &w.ffn.b2})
      if (b->size() != 0) *b = attn::randn<1>(rng, {b->size()}, 0.2f);
    const Tensor<3> x = attn::randn<3>(rng, {B, T, C});
    const Tensor<3> dout = attn::randn<3>(rng, {B, T, C});
    const Block64Result want = block64(to64(x), to64(dout), w, cfg);
    attn::BlockCache cache;
    const Tensor<3> out = attn::block_forward(x, w, cfg, cache);
    CHECK_TENSOR_NEAR(out, want.out, kAtol, kRtol);
    CHECK_TENSOR_NEAR(attn::block_forward(x, w, cfg).out, out, 0.0, 0.0);
    CHECK(attn::activation_floats(cache) == attn::block_activation_floats(B, T, C, F, 4, cfg));
    attn::BlockWeights g = attn::block_zeros_like(w);
    Tensor<3> dx;
    attn::block_backward(dout, cache, w, cfg, dx, g);
    CHECK_TENSOR_NEAR(dx, want.dx, kAtol, kRtol);
    CHECK_TENSOR_NEAR(g.attn.w_q, want.da.w_q, kAtol, kRtol);
    CHECK_TENSOR_NEAR(g.attn.w_k, want.da.w_k, kAtol, kRtol);
    CHECK_TENSOR_NEAR(g.attn.w_v, want.da.w_v, kAtol, kRtol);
    CHECK_TENSOR_NEAR(g.attn.w_o, want.da.w_o, kAtol, kRtol);
    CHECK_TENSOR_NEAR(g.ln1_gamma, want.dg1, kAtol, kRtol);
    CHECK_TENSOR_NEAR(g.ln2_gamma, want.dg2, kAtol, kRtol);
    if (g.ln1_beta.size() != 0) CHECK_TENSOR_NEAR(g.ln1_beta, want.db1, kAtol, kRtol);
    if (p.ffn == attn::FfnKind::swiglu) {
      CHECK_TENSOR_NEAR(g.swiglu.w_gate, want.dsw.w_gate, kAtol, kRtol);
      CHECK_TENSOR_NEAR(g.swiglu.w_up, want.dsw.w_up, kAtol, kRtol);
      CHECK_TENSOR_NEAR(g.swiglu.w_down, want.dsw.w_down, kAtol, kRtol);
    } else {
      CHECK_TENSOR_NEAR(g.ffn.w1, want.dmlp.w1, kAtol, kRtol);
      CHECK_TENSOR_NEAR(g.ffn.w2, want.dmlp.w2, kAtol, kRtol);
    }
  }
}

}  // namespace
