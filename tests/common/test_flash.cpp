// Tests for attn/fast/flash.hpp: the flash-style forward and backward against the reference
// attn::scaled_dot_product_attention / its backward / attn::mha_forward / mha_backward, over
// shapes where the tiles change paths (T = 1, T not a multiple of the tile, odd head sizes,
// S != T, tiles of 1, 3, 64, 100 and the default 256), causal and not, on 1 and 3 threads; the
// log-sum-exp against a naive double loop; the same bits on any thread count (whole heads or tiles
// per thread); no allocation as large as a (T, T) matrix; the fast path's switch to this kernel for
// long sequences; and the training path through it (the block and the model, forward and backward,
// against their float64 twins on both sides of kFlashMinT).
#include <doctest/doctest.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/core/threads.hpp"
#include "attn/fast/attention.hpp"
#include "attn/fast/exp_nonpositive.hpp"
#include "attn/fast/flash.hpp"
#include "attn/model/block.hpp"
#include "attn/model/model.hpp"
#include "attn/model/reference.hpp"
#include "attn/ops/attention.hpp"
#include "test_fixtures.hpp"
#include "test_helpers.hpp"

// This binary records its largest single allocation (operator new), so a test can check that
// no (T, T) matrix was ever allocated.
namespace {
std::atomic<std::size_t> g_largest{0};
}
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  std::size_t seen = g_largest.load(std::memory_order_relaxed);
  while (n > seen && !g_largest.compare_exchange_weak(seen, n, std::memory_order_relaxed)) {
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

using attn::Tensor;

// The golden tolerance: |flash - ref| <= 1e-5 + 1e-4 |ref| (the order of the sums differs: tiles,
// BLAS blocks, the rescaling by exp(m - m')).
constexpr double kAtol = 1e-5, kRtol = 1e-4;

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

struct Shape {
  std::size_t B, H, T, S, hs, hv;
};

// T = 1; T a few below, at and above a multiple of the tile; odd hs and hv != hs; S != T.
const std::vector<Shape> kShapes = {
    {1, 1, 1, 1, 4, 4},     {2, 3, 5, 5, 3, 3},     {1, 2, 64, 64, 16, 16}, {1, 2, 67, 67, 7, 5},
    {2, 1, 130, 130, 8, 8}, {1, 1, 129, 129, 1, 1}, {1, 2, 9, 20, 6, 4},    {1, 1, 70, 3, 5, 5},
};

struct Inputs {
  Tensor<4> q, k, v, dout;
};
Inputs inputs(attn::Rng& rng, const Shape& s) {
  Inputs in;
  in.q = attn::randn<4>(rng, {s.B, s.H, s.T, s.hs}, 1.5f);
  in.k = attn::randn<4>(rng, {s.B, s.H, s.S, s.hs}, 1.5f);
  in.v = attn::randn<4>(rng, {s.B, s.H, s.S, s.hv});
  in.dout = attn::randn<4>(rng, {s.B, s.H, s.T, s.hv});
  return in;
}

// log sum_j exp(s_tj) of the scaled, masked scores, in double: (B, H, T).
Tensor<3> naive_lse(const Tensor<4>& q, const Tensor<4>& k, bool causal) {
  const std::size_t B = q.shape()[0], H = q.shape()[1], T = q.shape()[2], hs = q.shape()[3];
  const std::size_t S = k.shape()[2];
  Tensor<3> lse(Tensor<3>::shape_type{B, H, T});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t) {
        const std::size_t keys = causal ? t + 1 : S;
        std::vector<double> s(keys);
        double m = -INFINITY;
        for (std::size_t j = 0; j < keys; ++j) {
          double dot = 0.0;
          for (std::size_t d = 0; d < hs; ++d) dot += double(q(b, h, t, d)) * double(k(b, h, j, d));
          s[j] = dot / std::sqrt(double(hs));
          m = std::max(m, s[j]);
        }
        double sum = 0.0;
        for (double x : s) sum += std::exp(x - m);
        lse(b, h, t) = static_cast<float>(m + std::log(sum));
      }
  return lse;
}

bool same_bits(const Tensor<4>& a, const Tensor<4>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) {
           return std::memcmp(&x, &y, sizeof x) == 0;
         });
}

}  // namespace

TEST_SUITE("common.flash") {

#if defined(__GNUC__)
TEST_CASE("the 8-lane exp of the flash rows gives the scalar exp's bits in every lane") {
  // Every float exponent, both signs, 2,047 mantissas each, then the edges: the clamp at -88.5
  // and its neighbours, the last normal results, -inf, +inf, NaNs of both signs, +-0.
  std::vector<float> xs;
  for (const std::uint32_t sign : {0u, 0x80000000u})
    for (std::uint32_t e = 0; e < 256; ++e)
      for (std::uint32_t m = 0; m < (1u << 23); m += 4099)
        xs.push_back(std::bit_cast<float>(sign | e << 23 | m));
  for (const std::uint32_t bits :
       {0xC2B0FFFFu, 0xC2B10000u, 0xC2B10001u, 0xC2AEAC4Fu, 0xC2AEAC50u, 0xFF800000u, 0x7F800000u,
        0x7FC00000u, 0xFFC00000u, 0xFF800001u, 0x80000000u, 0u})
    xs.push_back(std::bit_cast<float>(bits));
  while (xs.size() % 8 != 0) xs.push_back(-1.0f);
  std::size_t differ = 0, first = xs.size();
  for (std::size_t i = 0; i < xs.size(); i += 8) {
    attn::detail::float8 v;
    std::memcpy(&v, xs.data() + i, sizeof v);
    const attn::detail::float8 e = attn::detail::exp_nonpositive8(v);
    for (std::size_t u = 0; u < 8; ++u) {
      const float want = attn::detail::exp_nonpositive(xs[i + u]);
      const bool same = (std::isnan(want) && std::isnan(e[u])) ||
                        std::bit_cast<std::uint32_t>(want) == std::bit_cast<std::uint32_t>(e[u]);
      if (!same && differ++ == 0) first = i + u;
    }
  }
  INFO("first difference at x = " << (first < xs.size() ? xs[first] : 0.0f));
  CHECK(differ == 0);
  CHECK(xs.size() > 1'000'000);
}
#endif

TEST_CASE("the flash forward equals the reference sdpa at many shapes, tiles and thread counts") {
  attn::Rng rng(1200);
  for (const Shape& s : kShapes) {
    const Inputs in = inputs(rng, s);
    for (const bool causal : {false, true}) {
      if (causal && s.S != s.T) continue;
      const attn::AttentionResult ref =
          attn::scaled_dot_product_attention(in.q, in.k, in.v, causal);
      const Tensor<3> lse = naive_lse(in.q, in.k, causal);
      for (const std::size_t tile : {std::size_t{1}, std::size_t{3}, std::size_t{64}}) {
        CAPTURE(s.T);
        CAPTURE(s.S);
        CAPTURE(s.hs);
        CAPTURE(causal);
        CAPTURE(tile);
        on_1_and_3_threads([&] {
          const attn::fast::FlashResult f =
              attn::fast::flash_attention(in.q, in.k, in.v, causal, tile);
          CHECK_TENSOR_NEAR(f.out, ref.out, kAtol, kRtol);
          CHECK_TENSOR_NEAR(f.lse, lse, kAtol, kRtol);
        });
      }
    }
  }
}

TEST_CASE("the flash backward equals the reference backward at many shapes, tiles and threads") {
  attn::Rng rng(1201);
  for (const Shape& s : kShapes) {
    const Inputs in = inputs(rng, s);
    for (const bool causal : {false, true}) {
      if (causal && s.S != s.T) continue;
      const attn::AttentionResult ref =
          attn::scaled_dot_product_attention(in.q, in.k, in.v, causal);
      const attn::AttentionGrads g = attn::scaled_dot_product_attention_backward(
          in.dout, in.q, in.k, in.v, ref.weights, causal);
      for (const std::size_t tile : {std::size_t{1}, std::size_t{3}, std::size_t{64}}) {
        CAPTURE(s.T);
        CAPTURE(s.S);
        CAPTURE(s.hs);
        CAPTURE(causal);
        CAPTURE(tile);
        on_1_and_3_threads([&] {
          const attn::fast::FlashResult f =
              attn::fast::flash_attention(in.q, in.k, in.v, causal, tile);
          const attn::AttentionGrads fg = attn::fast::flash_attention_backward(
              in.dout, in.q, in.k, in.v, f.out, f.lse, causal, tile);
          CHECK_TENSOR_NEAR(fg.dq, g.dq, kAtol, kRtol);
          CHECK_TENSOR_NEAR(fg.dk, g.dk, kAtol, kRtol);
          CHECK_TENSOR_NEAR(fg.dv, g.dv, kAtol, kRtol);
        });
      }
    }
  }
}

TEST_CASE("the default tile (256) at T below, above and not a multiple of it, odd T and hs") {
  // kFlashTile and a tile that divides none of these lengths: forward and backward against the
  // reference, on 1 and 3 threads.
  const std::vector<Shape> shapes = {{1, 2, 255, 255, 16, 16},
                                     {1, 1, 257, 257, 7, 5},
                                     {2, 1, 600, 600, 8, 8},
                                     {1, 1, 3, 300, 4, 4}};
  attn::Rng rng(1203);
  for (const Shape& s : shapes) {
    const Inputs in = inputs(rng, s);
    for (const bool causal : {false, true}) {
      if (causal && s.S != s.T) continue;
      const attn::AttentionResult ref =
          attn::scaled_dot_product_attention(in.q, in.k, in.v, causal);
      const attn::AttentionGrads g = attn::scaled_dot_product_attention_backward(
          in.dout, in.q, in.k, in.v, ref.weights, causal);
      for (const std::size_t tile : {attn::fast::kFlashTile, std::size_t{100}}) {
        CAPTURE(s.T);
        CAPTURE(s.S);
        CAPTURE(causal);
        CAPTURE(tile);
        on_1_and_3_threads([&] {
          const attn::fast::FlashResult f =
              attn::fast::flash_attention(in.q, in.k, in.v, causal, tile);
          CHECK_TENSOR_NEAR(f.out, ref.out, kAtol, kRtol);
          const attn::AttentionGrads fg = attn::fast::flash_attention_backward(
              in.dout, in.q, in.k, in.v, f.out, f.lse, causal, tile);
          CHECK_TENSOR_NEAR(fg.dq, g.dq, kAtol, kRtol);
          CHECK_TENSOR_NEAR(fg.dk, g.dk, kAtol, kRtol);
          CHECK_TENSOR_NEAR(fg.dv, g.dv, kAtol, kRtol);
        });
      }
    }
  }
}

TEST_CASE("a tile longer than the sequence computes what a tile of exactly its length does") {
  // The kernel clamps the tile to the sequence (one tile either way): the same bits, forward and
  // backward.
  attn::Rng rng(1204);
  const Shape s{1, 2, 67, 67, 8, 8};
  const Inputs in = inputs(rng, s);
  const attn::fast::FlashResult exact = attn::fast::flash_attention(in.q, in.k, in.v, true, 67);
  const attn::fast::FlashResult longer =
      attn::fast::flash_attention(in.q, in.k, in.v, true, attn::fast::kMaxFlashTile);
  CHECK(same_bits(exact.out, longer.out));
  const attn::AttentionGrads ge = attn::fast::flash_attention_backward(
      in.dout, in.q, in.k, in.v, exact.out, exact.lse, true, 67);
  const attn::AttentionGrads gl = attn::fast::flash_attention_backward(
      in.dout, in.q, in.k, in.v, exact.out, exact.lse, true, attn::fast::kMaxFlashTile);
  CHECK(same_bits(ge.dq, gl.dq));
  CHECK(same_bits(ge.dk, gl.dk));
  CHECK(same_bits(ge.dv, gl.dv));
}

TEST_CASE("a forgotten rescale of the partial output would fail the comparison") {
  // The test's teeth: the flash output differs from a one-tile-only softmax (what a kernel that
  // never rescales by exp(m - m') computes for the first tile) by far more than the tolerance.
  attn::Rng rng(1202);
  const Inputs in = inputs(rng, {1, 1, 40, 40, 8, 8});
  const attn::AttentionResult ref = attn::scaled_dot_product_attention(in.q, in.k, in.v, false);
  const attn::fast::FlashResult f = attn::fast::flash_attention(in.q, in.k, in.v, false, 8);
  CHECK(attn::testing::tensor_mismatch(f.out, ref.out, kAtol, kRtol).empty());
  Tensor<4> first_tile_only = in.v;  // softmax over keys 0..7 only
  const Tensor<4> k8 = xt::view(in.k, xt::all(), xt::all(), xt::range(0, 8), xt::all());
  const Tensor<4> v8 = xt::view(in.v, xt::all(), xt::all(), xt::range(0, 8), xt::all());
  const attn::AttentionResult wrong = attn::scaled_dot_product_attention(in.q, k8, v8, false);
  CHECK_FALSE(attn::testing::tensor_mismatch(wrong.out, ref.out, kAtol, kRtol).empty());
}

TEST_CASE("the flash kernel gives the same bits on 1, 2 and 3 threads") {
  attn::Rng rng(1203);
  const Inputs in = inputs(rng, {2, 3, 150, 150, 16, 16});
  const std::size_t saved = attn::num_threads();
  attn::set_num_threads(1);
  const attn::fast::FlashResult one = attn::fast::flash_attention(in.q, in.k, in.v, true, 32);
  const attn::AttentionGrads g1 =
      attn::fast::flash_attention_backward(in.dout, in.q, in.k, in.v, one.out, one.lse, true, 32);
  for (const std::size_t threads : {2, 3}) {
    CAPTURE(threads);
    attn::set_num_threads(threads);
    const attn::fast::FlashResult f = attn::fast::flash_attention(in.q, in.k, in.v, true, 32);
    const attn::AttentionGrads g =
        attn::fast::flash_attention_backward(in.dout, in.q, in.k, in.v, f.out, f.lse, true, 32);
    CHECK(same_bits(f.out, one.out));
    CHECK(same_bits(g.dq, g1.dq));
    CHECK(same_bits(g.dk, g1.dk));
    CHECK(same_bits(g.dv, g1.dv));
  }
  attn::set_num_threads(saved);
}

TEST_CASE("the flash kernel never allocates a (T, T) matrix") {
  attn::Rng rng(1204);
  const std::size_t T = 2048, hs = 16;
  const Inputs in = inputs(rng, {1, 2, T, T, hs, hs});
  const std::size_t saved = attn::num_threads(), threads = 2;
  attn::set_num_threads(threads);
  g_largest.store(0);
  const attn::fast::FlashResult f = attn::fast::flash_attention(in.q, in.k, in.v, true);
  const attn::AttentionGrads g =
      attn::fast::flash_attention_backward(in.dout, in.q, in.k, in.v, f.out, f.lse, true);
  attn::set_num_threads(saved);
  const std::size_t largest = g_largest.load();
  INFO("largest allocation " << largest << " bytes; one head's (T, T) scores " << T * T * 4);
  // The largest of q, k, v, out ((B, H, T, hs) floats, B H = 2) and the threads' scratch (the
  // backward's two (tile, tile) blocks per thread): a sixteenth of one (T, T) matrix here.
  const std::size_t tile = attn::fast::kFlashTile;
  CHECK(largest <= std::max(2 * T * hs * 4, threads * 2 * tile * tile * 4));
  CHECK(largest * 16 <= T * T * 4);
  CHECK(g.dq.size() == in.q.size());
}

TEST_CASE(
    "multi-head attention through the flash kernel equals the reference, forward and backward") {
  attn::Rng rng(1205);
  for (const std::size_t T : {1, 33, 70}) {
    for (const bool causal : {false, true}) {
      for (const bool proj : {true, false}) {
        CAPTURE(T);
        CAPTURE(causal);
        CAPTURE(proj);
        const std::size_t B = 2, C = 12, H = 3;
        const Tensor<3> x = attn::randn<3>(rng, {B, T, C});
        attn::MhaWeights w = attn::mha_init(rng, C, 0.4f);
        if (!proj) w.w_o = attn::Matrix(attn::Matrix::shape_type{0, 0});
        const Tensor<3> dout = attn::randn<3>(rng, {B, T, C});
        attn::MhaCache cache;
        const Tensor<3> ref = attn::mha_forward(x, w, H, causal, cache);
        Tensor<3> dx_ref;
        attn::MhaWeights g_ref = w;
        for (attn::Matrix* m : {&g_ref.w_q, &g_ref.w_k, &g_ref.w_v, &g_ref.w_o}) m->fill(0.5f);
        attn::mha_backward(dout, cache, w, H, causal, dx_ref, g_ref);
        on_1_and_3_threads([&] {
          CHECK_TENSOR_NEAR(attn::fast::mha_flash_forward(x, w, H, causal, 16), ref, kAtol, kRtol);
          attn::fast::FlashMhaCache fc;
          const Tensor<3> out = attn::fast::mha_flash_forward(x, w, H, causal, fc, 16);
          CHECK_TENSOR_NEAR(out, ref, kAtol, kRtol);
          Tensor<3> dx;
          attn::MhaWeights g = w;
          for (attn::Matrix* m : {&g.w_q, &g.w_k, &g.w_v, &g.w_o}) m->fill(0.5f);  // accumulates
          attn::fast::mha_flash_backward(dout, fc, w, H, causal, dx, g, 16);
          CHECK_TENSOR_NEAR(dx, dx_ref, kAtol, kRtol);
          CHECK_TENSOR_NEAR(g.w_q, g_ref.w_q, kAtol, kRtol);
          CHECK_TENSOR_NEAR(g.w_k, g_ref.w_k, kAtol, kRtol);
          CHECK_TENSOR_NEAR(g.w_v, g_ref.w_v, kAtol, kRtol);
          CHECK_TENSOR_NEAR(g.w_o, g_ref.w_o, kAtol, kRtol);
        });
      }
    }
  }
}

TEST_CASE("the fast path runs the flash kernel for long sequences without weights") {
  attn::Rng rng(1206);
  const std::size_t T = attn::fast::kFlashMinT + 3;
  const Inputs in = inputs(rng, {1, 2, T, T, 8, 8});
  const attn::AttentionResult ref = attn::scaled_dot_product_attention(in.q, in.k, in.v, true);
  const attn::AttentionResult fast =
      attn::fast::scaled_dot_product_attention(in.q, in.k, in.v, true, /*need_weights=*/false);
  CHECK_TENSOR_NEAR(fast.out, ref.out, kAtol, kRtol);
  CHECK(fast.weights.size() == 0);
  // The same bits as the flash kernel itself: it is the one that ran.
  CHECK(same_bits(fast.out, attn::fast::flash_attention(in.q, in.k, in.v, true).out));
  const Tensor<3> x = attn::randn<3>(rng, {1, T, 16});
  const attn::MhaWeights w = attn::mha_init(rng, 16, 0.3f);
  const attn::MhaResult r = attn::mha_forward(x, w, 2, true, /*need_weights=*/false);
  const attn::MhaResult f = attn::fast::mha_forward(x, w, 2, true, /*need_weights=*/false);
  CHECK_TENSOR_NEAR(f.out, r.out, kAtol, kRtol);
}

TEST_CASE(
    "the flash backward gives the same bits on 1, 2 and 3 threads with fewer heads than threads") {
  // One or two heads on 2 or 3 threads: the backward splits into key tiles (dK, dV) and query
  // tiles (dQ) there, and runs whole heads on 1 thread. Same sums, same order: same bits.
  attn::Rng rng(1209);
  for (const std::size_t H : {1, 2}) {
    for (const bool causal : {true, false}) {
      CAPTURE(H);
      CAPTURE(causal);
      const Inputs in = inputs(rng, {1, H, 150, 150, 16, 16});
      const std::size_t saved = attn::num_threads();
      attn::set_num_threads(1);
      const attn::fast::FlashResult f = attn::fast::flash_attention(in.q, in.k, in.v, causal, 32);
      const attn::AttentionGrads g1 =
          attn::fast::flash_attention_backward(in.dout, in.q, in.k, in.v, f.out, f.lse, causal, 32);
      for (const std::size_t threads : {2, 3}) {
        CAPTURE(threads);
        attn::set_num_threads(threads);
        const attn::AttentionGrads g = attn::fast::flash_attention_backward(
            in.dout, in.q, in.k, in.v, f.out, f.lse, causal, 32);
        CHECK(same_bits(g.dq, g1.dq));
        CHECK(same_bits(g.dk, g1.dk));
        CHECK(same_bits(g.dv, g1.dv));
      }
      attn::set_num_threads(saved);
      const attn::AttentionResult ref =
          attn::scaled_dot_product_attention(in.q, in.k, in.v, causal);
      const attn::AttentionGrads gr = attn::scaled_dot_product_attention_backward(
          in.dout, in.q, in.k, in.v, ref.weights, causal);
      CHECK_TENSOR_NEAR(g1.dq, gr.dq, kAtol, kRtol);
      CHECK_TENSOR_NEAR(g1.dk, gr.dk, kAtol, kRtol);
      CHECK_TENSOR_NEAR(g1.dv, gr.dv, kAtol, kRtol);
    }
  }
}

namespace {

// Attention that is not near uniform: q and k projections 25 times block_init's 0.02.
void sharpen(attn::MhaWeights& w) {
  w.w_q *= 25.0f;
  w.w_k *= 25.0f;
}

// The lengths just below and above the switch.
const std::size_t kBelow = attn::fast::kFlashMinT - 1, kAbove = attn::fast::kFlashMinT + 52;

}  // namespace

TEST_CASE("the block's training path runs the flash kernel from kFlashMinT, equal to float64") {
  attn::Rng rng(1210);
  const std::size_t B = 1, C = 16, H = 2, F = 64;
  // block_size kAbove: room for the longest T (nothing a block checks, but the spec says it).
  const auto block = [&](attn::Positions positions) {
    attn::BlockConfig c = attn::testing::block_config(C, H, [&](attn::ModelChoices& m) {
      m.block_size = kAbove;
      m.positions = positions;
    });
    c.keep_weights = false;
    return c;
  };
  // Learned positions (chapter 05's attention), and RoPE (chapter 11's, turned in the projections
  // before the same kernel).
  for (const bool rope : {false, true})
    for (const std::size_t T : {kBelow, kAbove}) {
      CAPTURE(rope);
      CAPTURE(T);
      const attn::BlockConfig cfg = block(rope ? attn::Positions::rope : attn::Positions::learned);
      const bool flash = T >= attn::fast::kFlashMinT;
      attn::BlockWeights w = attn::block_init(rng, C, F);
      sharpen(w.attn);
      const Tensor<3> x = attn::randn<3>(rng, {B, T, C});
      const Tensor<3> dout = attn::randn<3>(rng, {B, T, C});
      attn::BlockCache cache;
      Tensor<3> dx;
      attn::BlockWeights g = attn::block_zeros_like(w);
      g_largest.store(0);
      const Tensor<3> out = attn::block_forward(x, w, cfg, cache);
      attn::block_backward(dout, cache, w, cfg, dx, g);
      const std::size_t largest = g_largest.load();
      // What the cache keeps: L (B, H, T) in place of the (B, H, T, T) weights, and the formula
      // counts it.
      CHECK((cache.attn.weights.size() == 0) == flash);
      CHECK(cache.attn.lse.size() == (flash ? B * H * T : 0));
      CHECK(attn::activation_floats(cache) == attn::block_activation_floats(B, T, C, F, H, cfg));
      // No allocation of a (T, T) matrix on the flash path (the dense one makes several).
      INFO("largest allocation " << largest << " bytes; one head's (T, T) " << T * T * 4);
      CHECK((largest < T * T * sizeof(float)) == flash);
      // The training forward is the evaluation forward (which switches at the same length), bit
      // for bit; with RoPE the evaluation forward is the grouped-query one, which keeps the
      // dense kernel at every length: the same within the golden tolerance.
      const double tol = rope ? kAtol : 0.0, rtol = rope ? kRtol : 0.0;
      CHECK_TENSOR_NEAR(out, attn::block_forward(x, w, cfg).out, tol, rtol);
      // Against the float64 block, forward and backward.
      const attn::ref::BlockWeights<double> w64 = attn::ref::cast<double>(w);
      const attn::Tensor64<3> x64 = xt::cast<double>(x);
      CHECK_TENSOR_NEAR(out, attn::ref::block_forward(x64, w64, cfg), kAtol, kRtol);
      attn::Tensor64<3> dx64;
      attn::ref::BlockWeights<double> g64 = attn::ref::zeros_like(w64);
      attn::ref::block_backward(attn::Tensor64<3>(xt::cast<double>(dout)), x64, w64, cfg, dx64,
                                g64);
      CHECK_TENSOR_NEAR(dx, dx64, kAtol, kRtol);
      CHECK_TENSOR_NEAR(g.attn.w_q, g64.attn.w_q, kAtol, kRtol);
      CHECK_TENSOR_NEAR(g.attn.w_k, g64.attn.w_k, kAtol, kRtol);
      CHECK_TENSOR_NEAR(g.attn.w_v, g64.attn.w_v, kAtol, kRtol);
      CHECK_TENSOR_NEAR(g.attn.w_o, g64.attn.w_o, kAtol, kRtol);
      CHECK_TENSOR_NEAR(g.ln1_gamma, g64.ln1_gamma, kAtol, kRtol);
      CHECK_TENSOR_NEAR(g.ffn.w1, g64.ffn.w1, kAtol, kRtol);
    }
}

TEST_CASE("the model's training step runs the flash kernel from kFlashMinT, equal to float64") {
  attn::Rng rng(1211);
  const attn::ModelSpec config = attn::testing::lm_config(11, kAbove, 16, 2, 1);
  for (const std::size_t T : {kBelow, kAbove}) {
    CAPTURE(T);
    attn::LmWeights w = attn::lm_init(rng, config);
    sharpen(w.blocks[0].attn);
    xt::xtensor<int, 2> tokens({1, T}), targets({1, T});
    for (std::size_t t = 0; t < T; ++t) {
      tokens(0, t) = static_cast<int>(rng.next_u32() % config.vocab_size);
      targets(0, t) = static_cast<int>(rng.next_u32() % config.vocab_size);
    }
    attn::LmWeights g = attn::lm_zeros_like(w);
    attn::LmCache cache;
    const double loss = attn::lm_forward_backward(tokens, targets, w, config, g, cache);
    CHECK((cache.blocks[0].attn.weights.size() == 0) == (T >= attn::fast::kFlashMinT));
    const attn::ref::LmWeights<double> w64 = attn::ref::cast<double>(w);
    attn::ref::LmWeights<double> g64 = attn::ref::zeros_like(w64);
    const double loss64 = attn::ref::lm_forward_backward(tokens, targets, w64, config, g64);
    CHECK(std::abs(loss - loss64) <= kAtol + kRtol * std::abs(loss64));
    // The loss is a mean over T tokens: the gradients of the sum (T times larger, of order 1)
    // are compared, so that the golden tolerance's 1e-5 is not larger than the numbers.
    const double n = static_cast<double>(T);
    CHECK_TENSOR_NEAR(attn::Tensor64<2>(g.wte * n), attn::Tensor64<2>(g64.wte * n), kAtol, kRtol);
    CHECK_TENSOR_NEAR(attn::Tensor64<2>(g.blocks[0].attn.w_q * n),
                      attn::Tensor64<2>(g64.blocks[0].attn.w_q * n), kAtol, kRtol);
    CHECK_TENSOR_NEAR(attn::Tensor64<2>(g.blocks[0].attn.w_k * n),
                      attn::Tensor64<2>(g64.blocks[0].attn.w_k * n), kAtol, kRtol);
    CHECK_TENSOR_NEAR(attn::Tensor64<2>(g.blocks[0].attn.w_v * n),
                      attn::Tensor64<2>(g64.blocks[0].attn.w_v * n), kAtol, kRtol);
  }
}

TEST_CASE("the training path through the flash kernel gives the same bits on 1, 2 and 3 threads") {
  attn::Rng rng(1212);
  const std::size_t B = 1, C = 16, H = 2, T = kAbove;
  const Tensor<3> x = attn::randn<3>(rng, {B, T, C});
  const Tensor<3> dout = attn::randn<3>(rng, {B, T, C});
  attn::MhaWeights w = attn::mha_init(rng, C, 0.5f);
  const std::size_t saved = attn::num_threads();
  std::vector<Tensor<3>> outs, dxs;
  std::vector<attn::MhaWeights> gs;
  for (const std::size_t threads : {1, 2, 3}) {
    attn::set_num_threads(threads);
    attn::fast::MhaCache cache;
    outs.push_back(attn::fast::mha_forward(x, w, H, true, cache, /*need_weights=*/false));
    CHECK(cache.lse.size() == B * H * T);
    dxs.emplace_back();
    gs.push_back(w);
    for (attn::Matrix* m : {&gs.back().w_q, &gs.back().w_k, &gs.back().w_v, &gs.back().w_o})
      m->fill(0.0f);
    attn::fast::mha_backward(dout, cache, w, H, true, dxs.back(), gs.back());
  }
  attn::set_num_threads(saved);
  // A cache whose log-sum-exp does not fit the input: a one-line error naming it.
  attn::fast::MhaCache cache;
  attn::fast::mha_forward(x, w, H, true, cache, /*need_weights=*/false);
  cache.lse = Tensor<3>(Tensor<3>::shape_type{B, H, T - 1});
  Tensor<3> dx;
  attn::MhaWeights g = gs[0];
  CHECK_THROWS_WITH_AS(attn::fast::mha_backward(dout, cache, w, H, true, dx, g),
                       doctest::Contains("lse (1, 2, 2099)"), std::invalid_argument);
  for (std::size_t i = 1; i < 3; ++i) {
    CAPTURE(i + 1);
    CHECK_TENSOR_NEAR(outs[i], outs[0], 0.0, 0.0);
    CHECK_TENSOR_NEAR(dxs[i], dxs[0], 0.0, 0.0);
    CHECK_TENSOR_NEAR(gs[i].w_q, gs[0].w_q, 0.0, 0.0);
    CHECK_TENSOR_NEAR(gs[i].w_k, gs[0].w_k, 0.0, 0.0);
  }
}

TEST_CASE("no queries: an empty output, and zero gradients for the keys and values") {
  attn::Rng rng(1208);
  const Tensor<4> q(Tensor<4>::shape_type{1, 2, 0, 3});
  const Tensor<4> k = attn::randn<4>(rng, {1, 2, 4, 3}), v = attn::randn<4>(rng, {1, 2, 4, 3});
  const attn::fast::FlashResult f = attn::fast::flash_attention(q, k, v, false);
  CHECK(f.out.size() == 0);
  const attn::AttentionGrads g =
      attn::fast::flash_attention_backward(f.out, q, k, v, f.out, f.lse, false);
  CHECK(g.dk == xt::zeros<float>(k.shape()));
  CHECK(g.dv == xt::zeros<float>(v.shape()));
}

TEST_CASE("bad input gets a one-line error naming what was wrong") {
  attn::Rng rng(1207);
  const Inputs in = inputs(rng, {1, 1, 4, 4, 2, 2});
  CHECK_THROWS_WITH_AS(attn::fast::flash_attention(in.q, in.k, in.v, true, 0),
                       doctest::Contains("tile must be in [1, 1024], got 0"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(attn::fast::flash_attention(in.q, in.k, in.v, true, 5000),
                       doctest::Contains("got 5000"), std::invalid_argument);
  const Tensor<4> k3 = attn::randn<4>(rng, {1, 1, 3, 2});
  CHECK_THROWS_WITH_AS(attn::fast::flash_attention(in.q, k3, k3, true),
                       doctest::Contains("S == T for causal attention"), std::invalid_argument);
  const attn::fast::FlashResult f = attn::fast::flash_attention(in.q, in.k, in.v, true);
  const Tensor<3> bad_lse(Tensor<3>::shape_type{1, 1, 3});
  CHECK_THROWS_WITH_AS(
      attn::fast::flash_attention_backward(in.dout, in.q, in.k, in.v, f.out, bad_lse, true),
      doctest::Contains("lse (1, 1, 4)"), std::invalid_argument);
}

}  // TEST_SUITE
