// Don't edit: these tests check your exercises.
// tests/exercises/ch12_test.cpp: chapter 12 (making attention fast and long,
// docs/12-fast-attention.md). Expected values come from plain double-precision loops over the
// whole row (the two-pass softmax) or hand-made numbers, never from the attn:: function the
// reference solution forwards to. Run them with build/default/bin/attn-check 12.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/core/xt.hpp"
#include "attn/ops/online_softmax.hpp"
#include "count_allocations.hpp"  // this binary measures the memory ex12.2 holds
#include "exercises.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Matrix;
using attn::OnlineRow;
using attn::Vector;

constexpr float kInf = std::numeric_limits<float>::infinity();

// A (R, K) matrix with no visible pattern: m(i, j) = amp * sin(a i + b j + phase).
Matrix wiggly(std::size_t R, std::size_t K, double a, double b, double phase, double amp = 1.0) {
  Matrix m(std::array<std::size_t, 2>{R, K});
  for (std::size_t i = 0; i < R; ++i)
    for (std::size_t j = 0; j < K; ++j)
      m(i, j) = static_cast<float>(
          amp * std::sin(a * static_cast<double>(i) + b * static_cast<double>(j) + phase));
  return m;
}

OnlineRow empty_row(std::size_t hs) {
  OnlineRow row{-kInf, 0.0f, Vector(std::array<std::size_t, 1>{hs})};
  row.acc.fill(0.0f);
  return row;
}

Vector vec(const std::vector<float>& x) {
  Vector v(std::array<std::size_t, 1>{x.size()});
  for (std::size_t i = 0; i < x.size(); ++i) v(i) = x[i];
  return v;
}

// Folds the tiles of scores (their values: consecutive rows of `values`) one after the other.
OnlineRow fold(const std::vector<std::vector<float>>& tiles, const Matrix& values) {
  OnlineRow row = empty_row(values.shape()[1]);
  std::size_t first = 0;
  for (const auto& t : tiles) {
    Matrix vals(std::array<std::size_t, 2>{t.size(), values.shape()[1]});
    for (std::size_t j = 0; j < t.size(); ++j)
      for (std::size_t d = 0; d < values.shape()[1]; ++d) vals(j, d) = values(first + j, d);
    ex12::online_softmax_update(row, vec(t), vals);
    first += t.size();
  }
  return row;
}

// The two-pass softmax of the whole row, in double: max, l = sum exp(s - max), softmax(s) v.
struct TwoPass {
  double m, l;
  std::vector<double> out;
};
TwoPass two_pass(const std::vector<std::vector<float>>& tiles, const Matrix& values) {
  std::vector<double> s;
  for (const auto& t : tiles)
    for (float x : t) s.push_back(x);
  TwoPass r{-INFINITY, 0.0, std::vector<double>(values.shape()[1], 0.0)};
  for (double x : s) r.m = std::max(r.m, x);
  for (double x : s) r.l += std::exp(x - r.m);
  for (std::size_t j = 0; j < s.size(); ++j)
    for (std::size_t d = 0; d < r.out.size(); ++d)
      r.out[d] += std::exp(s[j] - r.m) / r.l * static_cast<double>(values(j, d));
  return r;
}

void check_against_two_pass(const std::vector<std::vector<float>>& tiles, const Matrix& values) {
  const OnlineRow row = fold(tiles, values);
  const TwoPass want = two_pass(tiles, values);
  INFO("expected m = the largest score of all tiles, " << want.m);
  CHECK(static_cast<double>(row.m) == want.m);
  INFO("expected l = sum of exp(s - m) over every key seen, " << want.l);
  CHECK(static_cast<double>(row.l) == doctest::Approx(want.l).epsilon(1e-5));
  for (std::size_t d = 0; d < want.out.size(); ++d) {
    INFO("acc / l at feature " << d << " should be the softmax-weighted sum of the values");
    CHECK(static_cast<double>(row.acc(d) / row.l) == doctest::Approx(want.out[d]).epsilon(1e-5));
  }
}

// Causal attention for one head in double: rows [i0, i0 + rows) of softmax(mask(q k^T /
// sqrt(hs))) v.
Matrix causal_by_hand(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t i0,
                      std::size_t rows) {
  const std::size_t hs = q.shape()[1];
  Matrix out(std::array<std::size_t, 2>{rows, hs});
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t t = i0 + r;
    std::vector<double> s(t + 1);
    double m = -INFINITY;
    for (std::size_t j = 0; j <= t; ++j) {
      double dot = 0.0;
      for (std::size_t d = 0; d < hs; ++d)
        dot += static_cast<double>(q(t, d)) * static_cast<double>(k(j, d));
      s[j] = dot / std::sqrt(static_cast<double>(hs));
      m = std::max(m, s[j]);
    }
    double l = 0.0;
    for (double x : s) l += std::exp(x - m);
    for (std::size_t d = 0; d < hs; ++d) {
      double o = 0.0;
      for (std::size_t j = 0; j <= t; ++j)
        o += std::exp(s[j] - m) / l * static_cast<double>(v(j, d));
      out(r, d) = static_cast<float>(o);
    }
  }
  return out;
}

}  // namespace

TEST_SUITE("ex12.1 The online softmax update") {
TEST_CASE("one tile from the empty state gives l and acc of that tile") {
  check_against_two_pass({{0.5f, -1.25f, 2.0f, 0.0f}}, wiggly(4, 3, 0.7, 1.1, 0.2, 2.0));
}

TEST_CASE("a later tile with a larger max rescales the sum and the output so far") {
  check_against_two_pass({{0.5f, -1.0f}, {3.0f, 2.5f, -4.0f}}, wiggly(5, 3, 0.9, 0.4, 1.3, 1.5));
  check_against_two_pass({{-6.0f}, {-2.0f}, {1.0f, 0.5f}, {9.0f}}, wiggly(5, 2, 0.3, 1.7, 0.6));
}

TEST_CASE("a later tile with a smaller max keeps the max seen before") {
  check_against_two_pass({{4.0f, 1.0f}, {-2.0f, 0.5f, -7.0f}}, wiggly(5, 3, 1.1, 0.2, 0.5, 1.5));
  check_against_two_pass({{2.0f}, {2.0f}, {-1.0f, 2.0f}}, wiggly(4, 2, 0.8, 0.6, 0.1));
}

TEST_CASE("a tile of only masked keys changes nothing, even as the first tile") {
  const Matrix v6 = wiggly(6, 2, 0.4, 0.9, 0.3);
  OnlineRow row = empty_row(2);
  Matrix masked_vals(std::array<std::size_t, 2>{2, 2});
  masked_vals.fill(1.0f);
  ex12::online_softmax_update(row, vec({-kInf, -kInf}), masked_vals);
  INFO("after a tile of -inf scores the state must still be empty: m = -inf, l = 0, acc = 0");
  CHECK(row.m == -kInf);
  CHECK(row.l == 0.0f);
  CHECK(row.acc(0) == 0.0f);
  CHECK(row.acc(1) == 0.0f);
  // Masked keys inside a tile weigh nothing either: the same as the 3 visible keys alone.
  const OnlineRow with_mask = fold({{-kInf, -kInf}, {1.0f, 0.25f, 0.5f, -kInf}}, v6);
  Matrix visible(std::array<std::size_t, 2>{3, 2});
  for (std::size_t j = 0; j < 3; ++j)
    for (std::size_t d = 0; d < 2; ++d) visible(j, d) = v6(j + 2, d);
  const TwoPass want = two_pass({{1.0f, 0.25f, 0.5f}}, visible);
  for (std::size_t d = 0; d < 2; ++d) {
    INFO("a masked key (-inf) must get weight 0: feature " << d);
    CHECK(static_cast<double>(with_mask.acc(d) / with_mask.l) ==
          doctest::Approx(want.out[d]).epsilon(1e-5));
  }
}

TEST_CASE("huge scores do not overflow") {
  check_against_two_pass({{1000.0f, 999.0f}, {1001.0f}}, wiggly(3, 2, 0.5, 0.5, 0.5));
}

TEST_CASE("values of the wrong shape are rejected") {
  OnlineRow row = empty_row(3);
  CHECK_THROWS_AS(ex12::online_softmax_update(row, vec({1.0f, 2.0f}), wiggly(3, 3, 1, 1, 0)),
                  std::invalid_argument);
  CHECK_THROWS_AS(ex12::online_softmax_update(row, vec({1.0f, 2.0f}), wiggly(2, 4, 1, 1, 0)),
                  std::invalid_argument);
}
}  // TEST_SUITE

TEST_SUITE("ex12.2 One tile of the forward") {
TEST_CASE("the first query sees only itself: its output is its own value") {
  const Matrix q = wiggly(6, 3, 0.5, 1.2, 0.1, 2.0), k = wiggly(6, 3, 0.8, 0.3, 0.7, 2.0),
               v = wiggly(6, 3, 1.3, 0.6, 0.4);
  const Matrix out = ex12::attention_tile(q, k, v, 0, 4);
  REQUIRE(out.shape()[0] == 4);
  for (std::size_t d = 0; d < 3; ++d) CHECK(out(0, d) == doctest::Approx(v(0, d)));
}

TEST_CASE("every tile equals causal attention computed in double") {
  for (const std::size_t T : {1, 7, 20}) {
    for (const std::size_t hs : {1, 5}) {
      const Matrix q = wiggly(T, hs, 0.5, 1.2, 0.1, 2.0), k = wiggly(T, hs, 0.8, 0.3, 0.7, 2.0),
                   v = wiggly(T, hs, 1.3, 0.6, 0.4);
      for (const std::size_t tile : {1, 3, 8, 64}) {
        for (std::size_t i0 = 0; i0 < T; i0 += tile) {
          INFO("T " << T << ", hs " << hs << ", tile " << tile << ", rows from " << i0);
          const std::size_t rows = std::min(tile, T - i0);
          CHECK_TENSOR_NEAR(ex12::attention_tile(q, k, v, i0, tile),
                            causal_by_hand(q, k, v, i0, rows), 1e-5, 1e-4);
        }
      }
    }
  }
}

TEST_CASE("a tile starting inside the sequence returns its own rows") {
  const Matrix q = wiggly(10, 4, 0.5, 1.2, 0.1, 2.0), k = wiggly(10, 4, 0.8, 0.3, 0.7, 2.0),
               v = wiggly(10, 4, 1.3, 0.6, 0.4);
  INFO("rows 8 and 9 (the last tile of 4 starting at 8 is cut to 2 rows)");
  CHECK_TENSOR_NEAR(ex12::attention_tile(q, k, v, 8, 4), causal_by_hand(q, k, v, 8, 2), 1e-5, 1e-4);
}

TEST_CASE("key tiles after the query tile are never read: they are all masked") {
  // Keys j >= i0 + tile are after every query of the tile: no weight, and no work either. Here
  // they are NaN; a loop over every key tile (or every key) reads them, and the NaN values come
  // through the update (0 * NaN).
  const std::size_t T = 24, hs = 3, tile = 4;
  const Matrix q = wiggly(T, hs, 0.5, 1.2, 0.1, 2.0), k = wiggly(T, hs, 0.8, 0.3, 0.7, 2.0),
               v = wiggly(T, hs, 1.3, 0.6, 0.4);
  for (std::size_t i0 = 0; i0 + tile < T; i0 += tile) {
    Matrix k_cut = k, v_cut = v;
    for (std::size_t j = i0 + tile; j < T; ++j)
      for (std::size_t d = 0; d < hs; ++d) k_cut(j, d) = v_cut(j, d) = std::nanf("");
    INFO("rows " << i0 << " to " << i0 + tile - 1 << " with keys " << i0 + tile << " to " << T - 1
                 << " set to NaN: a query of this tile never reads them; visit only the "
                 << "key tiles j0 <= t, the tiles after the diagonal are entirely masked");
    CHECK_TENSOR_NEAR(ex12::attention_tile(q, k_cut, v_cut, i0, tile),
                      causal_by_hand(q, k, v, i0, tile), 1e-5, 1e-4);
  }
}

TEST_CASE("the memory held stays a few tiles, never a row of scores or the (T, T) matrix") {
  // Measured, not computed: every operator new of the call counted (count_allocations.hpp), the
  // most bytes held at once. A tile needs its scores (tile,), its values (tile, hs), the row
  // state (hs,) and the output (rows, hs); the allowance below is four times that, in doubles.
  // The last tile of T = 1024 sees every key: a row of its scores alone is 4 KiB, the (T, T)
  // matrix 4 MiB.
  const std::size_t T = 1024, hs = 4, tile = 8, i0 = T - tile;
  const Matrix q = wiggly(T, hs, 0.5, 1.2, 0.1, 2.0), k = wiggly(T, hs, 0.8, 0.3, 0.7, 2.0),
               v = wiggly(T, hs, 1.3, 0.6, 0.4);
  const long tile_bytes = static_cast<long>((tile + tile * hs + hs + tile * hs) * sizeof(double));
  const long allowed = 4 * tile_bytes;
  attn_test::reset_peak_bytes();
  const long before = attn_test::bytes_in_use();
  const Matrix out = ex12::attention_tile(q, k, v, i0, tile);
  const long peak = attn_test::peak_bytes() - before;
  INFO("attention_tile(T " << T << ", hs " << hs << ", tile " << tile << ") held up to " << peak
                           << " bytes at once; a tile's scores, values, row state and output "
                           << "take about " << tile_bytes << ", the limit is " << allowed
                           << ". A row of T scores is " << T * sizeof(float)
                           << " bytes, the (T, T) matrix " << T * T * sizeof(float)
                           << ": fold the keys tile by tile, keeping only the row state");
  CHECK(peak <= allowed);
  CHECK_TENSOR_NEAR(out, causal_by_hand(q, k, v, i0, tile), 1e-5, 1e-4);
}

TEST_CASE("a start past the end, a tile of 0 and shapes that differ are rejected") {
  const Matrix a = wiggly(4, 2, 1, 1, 0), b = wiggly(4, 3, 1, 1, 0);
  CHECK_THROWS_AS(ex12::attention_tile(a, a, a, 4, 2), std::invalid_argument);
  CHECK_THROWS_AS(ex12::attention_tile(a, a, a, 0, 0), std::invalid_argument);
  CHECK_THROWS_AS(ex12::attention_tile(a, b, a, 0, 2), std::invalid_argument);
}
}  // TEST_SUITE

TEST_SUITE("ex12.3 The row's log-sum-exp") {
// The state of a row that saw these scores, computed in double and rounded, as ex12.1 leaves it.
OnlineRow row_of(const std::vector<double>& s) {
  double m = -INFINITY, l = 0.0;
  for (double x : s) m = std::max(m, x);
  for (double x : s) l += std::exp(x - m);
  OnlineRow row = empty_row(1);
  row.m = static_cast<float>(m);
  row.l = static_cast<float>(l);
  return row;
}
double lse_by_hand(const std::vector<double>& s) {
  double m = -INFINITY, l = 0.0;
  for (double x : s) m = std::max(m, x);
  for (double x : s) l += std::exp(x - m);
  return m + std::log(l);
}

TEST_CASE("a few scores: lse = log sum exp(s), and the weights exp(s - lse) sum to 1" *
          doctest::description("hint 1")) {
  const std::vector<double> s = {0.5, -1.25, 2.0, 0.0, 1.5};
  const float got = ex12::row_lse(row_of(s));
  CHECK(static_cast<double>(got) == doctest::Approx(lse_by_hand(s)).epsilon(1e-6));
  double total = 0.0;
  for (double x : s) total += std::exp(x - static_cast<double>(got));
  INFO("the weights exp(s_j - lse) of the row must add up to 1");
  CHECK(total == doctest::Approx(1.0).epsilon(1e-5));
}

TEST_CASE("scores near 1000: lse near 1000, not inf" * doctest::description("hint 2")) {
  const std::vector<double> s = {1000.0, 999.0, 1001.5, 998.25};
  const float got = ex12::row_lse(row_of(s));
  INFO("exp(1000) overflows float and double: keep the max out of the exp");
  CHECK(std::isfinite(got));
  CHECK(static_cast<double>(got) == doctest::Approx(lse_by_hand(s)).epsilon(1e-6));
}

TEST_CASE("one key: lse is its score; no key at all: -inf, not NaN" *
          doctest::description("hint 2")) {
  CHECK(static_cast<double>(ex12::row_lse(row_of({-3.5}))) == doctest::Approx(-3.5));
  const float empty = ex12::row_lse(empty_row(2));
  INFO("a row that saw no key (m = -inf, l = 0) has lse = log 0 = -inf");
  CHECK(std::isinf(empty));
  CHECK(empty < 0.0f);
}
}  // TEST_SUITE

TEST_SUITE("ex12.4 One tile of the flash backward") {
// The forward's saved numbers per query, in double from the whole row: lse_t and
// d_t = dout_t . out_t (rows [first, first + count); the others stay 0).
struct Saved {
  Vector lse, d;
};
Saved saved_by_hand(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& dout,
                    std::size_t first, std::size_t count) {
  const std::size_t T = q.shape()[0], hs = q.shape()[1];
  Saved r{xt::zeros<float>({T}), xt::zeros<float>({T})};
  for (std::size_t t = first; t < first + count; ++t) {
    std::vector<double> s(t + 1);
    double m = -INFINITY, l = 0.0;
    for (std::size_t j = 0; j <= t; ++j) {
      double dot = 0.0;
      for (std::size_t e = 0; e < hs; ++e)
        dot += static_cast<double>(q(t, e)) * static_cast<double>(k(j, e));
      s[j] = dot / std::sqrt(static_cast<double>(hs));
      m = std::max(m, s[j]);
    }
    for (double x : s) l += std::exp(x - m);
    double dsum = 0.0;
    for (std::size_t e = 0; e < hs; ++e) {
      double o = 0.0;
      for (std::size_t j = 0; j <= t; ++j)
        o += std::exp(s[j] - m) / l * static_cast<double>(v(j, e));
      dsum += o * static_cast<double>(dout(t, e));
    }
    r.lse(t) = static_cast<float>(m + std::log(l));
    r.d(t) = static_cast<float>(dsum);
  }
  return r;
}
Saved saved_by_hand(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& dout) {
  return saved_by_hand(q, k, v, dout, 0, q.shape()[0]);
}

// The mistakes the tests name, each computed here on purpose to recognise it.
enum class Slip {
  none,
  fresh_softmax,    // weights renormalised over the tile's keys (its own max and sum)
  no_scale,         // dq and dk without the 1/sqrt(hs) of the scores
  d_of_the_tile,    // d_t summed over this tile's keys only, sum_j P_tj dP_tj
  d_of_the_key,     // d indexed by the key j instead of the query t
  diagonal_masked,  // query t sees keys j < t only
  one_too_many,     // query t sees keys j <= t + 1
};
const char* slip_text(Slip s) {
  switch (s) {
    case Slip::fresh_softmax:
      return "the weights were recomputed with this tile's own max and sum (a softmax over the "
             "tile's keys): a weight of the backward is the forward's, exp(s - lse) with the "
             "saved lse of the whole row";
    case Slip::no_scale:
      return "dq and dk lack the 1/sqrt(hs) of the scores s = q . k / sqrt(hs): they are "
             "sqrt(hs) times too large";
    case Slip::d_of_the_tile:
      return "d_t was summed over this tile's keys (sum_j P_tj dP_tj): use the given d_t = "
             "dout_t . out_t, which covers every key of the row";
    case Slip::d_of_the_key:
      return "d was read at the key's index j: d belongs to the query, d_t";
    case Slip::diagonal_masked:
      return "the diagonal was masked: query t sees key t too (j <= t)";
    case Slip::one_too_many:
      return "the mask is one off: query t saw key t + 1 (it sees j <= t only)";
    case Slip::none:
      break;
  }
  return "";
}

// The pair of tiles in double, optionally with one slip.
ex12::TileGrads tile_by_hand(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& dout,
                             const Saved& saved, std::size_t i0, std::size_t j0, std::size_t tile,
                             Slip slip = Slip::none) {
  const std::size_t T = q.shape()[0], hs = q.shape()[1];
  const std::size_t rows = std::min(tile, T - i0), cols = std::min(tile, T - j0);
  const double scale = slip == Slip::no_scale ? 1.0 : 1.0 / std::sqrt(static_cast<double>(hs));
  const double score_scale = 1.0 / std::sqrt(static_cast<double>(hs));
  std::vector<double> dq(rows * hs, 0.0), dk(cols * hs, 0.0), dv(cols * hs, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t t = i0 + r;
    const auto sees = [&](std::size_t j) {
      if (slip == Slip::diagonal_masked) return j < t;
      if (slip == Slip::one_too_many) return j <= t + 1;
      return j <= t;
    };
    std::vector<double> s(cols, 0.0), p(cols, 0.0), dp(cols, 0.0);
    double m = -INFINITY;
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t j = j0 + c;
      for (std::size_t e = 0; e < hs; ++e) {
        s[c] += static_cast<double>(q(t, e)) * static_cast<double>(k(j, e)) * score_scale;
        dp[c] += static_cast<double>(dout(t, e)) * static_cast<double>(v(j, e));
      }
      if (sees(j)) m = std::max(m, s[c]);
    }
    double l = 0.0;
    for (std::size_t c = 0; c < cols; ++c)
      if (sees(j0 + c)) l += std::exp(s[c] - m);
    double d_tile = 0.0;
    for (std::size_t c = 0; c < cols; ++c) {
      if (!sees(j0 + c)) continue;
      p[c] = slip == Slip::fresh_softmax ? std::exp(s[c] - m) / l
                                         : std::exp(s[c] - static_cast<double>(saved.lse(t)));
      d_tile += p[c] * dp[c];
    }
    for (std::size_t c = 0; c < cols; ++c) {
      if (!sees(j0 + c) || j0 + c >= T) continue;
      const double dt = slip == Slip::d_of_the_tile  ? d_tile
                        : slip == Slip::d_of_the_key ? static_cast<double>(saved.d(j0 + c))
                                                     : static_cast<double>(saved.d(t));
      const double ds = p[c] * (dp[c] - dt) * scale;
      for (std::size_t e = 0; e < hs; ++e) {
        dv[c * hs + e] += p[c] * static_cast<double>(dout(t, e));
        dq[r * hs + e] += ds * static_cast<double>(k(j0 + c, e));
        dk[c * hs + e] += ds * static_cast<double>(q(t, e));
      }
    }
  }
  ex12::TileGrads g{Matrix(std::array<std::size_t, 2>{rows, hs}),
                    Matrix(std::array<std::size_t, 2>{cols, hs}),
                    Matrix(std::array<std::size_t, 2>{cols, hs})};
  for (std::size_t i = 0; i < rows * hs; ++i) g.dq.data()[i] = static_cast<float>(dq[i]);
  for (std::size_t i = 0; i < cols * hs; ++i) {
    g.dk.data()[i] = static_cast<float>(dk[i]);
    g.dv.data()[i] = static_cast<float>(dv[i]);
  }
  return g;
}

bool near(const Matrix& got, const Matrix& want) {
  return attn::testing::tensor_mismatch(got, want, 1e-5, 1e-4).empty();
}
bool same_grads(const ex12::TileGrads& a, const ex12::TileGrads& b) {
  return near(a.dq, b.dq) && near(a.dk, b.dk) && near(a.dv, b.dv);
}

// The learner's pair of tiles against the one by hand; when it is wrong and matches one of the
// slips, the failure names it.
void check_pair(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& dout,
                const Saved& saved, std::size_t i0, std::size_t j0, std::size_t tile,
                std::initializer_list<Slip> slips) {
  const ex12::TileGrads got =
      ex12::flash_backward_tile(q, k, v, dout, saved.lse, saved.d, i0, j0, tile);
  const ex12::TileGrads want = tile_by_hand(q, k, v, dout, saved, i0, j0, tile);
  INFO("T " << q.shape()[0] << ", hs " << q.shape()[1] << ", tile " << tile << ": queries from "
            << i0 << " against keys from " << j0);
  if (!same_grads(got, want)) {
    for (const Slip s : slips) {
      if (same_grads(got, tile_by_hand(q, k, v, dout, saved, i0, j0, tile, s)))
        FAIL_CHECK(std::string(slip_text(s)));
    }
  }
  CHECK_TENSOR_NEAR(got.dq, want.dq, 1e-5, 1e-4);
  CHECK_TENSOR_NEAR(got.dk, want.dk, 1e-5, 1e-4);
  CHECK_TENSOR_NEAR(got.dv, want.dv, 1e-5, 1e-4);
}

struct Head {
  Matrix q, k, v, dout;
};
Head head(std::size_t T, std::size_t hs) {
  return {wiggly(T, hs, 0.5, 1.2, 0.1, 2.0), wiggly(T, hs, 0.8, 0.3, 0.7, 2.0),
          wiggly(T, hs, 1.3, 0.6, 0.4), wiggly(T, hs, 0.9, 1.7, 0.2)};
}
constexpr std::initializer_list<Slip> kEverySlip = {Slip::fresh_softmax,   Slip::no_scale,
                                                    Slip::d_of_the_tile,   Slip::d_of_the_key,
                                                    Slip::diagonal_masked, Slip::one_too_many};

TEST_CASE("one tile holds the whole head: its contributions are the whole backward" *
          doctest::description("hint 1")) {
  const Head h = head(5, 4);
  check_pair(h.q, h.k, h.v, h.dout, saved_by_hand(h.q, h.k, h.v, h.dout), 0, 0, 8, kEverySlip);
}

TEST_CASE("a tile of keys before the queries: weights from the saved lse, not the tile's own" *
          doctest::description("hint 1")) {
  const Head h = head(8, 4);
  const Saved saved = saved_by_hand(h.q, h.k, h.v, h.dout);
  check_pair(h.q, h.k, h.v, h.dout, saved, 4, 0, 4, kEverySlip);
  // The lse it is given decides every weight: lse + ln 2 halves them all, and with them dv.
  Saved shifted = saved;
  for (std::size_t t = 0; t < 8; ++t) shifted.lse(t) += static_cast<float>(std::log(2.0));
  const ex12::TileGrads a =
      ex12::flash_backward_tile(h.q, h.k, h.v, h.dout, saved.lse, saved.d, 4, 0, 4);
  const ex12::TileGrads b =
      ex12::flash_backward_tile(h.q, h.k, h.v, h.dout, shifted.lse, saved.d, 4, 0, 4);
  INFO("given lse + ln 2, every weight exp(s - lse) halves, so dv must halve; yours "
       << std::string(near(a.dv, b.dv) ? "did not change: it does not use the lse it is given"
                                       : "changed otherwise"));
  CHECK_TENSOR_NEAR(b.dv, Matrix(0.5f * a.dv), 1e-6, 1e-5);
}

TEST_CASE("the diagonal tile: query t sees keys j <= t, its own included" *
          doctest::description("hint 2")) {
  const Head h = head(8, 4);
  const Saved saved = saved_by_hand(h.q, h.k, h.v, h.dout);
  check_pair(h.q, h.k, h.v, h.dout, saved, 4, 4, 4, kEverySlip);
  check_pair(h.q, h.k, h.v, h.dout, saved, 0, 0, 4, kEverySlip);
}

TEST_CASE("d is the query's, dout_t . out_t over its whole row, and dq, dk carry 1/sqrt(hs)" *
          doctest::description("hint 2")) {
  const Head h = head(12, 9);
  const Saved saved = saved_by_hand(h.q, h.k, h.v, h.dout);
  check_pair(h.q, h.k, h.v, h.dout, saved, 8, 4, 4, kEverySlip);
  check_pair(h.q, h.k, h.v, h.dout, saved, 6, 0, 3, kEverySlip);
}

TEST_CASE("a tile of keys after the queries adds nothing: zeros of the right shapes" *
          doctest::description("hint 1")) {
  const Head h = head(10, 3);
  const Saved saved = saved_by_hand(h.q, h.k, h.v, h.dout);
  const ex12::TileGrads g =
      ex12::flash_backward_tile(h.q, h.k, h.v, h.dout, saved.lse, saved.d, 0, 4, 4);
  CHECK_TENSOR_NEAR(g.dq, Matrix(xt::zeros<float>({4, 3})), 0.0, 0.0);
  CHECK_TENSOR_NEAR(g.dk, Matrix(xt::zeros<float>({4, 3})), 0.0, 0.0);
  CHECK_TENSOR_NEAR(g.dv, Matrix(xt::zeros<float>({4, 3})), 0.0, 0.0);
  INFO("the last key tile is cut to T - j0 = 2 keys");
  const ex12::TileGrads cut =
      ex12::flash_backward_tile(h.q, h.k, h.v, h.dout, saved.lse, saved.d, 8, 8, 4);
  CHECK(cut.dq.shape() == (std::array<std::size_t, 2>{2, 3}));
  CHECK(cut.dk.shape() == (std::array<std::size_t, 2>{2, 3}));
}

// The whole backward in double through the (T, T) weights: dv = P^T dout, dP = dout v^T,
// dS = P (dP - rowsum(P dP)), dq = dS k / sqrt(hs), dk = dS^T q / sqrt(hs).
ex12::TileGrads full_backward(const Matrix& q, const Matrix& k, const Matrix& v,
                              const Matrix& dout) {
  const std::size_t T = q.shape()[0], hs = q.shape()[1];
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  std::vector<double> dq(T * hs, 0.0), dk(T * hs, 0.0), dv(T * hs, 0.0);
  for (std::size_t t = 0; t < T; ++t) {
    std::vector<double> p(t + 1), dp(t + 1, 0.0);
    double m = -INFINITY, l = 0.0, row = 0.0;
    for (std::size_t j = 0; j <= t; ++j) {
      double s = 0.0;
      for (std::size_t e = 0; e < hs; ++e) {
        s += static_cast<double>(q(t, e)) * static_cast<double>(k(j, e));
        dp[j] += static_cast<double>(dout(t, e)) * static_cast<double>(v(j, e));
      }
      p[j] = s * scale;
      m = std::max(m, p[j]);
    }
    for (std::size_t j = 0; j <= t; ++j) l += std::exp(p[j] - m);
    for (std::size_t j = 0; j <= t; ++j) {
      p[j] = std::exp(p[j] - m) / l;
      row += p[j] * dp[j];
    }
    for (std::size_t j = 0; j <= t; ++j) {
      const double ds = p[j] * (dp[j] - row) * scale;
      for (std::size_t e = 0; e < hs; ++e) {
        dv[j * hs + e] += p[j] * static_cast<double>(dout(t, e));
        dq[t * hs + e] += ds * static_cast<double>(k(j, e));
        dk[j * hs + e] += ds * static_cast<double>(q(t, e));
      }
    }
  }
  ex12::TileGrads g{Matrix(std::array<std::size_t, 2>{T, hs}),
                    Matrix(std::array<std::size_t, 2>{T, hs}),
                    Matrix(std::array<std::size_t, 2>{T, hs})};
  for (std::size_t i = 0; i < T * hs; ++i) {
    g.dq.data()[i] = static_cast<float>(dq[i]);
    g.dk.data()[i] = static_cast<float>(dk[i]);
    g.dv.data()[i] = static_cast<float>(dv[i]);
  }
  return g;
}

TEST_CASE("summed over every pair of tiles: the gradients of causal attention" *
          doctest::description("hint 3")) {
  for (const std::size_t T : {1, 7, 20}) {
    for (const std::size_t hs : {1, 5}) {
      const Head h = head(T, hs);
      const Saved saved = saved_by_hand(h.q, h.k, h.v, h.dout);
      const ex12::TileGrads want = full_backward(h.q, h.k, h.v, h.dout);
      for (const std::size_t tile : {1, 3, 8}) {
        Matrix dq = xt::zeros<float>({T, hs}), dk = xt::zeros<float>({T, hs}),
               dv = xt::zeros<float>({T, hs});
        for (std::size_t i0 = 0; i0 < T; i0 += tile) {
          for (std::size_t j0 = 0; j0 < T; j0 += tile) {
            const ex12::TileGrads g =
                ex12::flash_backward_tile(h.q, h.k, h.v, h.dout, saved.lse, saved.d, i0, j0, tile);
            REQUIRE(g.dq.shape() == (std::array<std::size_t, 2>{std::min(tile, T - i0), hs}));
            REQUIRE(g.dk.shape() == (std::array<std::size_t, 2>{std::min(tile, T - j0), hs}));
            REQUIRE(g.dv.shape() == g.dk.shape());
            for (std::size_t r = 0; r < g.dq.shape()[0]; ++r)
              for (std::size_t e = 0; e < hs; ++e) dq(i0 + r, e) += g.dq(r, e);
            for (std::size_t c = 0; c < g.dk.shape()[0]; ++c)
              for (std::size_t e = 0; e < hs; ++e) {
                dk(j0 + c, e) += g.dk(c, e);
                dv(j0 + c, e) += g.dv(c, e);
              }
          }
        }
        INFO("T " << T << ", hs " << hs << ", tile " << tile
                  << ": every tile pair summed, against the backward through the (T, T) weights");
        CHECK_TENSOR_NEAR(dq, want.dq, 1e-5, 1e-4);
        CHECK_TENSOR_NEAR(dk, want.dk, 1e-5, 1e-4);
        CHECK_TENSOR_NEAR(dv, want.dv, 1e-5, 1e-4);
      }
    }
  }
}

TEST_CASE("only the two tiles are read" * doctest::description("hint 2")) {
  // Every row outside the query tile (q, dout, lse, d) and the key tile (k, v) set to NaN.
  const std::size_t T = 16, hs = 3, tile = 4, i0 = 8, j0 = 4;
  const Head h = head(T, hs);
  const Saved saved = saved_by_hand(h.q, h.k, h.v, h.dout);
  Head cut = h;
  Saved cut_saved = saved;
  const float nan = std::nanf("");
  for (std::size_t t = 0; t < T; ++t) {
    if (t < i0 || t >= i0 + tile) {
      cut_saved.lse(t) = cut_saved.d(t) = nan;
      for (std::size_t e = 0; e < hs; ++e) cut.q(t, e) = cut.dout(t, e) = nan;
    }
    if (t < j0 || t >= j0 + tile)
      for (std::size_t e = 0; e < hs; ++e) cut.k(t, e) = cut.v(t, e) = nan;
  }
  const ex12::TileGrads got = ex12::flash_backward_tile(cut.q, cut.k, cut.v, cut.dout,
                                                        cut_saved.lse, cut_saved.d, i0, j0, tile);
  const ex12::TileGrads want = tile_by_hand(h.q, h.k, h.v, h.dout, saved, i0, j0, tile);
  INFO(
      "queries 8 to 11 against keys 4 to 7, every other row NaN: a tile reads its own rows of "
      "q, dout, lse, d (queries) and of k, v (keys), nothing else; d and lse are the query's");
  CHECK_TENSOR_NEAR(got.dq, want.dq, 1e-5, 1e-4);
  CHECK_TENSOR_NEAR(got.dk, want.dk, 1e-5, 1e-4);
  CHECK_TENSOR_NEAR(got.dv, want.dv, 1e-5, 1e-4);
}

TEST_CASE("the memory held stays a few tiles, never a row of scores or the (T, T) matrix" *
          doctest::description("hint 3")) {
  // Measured, as for ex12.2: the most bytes held at once during the call, every operator new
  // counted (count_allocations.hpp). The pair needs its result (rows + 2 cols, hs), and may keep
  // a tile of scores (tile, tile) and a few rows of tile; the allowance is four times that, in
  // doubles. A row of T = 2048 scores is 8 KiB, the (T, T) matrix 16 MiB.
  const std::size_t T = 2048, hs = 4, tile = 8, i0 = T - tile, j0 = 512;
  const Head h = head(T, hs);
  const Saved saved = saved_by_hand(h.q, h.k, h.v, h.dout, i0, tile);
  const long tile_bytes =
      static_cast<long>((3 * tile * hs + tile * tile + 2 * tile) * sizeof(double));
  const long allowed = 4 * tile_bytes;
  attn_test::reset_peak_bytes();
  const long before = attn_test::bytes_in_use();
  const ex12::TileGrads got =
      ex12::flash_backward_tile(h.q, h.k, h.v, h.dout, saved.lse, saved.d, i0, j0, tile);
  const long peak = attn_test::peak_bytes() - before;
  INFO("flash_backward_tile(T " << T << ", hs " << hs << ", tile " << tile << ") held up to "
                                << peak << " bytes at once; the limit is " << allowed
                                << ". A row of T scores is " << T * sizeof(float)
                                << " bytes, the (T, T) matrix " << T * T * sizeof(float)
                                << ": recompute the pair's weights from lse, tile by tile");
  CHECK(peak <= allowed);
  const ex12::TileGrads want = tile_by_hand(h.q, h.k, h.v, h.dout, saved, i0, j0, tile);
  CHECK(same_grads(got, want));
}

TEST_CASE("a tile of 0, a start past the end and shapes that disagree are rejected" *
          doctest::description("hint 1")) {
  const Head h = head(6, 2);
  const Saved s = saved_by_hand(h.q, h.k, h.v, h.dout);
  CHECK_THROWS_AS(ex12::flash_backward_tile(h.q, h.k, h.v, h.dout, s.lse, s.d, 0, 0, 0),
                  std::invalid_argument);
  CHECK_THROWS_AS(ex12::flash_backward_tile(h.q, h.k, h.v, h.dout, s.lse, s.d, 6, 0, 2),
                  std::invalid_argument);
  CHECK_THROWS_AS(ex12::flash_backward_tile(h.q, h.k, h.v, h.dout, s.lse, s.d, 0, 6, 2),
                  std::invalid_argument);
  const Matrix wide = wiggly(6, 3, 1, 1, 0);
  CHECK_THROWS_AS(ex12::flash_backward_tile(h.q, h.k, h.v, wide, s.lse, s.d, 0, 0, 2),
                  std::invalid_argument);
  CHECK_THROWS_AS(ex12::flash_backward_tile(h.q, wide, h.v, h.dout, s.lse, s.d, 0, 0, 2),
                  std::invalid_argument);
  CHECK_THROWS_AS(ex12::flash_backward_tile(h.q, h.k, h.v, h.dout, vec({1, 2, 3}), s.d, 0, 0, 2),
                  std::invalid_argument);
}
}  // TEST_SUITE
