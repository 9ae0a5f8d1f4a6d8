// Tests for attn/ops/online_softmax.hpp, the online softmax of chapter 12 (the flash kernel's
// readable reference, what ex12.1 and ex12.2 mirror): folding tiles whose maxima rise, fall and
// tie, and a tile of masked keys, gives the two-pass softmax of the whole row; one tile of the
// causal forward gives the reference attention's rows (attn::scaled_dot_product_attention, in
// double) at T = 1 to 200, tiles of 1, 3 and 64; bad input is refused in one line.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/ops/attention.hpp"
#include "attn/ops/online_softmax.hpp"
#include "test_fixtures.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Matrix;
using attn::Tensor;

constexpr double kAtol = 1e-5, kRtol = 1e-4;  // the golden tolerance

using attn::testing::Head;
Head head(attn::Rng& rng, std::size_t T, std::size_t hs) {
  return attn::testing::causal_head(rng, T, hs);
}
Matrix reference(const Head& h) { return attn::testing::causal_reference(h); }

struct Case {
  std::size_t T, hs;
};
const Case kCases[] = {{1, 1}, {1, 8}, {2, 3}, {7, 5}, {64, 16}, {67, 7}, {130, 64}, {200, 9}};
const std::size_t kTiles[] = {1, 3, 64};

}  // namespace

TEST_SUITE("common.online_softmax") {

TEST_CASE("the online softmax over tiles equals the two-pass softmax of the whole row") {
  // Scores in tiles whose maxima rise, fall and tie; a tile of only masked keys in the middle.
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::vector<float>> tiles = {
      {0.5f, -1.0f, 2.0f}, {-inf, -inf}, {7.5f, 7.5f, -3.0f, 1.0f}, {-20.0f}, {30.0f, 29.0f}};
  const std::size_t hs = 3;
  attn::Rng rng(1216);
  attn::OnlineRow row = attn::online_row_start(hs);
  std::vector<double> all_s;
  std::vector<std::vector<float>> all_v;
  for (const auto& tile : tiles) {
    const Matrix vals = attn::randn(rng, tile.size(), hs);
    attn::Vector s(attn::Vector::shape_type{tile.size()});
    for (std::size_t j = 0; j < tile.size(); ++j) {
      s(j) = tile[j];
      all_s.push_back(tile[j]);
      all_v.push_back({vals(j, 0), vals(j, 1), vals(j, 2)});
    }
    attn::online_softmax_update(row, s, vals);
  }
  // The two-pass softmax in double.
  double m = -INFINITY, l = 0.0;
  for (double x : all_s) m = std::max(m, x);
  for (double x : all_s) l += std::exp(x - m);
  CHECK(row.m == 30.0f);
  CHECK(double(row.l) == doctest::Approx(l).epsilon(1e-6));
  for (std::size_t d = 0; d < hs; ++d) {
    double o = 0.0;
    for (std::size_t j = 0; j < all_s.size(); ++j)
      o += std::exp(all_s[j] - m) / l * double(all_v[j][d]);
    CAPTURE(d);
    CHECK(double(row.acc(d) / row.l) == doctest::Approx(o).epsilon(1e-5));
  }
}

TEST_CASE("one tile of the forward equals the reference's rows") {
  attn::Rng rng(1217);
  for (const Case& c : kCases) {
    const Head h = head(rng, c.T, c.hs);
    const Matrix ref = reference(h);
    for (const std::size_t tile : kTiles) {
      for (std::size_t i0 = 0; i0 < c.T; i0 += tile) {
        const Matrix got = attn::attention_tile(h.q, h.k, h.v, i0, tile);
        const std::size_t rows = std::min(tile, c.T - i0);
        const Matrix want = xt::view(ref, xt::range(i0, i0 + rows), xt::all());
        INFO("T " << c.T << ", hs " << c.hs << ", tile " << tile << ", i0 " << i0);
        CHECK_TENSOR_NEAR(got, want, kAtol, kRtol);
      }
    }
  }
  const Head h = head(rng, 4, 2);
  CHECK_THROWS_WITH_AS(attn::attention_tile(h.q, h.k, h.v, 4, 2),
                       doctest::Contains("i0 must be below T = 4, got 4"), std::invalid_argument);
}

TEST_CASE("bad input: values of another shape, a tile of 0, shapes that differ") {
  attn::OnlineRow row = attn::online_row_start(3);
  const attn::Vector s = xt::zeros<float>({2});
  const Matrix wrong = xt::zeros<float>({2, 4});
  CHECK_THROWS_WITH_AS(attn::online_softmax_update(row, s, wrong),
                       "attn::online_softmax_update: values must be (n, hs) = (2, 3), got (2, 4)",
                       std::invalid_argument);
  attn::Rng rng(1218);
  const Head h = head(rng, 4, 2);
  CHECK_THROWS_WITH_AS(attn::attention_tile(h.q, h.k, h.v, 0, 0),
                       "attn::attention_tile: tile must be at least 1, got 0",
                       std::invalid_argument);
  const Matrix wide = attn::randn(rng, 4, 3);
  CHECK_THROWS_WITH_AS(attn::attention_tile(h.q, wide, h.v, 0, 2),
                       doctest::Contains("q, k, v must have the same shape (T, hs)"),
                       std::invalid_argument);
}

}  // TEST_SUITE
