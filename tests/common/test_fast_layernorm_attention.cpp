// Tests for attn/fast/layernorm.hpp and attn/fast/attention.hpp: every fast kernel against its
// reference (attn/ops/layernorm.hpp, attn/ops/attention.hpp), over the shapes at the kernels'
// limits: size 1, sizes that are not a multiple of the SIMD lanes, small heads (hand-written
// products) and wide ones (BLAS), query blocks of 64, chunks of 256 LayerNorm rows, and 1 and 3
// threads. Then what only the fast side promises: the same bits on any thread count, buffers
// reused, one query at a time equal to the whole sequence. Each op also has a test that a subtly
// wrong kernel fails the comparison (the tolerances are not so loose that a slip passes).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/core/threads.hpp"
#include "attn/fast/attention.hpp"
#include "attn/fast/layernorm.hpp"
#include "attn/ops/attention.hpp"
#include "attn/ops/layernorm.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Tensor;

// Runs f() once on 1 thread and once on 3 (rows and (b, h) pairs then cross the thread split).
template <class F>
void on_1_and_3_threads(F&& f) {
  const std::size_t saved = attn::num_threads();
  for (const std::size_t threads : {1, 3}) {
    CAPTURE(threads);
    attn::set_num_threads(threads);
    f();
  }
  attn::set_num_threads(saved);
}

template <class A, class B>
bool near(const A& got, const B& want, double atol, double rtol) {
  return attn::testing::tensor_mismatch(got, want, atol, rtol).empty();
}

// LayerNorm: the fast kernel sums each row in four interleaved double lanes and, in the
// backward, dgamma and dbeta per chunk of 256 rows; the reference sums in one double chain. The
// sums differ only in the last bits of a double, so a float result can differ by one rounding:
// |fast - ref| <= 1e-6 (1 + |ref|) for values of order 1 (one float step at 8 is 9.5e-7).
constexpr double kLnTol = 1e-6;

// Attention: the fast kernel takes its products in another order (BLAS blocks or the
// hand-written head products), its exp is a polynomial to 1 ulp, and its softmax sums in eight
// float lanes: not bitwise. The golden tolerance: |fast - ref| <= 1e-5 + 1e-4 |ref|.
constexpr double kAtol = 1e-5, kRtol = 1e-4;

}  // namespace

TEST_SUITE("common.fast_layernorm_attention") {

// ---------------------------------------------------------------------------------------------
// LayerNorm
// ---------------------------------------------------------------------------------------------

TEST_CASE(
    "fast LayerNorm equals the reference: forward, cache, backward, in place, 1 and 3 threads") {
  // C: 1, odd, below / at / above the 4 double lanes, 8 float lanes, 64. Rows: 1, odd, and 513 =
  // two full chunks of 256 and one row in a third (the chunks go to different threads).
  attn::Rng rng(500);
  for (const std::size_t C : {1, 3, 4, 7, 9, 64}) {
    for (const std::size_t rows : {1, 5, 513}) {
      CAPTURE(C);
      CAPTURE(rows);
      const Tensor<2> x = attn::randn<2>(rng, {rows, C}, 2.0f) + 0.5f;
      const attn::Vector gamma = attn::randn<1>(rng, {C});
      const attn::Vector beta = attn::randn<1>(rng, {C});
      const Tensor<2> dy = attn::randn<2>(rng, {rows, C});
      attn::LayerNormCache ref_cache;
      const Tensor<2> ref = attn::layer_norm<2>(x, gamma, beta, 1e-5f, ref_cache);
      // Accumulating into gradients that already hold something.
      const attn::Vector start = attn::randn<1>(rng, {C});
      Tensor<2> ref_dx;
      attn::Vector ref_dg = start, ref_db = start;
      attn::layer_norm_backward<2>(dy, x, gamma, ref_cache, ref_dx, ref_dg, ref_db);
      on_1_and_3_threads([&] {
        CHECK_TENSOR_NEAR(attn::fast::layer_norm<2>(x, gamma, beta), ref, kLnTol, kLnTol);
        attn::LayerNormCache cache;
        Tensor<2> y;
        attn::fast::layer_norm<2>(x, gamma, beta, 1e-5f, cache, y);
        CHECK_TENSOR_NEAR(y, ref, kLnTol, kLnTol);
        CHECK_TENSOR_NEAR(cache.mean, ref_cache.mean, kLnTol, kLnTol);
        CHECK_TENSOR_NEAR(cache.rstd, ref_cache.rstd, kLnTol, kLnTol);
        Tensor<2> dx;
        attn::Vector dg = start, db = start;
        attn::fast::layer_norm_backward<2>(dy, x, gamma, cache, dx, dg, db);
        CHECK_TENSOR_NEAR(dx, ref_dx, kLnTol, kLnTol);
        CHECK_TENSOR_NEAR(dg, ref_dg, kLnTol, kLnTol);
        CHECK_TENSOR_NEAR(db, ref_db, kLnTol, kLnTol);
        // In place, as the block's backward calls it: dx is dy's buffer.
        Tensor<2> inplace = dy;
        dg = start;
        db = start;
        attn::fast::layer_norm_backward<2>(inplace, x, gamma, cache, inplace, dg, db);
        CHECK_TENSOR_NEAR(inplace, ref_dx, kLnTol, kLnTol);
        // The raw-row kernel of chapter 10's generation loop, in place too.
        Tensor<2> rows_out = x;
        attn::fast::layer_norm_rows(rows_out.data(), rows, C, gamma.data(), beta.data(), 1e-5f,
                                    rows_out.data());
        CHECK_TENSOR_NEAR(rows_out, ref, kLnTol, kLnTol);
      });
    }
  }
}

TEST_CASE("fast LayerNorm keeps the reference's precision for tokens near 1e4") {
  attn::Rng rng(501);
  const Tensor<3> x = attn::randn<3>(rng, {2, 3, 512}, 0.01f) + 1e4f;
  const attn::Vector gamma = attn::randn<1>(rng, {512});
  const attn::Vector beta = attn::randn<1>(rng, {512});
  CHECK_TENSOR_NEAR(attn::fast::layer_norm<3>(x, gamma, beta), attn::layer_norm<3>(x, gamma, beta),
                    kLnTol, kLnTol);
}

TEST_CASE("fast LayerNorm gives the same bits on 1 and 3 threads (1000 rows)") {
  attn::Rng rng(95);
  const Tensor<3> x = attn::randn<3>(rng, {4, 250, 24});
  const attn::Vector gamma = attn::randn<1>(rng, {24});
  const attn::Vector beta = attn::randn<1>(rng, {24});
  const Tensor<3> dy = attn::randn<3>(rng, {4, 250, 24});
  std::vector<Tensor<3>> ys, dxs;
  std::vector<attn::Vector> dgs, dbs;
  on_1_and_3_threads([&] {
    attn::LayerNormCache cache;
    Tensor<3> y, dx;
    attn::fast::layer_norm<3>(x, gamma, beta, 1e-5f, cache, y);
    attn::Vector dg = xt::zeros<float>({24}), db = xt::zeros<float>({24});
    attn::fast::layer_norm_backward<3>(dy, x, gamma, cache, dx, dg, db);
    ys.push_back(y);
    dxs.push_back(dx);
    dgs.push_back(dg);
    dbs.push_back(db);
  });
  CHECK_TENSOR_NEAR(ys[0], ys[1], 0.0, 0.0);
  CHECK_TENSOR_NEAR(dxs[0], dxs[1], 0.0, 0.0);
  CHECK_TENSOR_NEAR(dgs[0], dgs[1], 0.0, 0.0);
  CHECK_TENSOR_NEAR(dbs[0], dbs[1], 0.0, 0.0);
}

TEST_CASE("fast LayerNorm rejects what the reference rejects, with the same message") {
  const Tensor<2> x = xt::ones<float>({2, 4});
  const attn::Vector g3 = xt::ones<float>({3}), g4 = xt::ones<float>({4});
  using E = std::invalid_argument;
  CHECK_THROWS_WITH_AS(
      attn::fast::layer_norm<2>(x, g3, g4),
      "attn::layer_norm: expected x (..., C) with C > 0, gamma (C,) and beta (C,), "
      "got x (2, 4), gamma (3,), beta (4,)",
      E);
  attn::LayerNormCache stale;
  Tensor<2> dx;
  attn::Vector dg = g4, db = g4;
  CHECK_THROWS_WITH_AS(attn::fast::layer_norm_backward<2>(x, x, g4, stale, dx, dg, db),
                       "attn::layer_norm_backward: expected a cache from the forward of x (2, 4): "
                       "rstd (2,), got rstd (0,)",
                       E);
}

TEST_CASE("the LayerNorm comparison catches a subtly wrong kernel") {
  // The tolerance above must not let a classic slip pass: the unbiased variance (C - 1) in the
  // forward changes y by ~1/(2C) relative (0.8% at C = 64); a backward without the mean term
  // (dx = rstd (g - xhat b)) misses a whole term.
  attn::Rng rng(502);
  const std::size_t C = 64;
  const Tensor<2> x = attn::randn<2>(rng, {5, C});
  const attn::Vector gamma = attn::randn<1>(rng, {C});
  const attn::Vector beta = attn::randn<1>(rng, {C});
  const Tensor<2> dy = attn::randn<2>(rng, {5, C});
  attn::LayerNormCache cache;
  const Tensor<2> y = attn::fast::layer_norm<2>(x, gamma, beta);
  Tensor<2> dx;
  attn::Vector dg = xt::zeros<float>({C}), db = xt::zeros<float>({C});
  attn::fast::layer_norm<2>(x, gamma, beta, 1e-5f, cache, dx);  // fills cache
  attn::fast::layer_norm_backward<2>(dy, x, gamma, cache, dx, dg, db);
  Tensor<2> y_unbiased(x.shape()), dx_no_mean(x.shape());
  for (std::size_t r = 0; r < 5; ++r) {
    double mean = 0.0, ss = 0.0;
    for (std::size_t j = 0; j < C; ++j) mean += static_cast<double>(x(r, j));
    mean /= static_cast<double>(C);
    for (std::size_t j = 0; j < C; ++j)
      ss += (static_cast<double>(x(r, j)) - mean) * (static_cast<double>(x(r, j)) - mean);
    const double rstd_unbiased = 1.0 / std::sqrt(ss / static_cast<double>(C - 1) + 1e-5);
    const double rstd = 1.0 / std::sqrt(ss / static_cast<double>(C) + 1e-5);
    double b = 0.0;
    for (std::size_t j = 0; j < C; ++j) {
      const double xhat = (static_cast<double>(x(r, j)) - mean) * rstd;
      b += static_cast<double>(gamma(j)) * static_cast<double>(dy(r, j)) * xhat /
           static_cast<double>(C);
    }
    for (std::size_t j = 0; j < C; ++j) {
      const double d = static_cast<double>(x(r, j)) - mean;
      y_unbiased(r, j) = static_cast<float>(d * rstd_unbiased * static_cast<double>(gamma(j)) +
                                            static_cast<double>(beta(j)));
      const double g = static_cast<double>(gamma(j)) * static_cast<double>(dy(r, j));
      dx_no_mean(r, j) = static_cast<float>(rstd * (g - d * rstd * b));
    }
  }
  CHECK_FALSE(near(y_unbiased, y, kLnTol, kLnTol));
  CHECK_FALSE(near(dx_no_mean, dx, kLnTol, kLnTol));
  // Even the golden tolerance of attention would catch both.
  CHECK_FALSE(near(y_unbiased, y, kAtol, kRtol));
  CHECK_FALSE(near(dx_no_mean, dx, kAtol, kRtol));
}

// ---------------------------------------------------------------------------------------------
// Scaled dot-product attention
// ---------------------------------------------------------------------------------------------

struct Sdpa {
  Tensor<4> q, k, v, dout;
};
Sdpa make_sdpa(std::size_t B, std::size_t H, std::size_t T, std::size_t S, std::size_t hs,
               std::size_t hv, std::uint64_t seed) {
  attn::Rng rng(seed);
  Sdpa s{attn::randn<4>(rng, {B, H, T, hs}), attn::randn<4>(rng, {B, H, S, hs}),
         attn::randn<4>(rng, {B, H, S, hv}), attn::randn<4>(rng, {B, H, T, hv})};
  return s;
}

TEST_CASE(
    "fast scaled dot-product attention equals the reference, forward and backward, at every kernel "
    "limit") {
  // Heads of 8, 16, ... 64 floats with at most 256 keys go through the hand-written products
  // (head_products.hpp), every other shape through BLAS: both sides of each limit (hs 64 | 72,
  // S 256 | 257, hs 8 | 12), hs = 1, T = 1, a last block of fewer than 4 rows or 16 keys, 16 + 8
  // columns (hs 24), T != S, values wider than the keys (hv != hs, BLAS), and several query
  // blocks of 64 (T 70, T 150).
  struct Case {
    std::size_t B, H, T, S, hs, hv;
  };
  for (const Case c :
       {Case{1, 1, 1, 1, 1, 1}, Case{2, 3, 1, 1, 8, 8}, Case{1, 2, 5, 5, 8, 8},
        Case{2, 1, 17, 17, 24, 24}, Case{1, 1, 33, 70, 16, 16}, Case{1, 1, 3, 256, 8, 8},
        Case{1, 1, 3, 257, 8, 8}, Case{1, 1, 9, 9, 64, 64}, Case{1, 1, 9, 9, 72, 72},
        Case{1, 2, 6, 6, 12, 12}, Case{2, 2, 7, 7, 3, 5}, Case{1, 1, 70, 70, 16, 16},
        Case{1, 2, 150, 150, 8, 8}, Case{3, 3, 65, 65, 40, 40}}) {
    for (const bool causal : {false, true}) {
      if (causal && c.T != c.S) continue;
      CAPTURE(c.B);
      CAPTURE(c.H);
      CAPTURE(c.T);
      CAPTURE(c.S);
      CAPTURE(c.hs);
      CAPTURE(c.hv);
      CAPTURE(causal);
      const Sdpa s = make_sdpa(c.B, c.H, c.T, c.S, c.hs, c.hv, 600 + c.S + c.hs);
      const attn::AttentionResult ref = attn::scaled_dot_product_attention(s.q, s.k, s.v, causal);
      const attn::AttentionGrads ref_g =
          attn::scaled_dot_product_attention_backward(s.dout, s.q, s.k, s.v, ref.weights, causal);
      on_1_and_3_threads([&] {
        const attn::AttentionResult f =
            attn::fast::scaled_dot_product_attention(s.q, s.k, s.v, causal);
        CHECK_TENSOR_NEAR(f.out, ref.out, kAtol, kRtol);
        CHECK_TENSOR_NEAR(f.weights, ref.weights, kAtol, kRtol);
        const attn::AttentionResult lean =
            attn::fast::scaled_dot_product_attention(s.q, s.k, s.v, causal, false);
        CHECK_TENSOR_NEAR(lean.out, f.out, 0.0, 0.0);
        CHECK(lean.weights.size() == 0);
        const attn::AttentionGrads g = attn::fast::scaled_dot_product_attention_backward(
            s.dout, s.q, s.k, s.v, f.weights, causal);
        CHECK_TENSOR_NEAR(g.dq, ref_g.dq, kAtol, kRtol);
        CHECK_TENSOR_NEAR(g.dk, ref_g.dk, kAtol, kRtol);
        CHECK_TENSOR_NEAR(g.dv, ref_g.dv, kAtol, kRtol);
      });
    }
  }
}

TEST_CASE(
    "fast attention on caller-owned strided buffers (the KV cache's call) equals the reference") {
  // Small heads: one query at a time over keys 0..t gives the exact bits of row t of the whole
  // causal sequence (every score is one sum in a fixed order), which lets chapter 10's cached
  // generation reproduce the uncached one token for token. BLAS heads (hs = 72): within the
  // golden tolerance of the reference.
  for (const std::size_t hs : {16, 72}) {
    CAPTURE(hs);
    const std::size_t H = 3, T = 37;
    const Sdpa s = make_sdpa(1, H, T, T, hs, hs, 5);
    const attn::AttentionResult full =
        attn::fast::scaled_dot_product_attention(s.q, s.k, s.v, /*causal=*/true, false);
    const attn::AttentionResult ref = attn::scaled_dot_product_attention(s.q, s.k, s.v, true);
    std::vector<float> out(H * hs), scratch(attn::fast::attention_scratch_floats(1, T, hs));
    const attn::fast::HeadStrides in{H * T * hs, T * hs, hs}, one{H * hs, hs, hs};
    std::size_t differ = 0;
    for (std::size_t t = 0; t < T; ++t) {
      attn::fast::attention_strided(1, H, 1, t + 1, hs, s.q.data() + t * hs, in, s.k.data(), in,
                                    s.v.data(), in, out.data(), one, /*causal=*/false,
                                    scratch.data());
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t i = 0; i < hs; ++i) {
          differ += out[h * hs + i] != full.out(0, h, t, i);
          const double want = static_cast<double>(ref.out(0, h, t, i));
          CHECK(std::abs(static_cast<double>(out[h * hs + i]) - want) <=
                kAtol + kRtol * std::abs(want));
        }
    }
    if (hs == 16) CHECK(differ == 0);
  }
}

TEST_CASE("the attention comparison catches a subtly wrong kernel") {
  // A scale 1% off (e.g. 1/sqrt(hs) taken in the wrong precision or of the wrong size) and a
  // backward whose dK misses the 1/sqrt(hs) both fail the golden tolerance.
  const Sdpa s = make_sdpa(1, 2, 9, 9, 16, 16, 7);
  const attn::AttentionResult f = attn::fast::scaled_dot_product_attention(s.q, s.k, s.v, true);
  const Tensor<4> q_off = s.q * 1.01f;
  CHECK_FALSE(
      near(attn::scaled_dot_product_attention(q_off, s.k, s.v, true).out, f.out, kAtol, kRtol));
  const attn::AttentionGrads g =
      attn::fast::scaled_dot_product_attention_backward(s.dout, s.q, s.k, s.v, f.weights, true);
  const Tensor<4> dk_unscaled = g.dk * 4.0f;  // sqrt(16)
  const attn::AttentionGrads ref =
      attn::scaled_dot_product_attention_backward(s.dout, s.q, s.k, s.v, f.weights, true);
  CHECK_FALSE(near(dk_unscaled, ref.dk, kAtol, kRtol));
  CHECK(near(g.dk, ref.dk, kAtol, kRtol));
}

// ---------------------------------------------------------------------------------------------
// Multi-head attention
// ---------------------------------------------------------------------------------------------

attn::MhaWeights zeros_like(const attn::MhaWeights& w) {
  return {xt::zeros<float>(w.w_q.shape()), xt::zeros<float>(w.w_k.shape()),
          xt::zeros<float>(w.w_v.shape()), xt::zeros<float>(w.w_o.shape())};
}

struct DimsMha {
  std::size_t B, T, C, H;
};

TEST_CASE(
    "fast multi-head attention equals the reference: forward, fused, cross, cache, backward") {
  // (1, 1, 3, 1): one token, C = 3; (3, 5, 6, 3): hs = 2 (BLAS); (2, 70, 24, 3): hs = 8 (small
  // heads) over two query blocks; (2, 9, 64, 1): one head of 64; (1, 7, 12, 2), hs = 6.
  for (const DimsMha d : {DimsMha{1, 1, 3, 1}, DimsMha{3, 5, 6, 3}, DimsMha{2, 70, 24, 3},
                          DimsMha{2, 9, 64, 1}, DimsMha{1, 7, 12, 2}}) {
    for (const bool causal : {false, true})
      for (const bool proj : {true, false}) {
        CAPTURE(d.B);
        CAPTURE(d.T);
        CAPTURE(d.C);
        CAPTURE(d.H);
        CAPTURE(causal);
        CAPTURE(proj);
        attn::Rng rng(700 + d.T + d.C);
        attn::MhaWeights w = attn::mha_init(rng, d.C, 1.5f / std::sqrt(static_cast<float>(d.C)));
        if (!proj) w.w_o = attn::Matrix(attn::Matrix::shape_type{0, 0});
        const Tensor<3> x = attn::randn<3>(rng, {d.B, d.T, d.C});
        const Tensor<3> dout = attn::randn<3>(rng, {d.B, d.T, d.C});
        attn::MhaCache ref_cache;
        const Tensor<3> ref = attn::mha_forward(x, w, d.H, causal, ref_cache);
        attn::MhaWeights ref_g = zeros_like(w);
        Tensor<3> ref_dx;
        attn::mha_backward(dout, ref_cache, w, d.H, causal, ref_dx, ref_g);
        on_1_and_3_threads([&] {
          const attn::MhaResult f = attn::fast::mha_forward(x, w, d.H, causal);
          CHECK_TENSOR_NEAR(f.out, ref, kAtol, kRtol);
          CHECK_TENSOR_NEAR(f.weights, ref_cache.weights, kAtol, kRtol);
          attn::fast::MhaCache cache;
          const Tensor<3> out = attn::fast::mha_forward(x, w, d.H, causal, cache);
          CHECK_TENSOR_NEAR(out, f.out, 0.0, 0.0);
          attn::MhaWeights g = zeros_like(w);
          Tensor<3> dx;
          attn::fast::mha_backward(dout, cache, w, d.H, causal, dx, g);
          CHECK_TENSOR_NEAR(dx, ref_dx, kAtol, kRtol);
          CHECK_TENSOR_NEAR(g.w_q, ref_g.w_q, kAtol, kRtol);
          CHECK_TENSOR_NEAR(g.w_k, ref_g.w_k, kAtol, kRtol);
          CHECK_TENSOR_NEAR(g.w_v, ref_g.w_v, kAtol, kRtol);
          CHECK_TENSOR_NEAR(g.w_o, ref_g.w_o, kAtol, kRtol);
          if (!proj) return;
          const attn::Matrix w_qkv = attn::fuse_qkv(w);
          const attn::MhaResult fused = attn::fast::mha_forward_fused(x, w_qkv, w.w_o, d.H, causal);
          CHECK_TENSOR_NEAR(fused.out, attn::mha_forward_fused(x, w_qkv, w.w_o, d.H, causal).out,
                            kAtol, kRtol);
          if (causal) return;
          const Tensor<3> y = attn::randn<3>(rng, {d.B, d.T + 2, d.C});
          const attn::MhaResult cross = attn::fast::mha_cross_forward(x, y, w, d.H);
          const attn::MhaResult cross_ref = attn::mha_cross_forward(x, y, w, d.H);
          CHECK_TENSOR_NEAR(cross.out, cross_ref.out, kAtol, kRtol);
          CHECK_TENSOR_NEAR(cross.weights, cross_ref.weights, kAtol, kRtol);
        });
      }
  }
}

TEST_CASE("fast mha forward+backward: same bits on 1 and 3 threads, cache buffers reused") {
  attn::Rng rng(300);
  const attn::MhaWeights w = attn::mha_init(rng, 32, 0.2f);
  const Tensor<3> x = attn::randn<3>(rng, {3, 130, 32});
  const Tensor<3> dout = attn::randn<3>(rng, {3, 130, 32});
  for (const bool causal : {true, false}) {
    CAPTURE(causal);
    std::vector<Tensor<3>> outs, dxs;
    std::vector<attn::MhaWeights> gs;
    on_1_and_3_threads([&] {
      attn::fast::MhaCache cache;
      (void)attn::fast::mha_forward(x, w, 4, causal, cache);
      const float* qkv_data = cache.qkv.data();
      const float* weights_data = cache.weights.data();
      const Tensor<3> out = attn::fast::mha_forward(x, w, 4, causal, cache);
      CHECK(cache.qkv.data() == qkv_data);
      CHECK(cache.weights.data() == weights_data);
      CHECK_TENSOR_NEAR(out, attn::fast::mha_forward(x, w, 4, causal).out, 0.0, 0.0);
      attn::MhaWeights g = zeros_like(w);
      Tensor<3> dx;
      attn::fast::mha_backward(dout, cache, w, 4, causal, dx, g);
      outs.push_back(out);
      dxs.push_back(dx);
      gs.push_back(g);
    });
    CHECK_TENSOR_NEAR(outs[0], outs[1], 0.0, 0.0);
    CHECK_TENSOR_NEAR(dxs[0], dxs[1], 0.0, 0.0);
    CHECK_TENSOR_NEAR(gs[0].w_q, gs[1].w_q, 0.0, 0.0);
    CHECK_TENSOR_NEAR(gs[0].w_k, gs[1].w_k, 0.0, 0.0);
    CHECK_TENSOR_NEAR(gs[0].w_v, gs[1].w_v, 0.0, 0.0);
    CHECK_TENSOR_NEAR(gs[0].w_o, gs[1].w_o, 0.0, 0.0);
  }
}

TEST_CASE("fast mha_forward on 1 to 3 threads: the same bits, with and without weights") {
  // (2, 256, 128, 4): projections big enough to be split into blocks of rows as well.
  attn::Rng rng(23);
  const Tensor<3> x = attn::randn<3>(rng, {2, 256, 128});
  const attn::MhaWeights w = attn::mha_init(rng, 128, 0.15f);
  for (const bool causal : {false, true})
    for (const bool need_weights : {false, true}) {
      CAPTURE(causal);
      CAPTURE(need_weights);
      std::vector<attn::MhaResult> rs;
      on_1_and_3_threads(
          [&] { rs.push_back(attn::fast::mha_forward(x, w, 4, causal, need_weights)); });
      CHECK_TENSOR_NEAR(rs[0].out, rs[1].out, 0.0, 0.0);
      CHECK_TENSOR_NEAR(rs[0].weights, rs[1].weights, 0.0, 0.0);
    }
}

TEST_CASE("the multi-head comparison catches a subtly wrong kernel") {
  // The backward's classic slip: dheads = dout @ w_o instead of dout @ w_o^T (the forward's
  // product not transposed). The reference run with w_o transposed makes exactly that mistake.
  attn::Rng rng(703);
  const attn::MhaWeights w = attn::mha_init(rng, 16, 0.3f);
  const Tensor<3> x = attn::randn<3>(rng, {2, 6, 16});
  const Tensor<3> dout = attn::randn<3>(rng, {2, 6, 16});
  attn::fast::MhaCache cache;
  (void)attn::fast::mha_forward(x, w, 2, true, cache);
  attn::MhaWeights g = zeros_like(w);
  Tensor<3> dx;
  attn::fast::mha_backward(dout, cache, w, 2, true, dx, g);
  attn::MhaCache ref_cache;
  (void)attn::mha_forward(x, w, 2, true, ref_cache);
  attn::MhaWeights w_o_not_transposed = w;
  w_o_not_transposed.w_o = xt::transpose(w.w_o);
  attn::MhaWeights wrong_g = zeros_like(w);
  Tensor<3> wrong_dx;
  attn::mha_backward(dout, ref_cache, w_o_not_transposed, 2, true, wrong_dx, wrong_g);
  CHECK_FALSE(near(dx, wrong_dx, kAtol, kRtol));
  CHECK_FALSE(near(g.w_q, wrong_g.w_q, kAtol, kRtol));
}

}  // TEST_SUITE
