// Tests for chapters/12_fast_attention/ladder.hpp: every rung of chapter 12's ladder against the
// reference attn::scaled_dot_product_attention (causal, one head, every sum in double): within
// float rounding for rung 1 (its steps in float), the golden tolerance elsewhere; and between
// rungs, bit for bit where only the speed changes (2 -> 3 fuse the same operations; 5 -> 6 -> 7 add
// SIMD lanes and threads). Shapes: T = 1, T not a multiple of the tile, odd hs, tiles of 1, 3, 64,
// and 1, 2, 3 threads.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>
#include <stdexcept>
#include <string>

#include "attn/core/random.hpp"
#include "attn/core/threads.hpp"
#include "attn/ops/attention.hpp"
#include "ladder.hpp"  // chapters/12_fast_attention/, compiled into this test
#include "test_fixtures.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Matrix;
using attn::Tensor;
namespace ladder = ch12::ladder;

constexpr double kAtol = 1e-5, kRtol = 1e-4;  // the golden tolerance

using attn::testing::Head;
Head head(attn::Rng& rng, std::size_t T, std::size_t hs) {
  return attn::testing::causal_head(rng, T, hs);
}
Matrix reference(const Head& h) { return attn::testing::causal_reference(h); }

bool same_bits(const Matrix& a, const Matrix& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Case {
  std::size_t T, hs;
};
const Case kCases[] = {{1, 1}, {1, 8}, {2, 3}, {7, 5}, {64, 16}, {67, 7}, {130, 64}, {200, 9}};
const std::size_t kTiles[] = {1, 3, 64};

}  // namespace

TEST_SUITE("common.ladder") {

TEST_CASE("every rung equals the reference within the golden tolerance") {
  attn::Rng rng(1210);
  for (const Case& c : kCases) {
    const Head h = head(rng, c.T, c.hs);
    const Matrix ref = reference(h);
    for (std::size_t r = 0; r < ladder::kRungs; ++r) {
      for (const std::size_t tile : kTiles) {
        INFO("rung " << r + 1 << " (" << std::string(ladder::rung(r).name) << "), T " << c.T
                     << ", hs " << c.hs << ", tile " << tile);
        CHECK_TENSOR_NEAR(ladder::rung(r).run(h.q, h.k, h.v, tile), ref, kAtol, kRtol);
      }
    }
  }
}

TEST_CASE("the naive loops, in float, are within float rounding of the reference (in double)") {
  // The same steps in the same order as attn::attention_ref, each sum in float instead of
  // double: ten times tighter than the golden tolerance the other rungs are held to.
  attn::Rng rng(1211);
  for (const Case& c : kCases) {
    CAPTURE(c.T);
    CAPTURE(c.hs);
    const Head h = head(rng, c.T, c.hs);
    CHECK_TENSOR_NEAR(ladder::naive(h.q, h.k, h.v, 64), reference(h), 1e-6, 1e-5);
  }
}

TEST_CASE("fusing the softmax changes the speed, not the bits (rung 2 = rung 3)") {
  attn::Rng rng(1212);
  for (const Case& c : kCases) {
    CAPTURE(c.T);
    CAPTURE(c.hs);
    const Head h = head(rng, c.T, c.hs);
    CHECK(same_bits(ladder::fused_softmax(h.q, h.k, h.v, 64),
                    ladder::gemm_scores(h.q, h.k, h.v, 64)));
  }
}

TEST_CASE("SIMD lanes and threads change the speed, not the bits (rungs 5 = 6 = 7)") {
  attn::Rng rng(1213);
  const std::size_t saved = attn::num_threads();
  for (const Case& c : kCases) {
    const Head h = head(rng, c.T, c.hs);
    for (const std::size_t tile : kTiles) {
      CAPTURE(c.T);
      CAPTURE(c.hs);
      CAPTURE(tile);
      const Matrix scalar = ladder::tiled_online(h.q, h.k, h.v, tile);
      CHECK(same_bits(ladder::simd_online(h.q, h.k, h.v, tile), scalar));
      for (const std::size_t threads : {1, 2, 3}) {
        CAPTURE(threads);
        attn::set_num_threads(threads);
        CHECK(same_bits(ladder::threaded_online(h.q, h.k, h.v, tile), scalar));
      }
      attn::set_num_threads(saved);
    }
  }
}

TEST_CASE("a rung that forgets the mask or the rescale would fail the comparison") {
  // The tolerance has teeth: attention without the mask, or a softmax over the last key tile
  // only, is far from the reference.
  attn::Rng rng(1214);
  const Head h = head(rng, 40, 8);
  const Matrix ref = reference(h);
  const std::array<std::size_t, 4> shape{1, 1, 40, 8};
  const Tensor<4> q = xt::reshape_view(h.q, shape), k = xt::reshape_view(h.k, shape),
                  v = xt::reshape_view(h.v, shape);
  const Tensor<4> unmasked = attn::scaled_dot_product_attention(q, k, v, false).out;
  Matrix m(Matrix::shape_type{40, 8});
  std::copy(unmasked.begin(), unmasked.end(), m.begin());
  CHECK_FALSE(attn::testing::tensor_mismatch(m, ref, kAtol, kRtol).empty());
}

TEST_CASE("the counts of FLOPs and memory follow the rungs") {
  const std::size_t T = 1024, hs = 64, tile = 64;
  // Rungs 1-3 compute the whole (T, T); rung 4 about half plus the diagonal blocks; 5-7 the
  // visible half exactly.
  CHECK(ladder::rung_flops(0, T, hs, tile) == doctest::Approx(4.0 * T * T * hs));
  CHECK(ladder::rung_flops(3, T, hs, tile) < 0.55 * ladder::rung_flops(2, T, hs, tile));
  CHECK(ladder::rung_flops(4, T, hs, tile) == doctest::Approx(2.0 * T * (T + 1) * hs));
  // (T, T) floats up to rung 4, a few tiles from rung 5 on.
  CHECK(ladder::rung_floats(3, T, hs, tile, 1) == doctest::Approx(double(T) * T));
  CHECK(ladder::rung_floats(4, T, hs, tile, 1) < 3.0 * tile * hs);
  CHECK(ladder::rung_floats(6, T, hs, tile, 2) == 2 * ladder::rung_floats(5, T, hs, tile, 1));
}

TEST_CASE("bad shapes and a tile of 0 get a one-line error") {
  attn::Rng rng(1215);
  const Head h = head(rng, 4, 2);
  const Matrix wide = attn::randn(rng, 4, 3);
  for (std::size_t r = 0; r < ladder::kRungs; ++r) {
    CAPTURE(r);
    CHECK_THROWS_WITH_AS(ladder::rung(r).run(h.q, h.k, h.v, 0),
                         doctest::Contains("tile must be at least 1, got 0"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(ladder::rung(r).run(h.q, wide, h.v, 2),
                         doctest::Contains("q, k, v must have the same shape (T, hs)"),
                         std::invalid_argument);
  }
}

}  // TEST_SUITE
