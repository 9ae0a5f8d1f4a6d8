// Tests for attn/ops/attention.hpp, the reference scaled dot-product attention and multi-head
// attention (chapters 04-05, backward chapter 08; the fast kernels are tested against it in
// test_fast_layernorm_attention.cpp). The references are written out here in double precision
// with plain loops (no attn:: attention code): attention per (b, h), and multi-head attention
// straight from its definition. On top: the three multi-head variants against each other, the
// shape walk of the multi-head checklist, causality, the masked zeros, extreme scores, and every
// error message.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attn/ops/attention.hpp"
#include "attn/ops/linear.hpp"
#include "attn/core/random.hpp"
#include "attn/core/threads.hpp"
#include "attn/train/gradcheck.hpp"
#include "gradcheck_helpers.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Tensor;

struct Reference {
  Tensor<4> out;      // (B, H, T, hv)
  Tensor<4> weights;  // (B, H, T, S)
};

// softmax(q k^T / sqrt(hs) + mask) v for every (b, h), in double, from the formula.
Reference reference_attention(const Tensor<4>& q, const Tensor<4>& k, const Tensor<4>& v,
                              bool causal) {
  const std::size_t B = q.shape()[0], H = q.shape()[1], T = q.shape()[2], hs = q.shape()[3];
  const std::size_t S = k.shape()[2], hv = v.shape()[3];
  Reference r{Tensor<4>(Tensor<4>::shape_type{B, H, T, hv}),
              Tensor<4>(Tensor<4>::shape_type{B, H, T, S})};
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  std::vector<double> w(S);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t) {
        double m = -std::numeric_limits<double>::infinity();
        for (std::size_t s = 0; s < S; ++s) {
          double dot = 0.0;
          for (std::size_t d = 0; d < hs; ++d)
            dot += static_cast<double>(q(b, h, t, d)) * static_cast<double>(k(b, h, s, d));
          w[s] = dot * scale;
          if (!causal || s <= t) m = std::max(m, w[s]);
        }
        double sum = 0.0;
        for (std::size_t s = 0; s < S; ++s) {
          w[s] = (!causal || s <= t) ? std::exp(w[s] - m) : 0.0;
          sum += w[s];
        }
        for (std::size_t s = 0; s < S; ++s) r.weights(b, h, t, s) = static_cast<float>(w[s] / sum);
        for (std::size_t d = 0; d < hv; ++d) {
          double acc = 0.0;
          for (std::size_t s = 0; s < S; ++s)
            acc += w[s] / sum * static_cast<double>(v(b, h, s, d));
          r.out(b, h, t, d) = static_cast<float>(acc);
        }
      }
  return r;
}

// x (B, T, C) @ w (C, C) in double, kept as double.
std::vector<double> project(const Tensor<3>& x, const attn::Matrix& w) {
  const std::size_t rows = x.shape()[0] * x.shape()[1], C = x.shape()[2], N = w.shape()[1];
  std::vector<double> y(rows * N, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < N; ++j)
      for (std::size_t c = 0; c < C; ++c)
        y[r * N + j] += static_cast<double>(x.data()[r * C + c]) * static_cast<double>(w(c, j));
  return y;
}

struct MhaReference {
  Tensor<3> out;      // (B, T, C)
  Tensor<4> weights;  // (B, H, T, S)
};

// Multi-head attention from its definition, in double: q = x w_q, k = y w_k, v = y w_v; head h
// uses columns [h*hs, (h+1)*hs); head outputs side by side; then @ w_o. Self-attention: y = x.
MhaReference reference_mha(const Tensor<3>& x, const Tensor<3>& y, const attn::MhaWeights& w,
                           std::size_t H, bool causal) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2], S = y.shape()[1];
  const std::size_t hs = C / H;
  const std::vector<double> q = project(x, w.w_q), k = project(y, w.w_k), v = project(y, w.w_v);
  std::vector<double> merged(B * T * C, 0.0);
  MhaReference r{Tensor<3>(Tensor<3>::shape_type{B, T, C}),
                 Tensor<4>(Tensor<4>::shape_type{B, H, T, S})};
  std::vector<double> p(S);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t) {
        double m = -std::numeric_limits<double>::infinity();
        for (std::size_t s = 0; s < S; ++s) {
          double dot = 0.0;
          for (std::size_t d = 0; d < hs; ++d)
            dot += q[(b * T + t) * C + h * hs + d] * k[(b * S + s) * C + h * hs + d];
          p[s] = dot / std::sqrt(static_cast<double>(hs));
          if (!causal || s <= t) m = std::max(m, p[s]);
        }
        double sum = 0.0;
        for (std::size_t s = 0; s < S; ++s) {
          p[s] = (!causal || s <= t) ? std::exp(p[s] - m) : 0.0;
          sum += p[s];
        }
        for (std::size_t s = 0; s < S; ++s) {
          p[s] /= sum;
          r.weights(b, h, t, s) = static_cast<float>(p[s]);
        }
        for (std::size_t d = 0; d < hs; ++d)
          for (std::size_t s = 0; s < S; ++s)
            merged[(b * T + t) * C + h * hs + d] += p[s] * v[(b * S + s) * C + h * hs + d];
      }
  for (std::size_t row = 0; row < B * T; ++row)
    for (std::size_t j = 0; j < C; ++j) {
      double acc = 0.0;
      for (std::size_t c = 0; c < C; ++c)
        acc += merged[row * C + c] * static_cast<double>(w.w_o(c, j));
      r.out.data()[row * C + j] = static_cast<float>(acc);
    }
  return r;
}

template <class A, class B>
double max_abs_diff(const A& a, const B& b) {
  REQUIRE(a.shape() == b.shape());
  double m = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::abs(static_cast<double>(a.data()[i]) - static_cast<double>(b.data()[i])));
  return m;
}

// The multi-head variants do the same arithmetic in GEMMs of different widths (C, 3C, hs).
// OpenBLAS rounds the edge tiles of a product differently from its inner tiles (measured: the
// last 8 columns of a 64-wide product differ by 1 ulp from the same columns inside a 192-wide
// one), so "equal" means equal to a few float ulps: max |a - b| <= 1e-6 * max(1, max |b|).
template <class A, class B>
void check_same_to_rounding(const A& a, const B& b) {
  double scale = 1.0;
  for (std::size_t i = 0; i < b.size(); ++i)
    scale = std::max(scale, std::abs(static_cast<double>(b.data()[i])));
  const double diff = max_abs_diff(a, b);
  CHECK_MESSAGE(diff <= 1e-6 * scale, "max |diff| = " << diff << " for values up to " << scale);
}

// Weights scaled so q and k have entries of about unit size: attention is neither uniform nor
// one-hot, so the softmax is really tested.
attn::MhaWeights test_weights(attn::Rng& rng, std::size_t C) {
  return attn::mha_init(rng, C, 1.5f / std::sqrt(static_cast<float>(C)));
}

struct Dims4 {
  std::size_t B, H, T, hs;
};
struct DimsMha {
  std::size_t B, T, C, H;
};

const Tensor<4> kEmpty4(Tensor<4>::shape_type{0, 0, 0, 0});

}  // namespace

TEST_SUITE("attention") {

// ---------------------------------------------------------------------------------------------
// scaled_dot_product_attention
// ---------------------------------------------------------------------------------------------

TEST_CASE("attention matches a double-precision reference, causal and not") {
  attn::Rng rng(11);
  // T = 1, hs = 1, H = 1, odd sizes, one block of queries exactly (64), one more (65), and
  // several blocks with a partial last one (130).
  for (const Dims4 d :
       {Dims4{1, 1, 1, 1}, Dims4{2, 3, 7, 5}, Dims4{1, 1, 7, 1}, Dims4{2, 1, 9, 4},
        Dims4{1, 2, 1, 8}, Dims4{1, 1, 64, 8}, Dims4{1, 2, 65, 3}, Dims4{2, 2, 130, 16}}) {
    const Tensor<4> q = attn::randn<4>(rng, {d.B, d.H, d.T, d.hs});
    const Tensor<4> k = attn::randn<4>(rng, {d.B, d.H, d.T, d.hs});
    const Tensor<4> v = attn::randn<4>(rng, {d.B, d.H, d.T, d.hs});
    for (const bool causal : {false, true}) {
      CAPTURE(d.B);
      CAPTURE(d.H);
      CAPTURE(d.T);
      CAPTURE(d.hs);
      CAPTURE(causal);
      const attn::AttentionResult got = attn::scaled_dot_product_attention(q, k, v, causal);
      const Reference want = reference_attention(q, k, v, causal);
      CHECK_TENSOR_NEAR(got.weights, want.weights, 1e-6, 1e-5);
      CHECK_TENSOR_NEAR(got.out, want.out, 1e-5, 1e-5);
    }
  }
}

TEST_CASE("a single key gets all the weight: the output is that value") {
  const Tensor<4> q = {{{{3.0f, -1.0f}}}};  // (1, 1, 1, 2)
  const Tensor<4> k = {{{{0.5f, 2.0f}}}};
  const Tensor<4> v = {{{{7.0f, -8.0f}}}};
  const attn::AttentionResult r = attn::scaled_dot_product_attention(q, k, v, true);
  const Tensor<4> one = {{{{1.0f}}}};
  CHECK_TENSOR_NEAR(r.weights, one, 0.0, 0.0);
  CHECK_TENSOR_NEAR(r.out, v, 0.0, 0.0);
}

TEST_CASE("a hand-worked example: two keys, scores scaled by 1/sqrt(hs)") {
  // hs = 4, so scores are q.k / 2. q = (2,0,0,0); k0 = (0,...) gives 0, k1 = (1,0,0,0) gives 1.
  const Tensor<4> q = {{{{2.0f, 0.0f, 0.0f, 0.0f}, {2.0f, 0.0f, 0.0f, 0.0f}}}};  // (1,1,2,4)
  const Tensor<4> k = {{{{0.0f, 0.0f, 0.0f, 0.0f}, {1.0f, 0.0f, 0.0f, 0.0f}}}};
  const Tensor<4> v = {{{{1.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f, 0.0f}}}};
  const attn::AttentionResult r = attn::scaled_dot_product_attention(q, k, v, false);
  // softmax([0, 1]) = [1 / (1 + e), e / (1 + e)] = [0.268941, 0.731059]
  const float a = static_cast<float>(1.0 / (1.0 + std::exp(1.0)));
  const float b = static_cast<float>(std::exp(1.0) / (1.0 + std::exp(1.0)));
  const Tensor<4> weights = {{{{a, b}, {a, b}}}};
  CHECK_TENSOR_NEAR(r.weights, weights, 1e-7, 1e-6);
  // Causal: query 0 sees key 0 only, query 1 sees both.
  const attn::AttentionResult c = attn::scaled_dot_product_attention(q, k, v, true);
  const Tensor<4> causal_weights = {{{{1.0f, 0.0f}, {a, b}}}};
  const Tensor<4> causal_out = {{{{1.0f, 0.0f, 0.0f, 0.0f}, {a, b, 0.0f, 0.0f}}}};
  CHECK_TENSOR_NEAR(c.weights, causal_weights, 1e-7, 1e-6);
  CHECK_TENSOR_NEAR(c.out, causal_out, 1e-7, 1e-6);
}

TEST_CASE("cross-attention: S keys differ from T queries, and values may be wider") {
  attn::Rng rng(12);
  struct Cross {
    std::size_t B, H, T, S, hs, hv;
  };
  for (const Cross c : {Cross{2, 3, 4, 9, 5, 5}, Cross{1, 1, 1, 200, 8, 8},
                        Cross{1, 2, 70, 3, 4, 4}, Cross{2, 2, 5, 6, 3, 7}}) {
    const Tensor<4> q = attn::randn<4>(rng, {c.B, c.H, c.T, c.hs});
    const Tensor<4> k = attn::randn<4>(rng, {c.B, c.H, c.S, c.hs});
    const Tensor<4> v = attn::randn<4>(rng, {c.B, c.H, c.S, c.hv});
    CAPTURE(c.T);
    CAPTURE(c.S);
    CAPTURE(c.hv);
    const attn::AttentionResult got = attn::scaled_dot_product_attention(q, k, v, false);
    const Reference want = reference_attention(q, k, v, false);
    CHECK(got.out.shape() == Tensor<4>::shape_type{c.B, c.H, c.T, c.hv});
    CHECK_TENSOR_NEAR(got.weights, want.weights, 1e-6, 1e-5);
    CHECK_TENSOR_NEAR(got.out, want.out, 1e-5, 1e-5);
  }
}

TEST_CASE("large scores (about +-50, and +-1000) stay finite and match the reference") {
  attn::Rng rng(13);
  // q . k / sqrt(hs) has standard deviation sigma^2 for entries of standard deviation sigma.
  for (const float sigma : {7.0f, 32.0f}) {
    const Tensor<4> q = attn::randn<4>(rng, {2, 2, 20, 16}, sigma);
    const Tensor<4> k = attn::randn<4>(rng, {2, 2, 20, 16}, sigma);
    const Tensor<4> v = attn::randn<4>(rng, {2, 2, 20, 16});
    for (const bool causal : {false, true}) {
      CAPTURE(sigma);
      CAPTURE(causal);
      const attn::AttentionResult got = attn::scaled_dot_product_attention(q, k, v, causal);
      CHECK(std::all_of(got.weights.begin(), got.weights.end(),
                        [](float x) { return std::isfinite(x); }));
      CHECK(std::all_of(got.out.begin(), got.out.end(), [](float x) { return std::isfinite(x); }));
      const Reference want = reference_attention(q, k, v, causal);
      // A score of 1000 carries a float rounding error of about 1e-4, and so does its weight.
      const double tol = sigma > 10.0f ? 2e-3 : 1e-4;
      CHECK_TENSOR_NEAR(got.weights, want.weights, tol, 0.0);
      CHECK_TENSOR_NEAR(got.out, want.out, 4 * tol, 0.0);
    }
  }
}

TEST_CASE("weights rows sum to 1 and future weights are exactly 0") {
  attn::Rng rng(14);
  const std::size_t B = 2, H = 3, T = 130, hs = 8;
  const Tensor<4> q = attn::randn<4>(rng, {B, H, T, hs});
  const Tensor<4> k = attn::randn<4>(rng, {B, H, T, hs});
  const Tensor<4> v = attn::randn<4>(rng, {B, H, T, hs});
  const attn::AttentionResult r = attn::scaled_dot_product_attention(q, k, v, true);
  std::size_t future_nonzero = 0, past_zero = 0;
  double worst_sum = 0.0;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t) {
        double sum = 0.0;
        for (std::size_t s = 0; s < T; ++s) {
          const float w = r.weights(b, h, t, s);
          sum += static_cast<double>(w);
          if (s > t && w != 0.0f) ++future_nonzero;
          if (s <= t && !(w > 0.0f)) ++past_zero;
        }
        worst_sum = std::max(worst_sum, std::abs(sum - 1.0));
      }
  CHECK(future_nonzero == 0);
  CHECK(past_zero == 0);  // unit-size scores: no visible weight underflows
  CHECK(worst_sum < 1e-5);
}

TEST_CASE("need_weights = false gives the same output and an empty weights tensor") {
  attn::Rng rng(15);
  for (const std::size_t T : {std::size_t{1}, std::size_t{10}, std::size_t{130}}) {
    const Tensor<4> q = attn::randn<4>(rng, {2, 2, T, 8});
    const Tensor<4> k = attn::randn<4>(rng, {2, 2, T, 8});
    const Tensor<4> v = attn::randn<4>(rng, {2, 2, T, 8});
    for (const bool causal : {false, true}) {
      CAPTURE(T);
      CAPTURE(causal);
      const attn::AttentionResult full = attn::scaled_dot_product_attention(q, k, v, causal, true);
      const attn::AttentionResult lean = attn::scaled_dot_product_attention(q, k, v, causal, false);
      CHECK(lean.weights.shape() == kEmpty4.shape());
      CHECK(lean.weights.size() == 0);
      CHECK_TENSOR_NEAR(lean.out, full.out, 0.0, 0.0);
    }
  }
}

TEST_CASE("causal attention: changing keys and values after position t leaves out[..t] alone") {
  attn::Rng rng(16);
  const std::size_t T = 150, t = 70;  // t inside the second block of queries
  const Tensor<4> q = attn::randn<4>(rng, {1, 2, T, 8});
  const Tensor<4> k = attn::randn<4>(rng, {1, 2, T, 8});
  const Tensor<4> v = attn::randn<4>(rng, {1, 2, T, 8});
  Tensor<4> k2 = k, v2 = v;
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t s = t + 1; s < T; ++s)
      for (std::size_t d = 0; d < 8; ++d) {
        k2(0, h, s, d) = 100.0f * rng.normal();
        v2(0, h, s, d) = 100.0f * rng.normal();
      }
  const Tensor<4> a = attn::scaled_dot_product_attention(q, k, v, true, false).out;
  const Tensor<4> b = attn::scaled_dot_product_attention(q, k2, v2, true, false).out;
  const Tensor<4> a_past = xt::view(a, xt::all(), xt::all(), xt::range(0, t + 1));
  const Tensor<4> b_past = xt::view(b, xt::all(), xt::all(), xt::range(0, t + 1));
  CHECK_TENSOR_NEAR(b_past, a_past, 0.0, 0.0);
  CHECK(max_abs_diff(a, b) > 0.1);  // the later positions did change
}

TEST_CASE("a NaN in one query makes that query's output NaN and leaves the others alone") {
  attn::Rng rng(29);
  Tensor<4> q = attn::randn<4>(rng, {1, 1, 20, 4});
  const Tensor<4> k = attn::randn<4>(rng, {1, 1, 20, 4});
  const Tensor<4> v = attn::randn<4>(rng, {1, 1, 20, 4});
  const Tensor<4> clean = attn::scaled_dot_product_attention(q, k, v, true).out;
  q(0, 0, 12, 1) = std::numeric_limits<float>::quiet_NaN();
  const Tensor<4> out = attn::scaled_dot_product_attention(q, k, v, true).out;
  for (std::size_t t = 0; t < 20; ++t)
    for (std::size_t d = 0; d < 4; ++d) {
      CAPTURE(t);
      if (t == 12)
        CHECK(std::isnan(out(0, 0, t, d)));
      else
        CHECK(out(0, 0, t, d) == clean(0, 0, t, d));
    }
}

TEST_CASE("attention shape errors name the function and every shape") {
  const auto z = [](std::size_t B, std::size_t H, std::size_t T, std::size_t hs) {
    return Tensor<4>(xt::zeros<float>({B, H, T, hs}));
  };
  const std::string fn = "attn::scaled_dot_product_attention: ";
  const std::string fit = fn + "expected q (B, H, T, hs), k (B, H, S, hs), v (B, H, S, hv), got ";
  CHECK_THROWS_WITH_AS(
      attn::scaled_dot_product_attention(z(2, 4, 10, 16), z(3, 4, 10, 16), z(3, 4, 10, 16), false),
      (fit + "q (2, 4, 10, 16), k (3, 4, 10, 16), v (3, 4, 10, 16)").c_str(),
      std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      attn::scaled_dot_product_attention(z(2, 4, 10, 16), z(2, 2, 10, 16), z(2, 4, 10, 16), false),
      (fit + "q (2, 4, 10, 16), k (2, 2, 10, 16), v (2, 4, 10, 16)").c_str(),
      std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      attn::scaled_dot_product_attention(z(2, 4, 10, 16), z(2, 4, 10, 16), z(2, 4, 9, 16), false),
      (fit + "q (2, 4, 10, 16), k (2, 4, 10, 16), v (2, 4, 9, 16)").c_str(), std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      attn::scaled_dot_product_attention(z(2, 4, 10, 16), z(2, 4, 10, 8), z(2, 4, 10, 16), false),
      (fit + "q (2, 4, 10, 16), k (2, 4, 10, 8), v (2, 4, 10, 16)").c_str(), std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      attn::scaled_dot_product_attention(z(1, 1, 4, 8), z(1, 1, 6, 8), z(1, 1, 6, 8), true),
      (fn + "expected S == T for causal attention, got q (1, 1, 4, 8), "
            "k (1, 1, 6, 8), v (1, 1, 6, 8)")
          .c_str(),
      std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      attn::scaled_dot_product_attention(z(1, 1, 4, 0), z(1, 1, 4, 0), z(1, 1, 4, 3), false),
      (fn + "expected hs >= 1 and at least one key (S >= 1), got q (1, 1, 4, 0), "
            "k (1, 1, 4, 0), v (1, 1, 4, 3)")
          .c_str(),
      std::invalid_argument);
  CHECK_THROWS_AS(
      attn::scaled_dot_product_attention(z(1, 1, 4, 2), z(1, 1, 0, 2), z(1, 1, 0, 2), false),
      std::invalid_argument);
  // The same shapes without the causal flag are fine (cross-attention).
  CHECK_NOTHROW(
      attn::scaled_dot_product_attention(z(1, 1, 4, 8), z(1, 1, 6, 8), z(1, 1, 6, 8), false));
}

// ---------------------------------------------------------------------------------------------
// split_heads and merge_heads
// ---------------------------------------------------------------------------------------------

TEST_CASE("split_heads puts column block h of every position into head h") {
  // (B, T, C) = (1, 2, 6), 3 heads of hs = 2.
  const Tensor<3> x = {{{0, 1, 2, 3, 4, 5}, {10, 11, 12, 13, 14, 15}}};
  const Tensor<4> want = {{{{0, 1}, {10, 11}}, {{2, 3}, {12, 13}}, {{4, 5}, {14, 15}}}};
  const Tensor<4> heads = attn::split_heads(x, 3);
  CHECK_TENSOR_NEAR(heads, want, 0.0, 0.0);
  CHECK_TENSOR_NEAR(attn::merge_heads(heads), x, 0.0, 0.0);
}

TEST_CASE("split_heads equals reshape (B, T, H, hs) then swapping the H and T axes") {
  attn::Rng rng(17);
  const Tensor<3> x = attn::randn<3>(rng, {3, 5, 12});
  const Tensor<4> heads = attn::split_heads(x, 4);
  REQUIRE(heads.shape() == Tensor<4>::shape_type{3, 4, 5, 3});
  for (std::size_t b = 0; b < 3; ++b)
    for (std::size_t h = 0; h < 4; ++h)
      for (std::size_t t = 0; t < 5; ++t)
        for (std::size_t d = 0; d < 3; ++d) CHECK(heads(b, h, t, d) == x(b, t, h * 3 + d));
}

TEST_CASE("merge_heads undoes split_heads, for every number of heads dividing C") {
  attn::Rng rng(18);
  const Tensor<3> x = attn::randn<3>(rng, {2, 7, 12});
  for (const std::size_t H : {1, 2, 3, 4, 6, 12}) {
    CAPTURE(H);
    CHECK_TENSOR_NEAR(attn::merge_heads(attn::split_heads(x, H)), x, 0.0, 0.0);
  }
  const Tensor<4> heads = attn::randn<4>(rng, {2, 3, 4, 5});
  CHECK_TENSOR_NEAR(attn::split_heads(attn::merge_heads(heads), 3), heads, 0.0, 0.0);
}

TEST_CASE("split_heads rejects a head count that does not divide C") {
  const Tensor<3> x = xt::zeros<float>({2, 10, 64});
  CHECK_THROWS_WITH_AS(attn::split_heads(x, 5),
                       "attn::split_heads: n_heads = 5 does not divide C = 64",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(attn::split_heads(x, 0),
                       "attn::split_heads: n_heads = 0 does not divide C = 64",
                       std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Multi-head attention
// ---------------------------------------------------------------------------------------------

TEST_CASE("mha_init draws w_q, w_k, w_v, w_o in that order, Normal(0, std)") {
  attn::Rng rng(19), same(19);
  const attn::MhaWeights w = attn::mha_init(rng, 8, 0.5f);
  const attn::Matrix q = attn::randn(same, 8, 8, 0.5f);
  const attn::Matrix k = attn::randn(same, 8, 8, 0.5f);
  const attn::Matrix v = attn::randn(same, 8, 8, 0.5f);
  const attn::Matrix o = attn::randn(same, 8, 8, 0.5f);
  CHECK_TENSOR_NEAR(w.w_q, q, 0.0, 0.0);
  CHECK_TENSOR_NEAR(w.w_k, k, 0.0, 0.0);
  CHECK_TENSOR_NEAR(w.w_v, v, 0.0, 0.0);
  CHECK_TENSOR_NEAR(w.w_o, o, 0.0, 0.0);
  // Default std 0.02: the sample standard deviation of 4 * 64 * 64 draws is close to it.
  attn::Rng r2(20);
  const attn::MhaWeights d = attn::mha_init(r2, 64);
  double sq = 0.0;
  for (const attn::Matrix* m : {&d.w_q, &d.w_k, &d.w_v, &d.w_o})
    for (float x : *m) sq += static_cast<double>(x) * static_cast<double>(x);
  CHECK(std::sqrt(sq / (4 * 64 * 64)) == doctest::Approx(0.02).epsilon(0.03));
}

TEST_CASE("the shapes of the multi-head checklist: (2, 10, 64) with 4 heads") {
  attn::Rng rng(21);
  const Tensor<3> x = attn::randn<3>(rng, {2, 10, 64});
  const attn::MhaWeights w = test_weights(rng, 64);
  // Step by step with the public pieces: project, split, attend, merge, project.
  const Tensor<3> q = attn::linear(x, w.w_q);
  const Tensor<3> k = attn::linear(x, w.w_k);
  const Tensor<3> v = attn::linear(x, w.w_v);
  CHECK(q.shape() == Tensor<3>::shape_type{2, 10, 64});
  CHECK(k.shape() == Tensor<3>::shape_type{2, 10, 64});
  CHECK(v.shape() == Tensor<3>::shape_type{2, 10, 64});
  const Tensor<4> qh = attn::split_heads(q, 4), kh = attn::split_heads(k, 4),
                  vh = attn::split_heads(v, 4);
  CHECK(qh.shape() == Tensor<4>::shape_type{2, 4, 10, 16});
  const attn::AttentionResult a = attn::scaled_dot_product_attention(qh, kh, vh, true);
  CHECK(a.weights.shape() == Tensor<4>::shape_type{2, 4, 10, 10});
  CHECK(a.out.shape() == Tensor<4>::shape_type{2, 4, 10, 16});
  const Tensor<3> merged = attn::merge_heads(a.out);
  CHECK(merged.shape() == Tensor<3>::shape_type{2, 10, 64});
  const Tensor<3> out = attn::linear(merged, w.w_o);
  CHECK(out.shape() == Tensor<3>::shape_type{2, 10, 64});
  // mha_forward does the same (it splits and merges without copies) and returns the same.
  const attn::MhaResult m = attn::mha_forward(x, w, 4, true);
  CHECK(m.out.shape() == Tensor<3>::shape_type{2, 10, 64});
  CHECK(m.weights.shape() == Tensor<4>::shape_type{2, 4, 10, 10});
  check_same_to_rounding(m.out, out);
  check_same_to_rounding(m.weights, a.weights);
}

TEST_CASE("mha_forward, per-head and fused agree, and match the definition in double") {
  attn::Rng rng(22);
  for (const DimsMha d : {DimsMha{2, 10, 64, 4}, DimsMha{1, 1, 3, 1}, DimsMha{3, 5, 6, 3},
                          DimsMha{1, 7, 12, 2}, DimsMha{2, 1, 8, 8}, DimsMha{2, 70, 24, 3}}) {
    const Tensor<3> x = attn::randn<3>(rng, {d.B, d.T, d.C});
    const attn::MhaWeights w = test_weights(rng, d.C);
    const attn::Matrix w_qkv = attn::fuse_qkv(w);
    for (const bool causal : {false, true}) {
      CAPTURE(d.B);
      CAPTURE(d.T);
      CAPTURE(d.C);
      CAPTURE(d.H);
      CAPTURE(causal);
      const attn::MhaResult fast = attn::mha_forward(x, w, d.H, causal);
      const attn::MhaResult loop = attn::mha_forward_per_head(x, w, d.H, causal);
      const attn::MhaResult fused = attn::mha_forward_fused(x, w_qkv, w.w_o, d.H, causal);
      const MhaReference want = reference_mha(x, x, w, d.H, causal);
      CHECK_TENSOR_NEAR(fast.out, want.out, 1e-5, 1e-4);
      CHECK_TENSOR_NEAR(fast.weights, want.weights, 1e-6, 1e-4);
      check_same_to_rounding(loop.out, fast.out);
      check_same_to_rounding(loop.weights, fast.weights);
      check_same_to_rounding(fused.out, fast.out);
      check_same_to_rounding(fused.weights, fast.weights);
    }
  }
}

TEST_CASE("fused QKV: [w_q | w_k | w_v] side by side, and the same result as three GEMMs") {
  attn::Rng rng(23);
  const attn::MhaWeights w = test_weights(rng, 64);
  const attn::Matrix w_qkv = attn::fuse_qkv(w);
  REQUIRE(w_qkv.shape() == attn::Matrix::shape_type{64, 192});
  for (std::size_t i = 0; i < 64; ++i)
    for (std::size_t j = 0; j < 64; ++j) {
      REQUIRE(w_qkv(i, j) == w.w_q(i, j));
      REQUIRE(w_qkv(i, 64 + j) == w.w_k(i, j));
      REQUIRE(w_qkv(i, 128 + j) == w.w_v(i, j));
    }
  const Tensor<3> x = attn::randn<3>(rng, {2, 10, 64});
  // One GEMM, column blocks = the three separate projections (to float rounding, see
  // check_same_to_rounding).
  const Tensor<3> qkv = attn::linear(x, w_qkv);
  const Tensor<3> q_part = xt::view(qkv, xt::all(), xt::all(), xt::range(0, 64));
  const Tensor<3> k_part = xt::view(qkv, xt::all(), xt::all(), xt::range(64, 128));
  const Tensor<3> v_part = xt::view(qkv, xt::all(), xt::all(), xt::range(128, 192));
  check_same_to_rounding(q_part, attn::linear(x, w.w_q));
  check_same_to_rounding(k_part, attn::linear(x, w.w_k));
  check_same_to_rounding(v_part, attn::linear(x, w.w_v));
  // The whole layer, at the test scale (outputs of a few units) and at the course's
  // initialisation (std 0.02), where the absolute difference is far below 1e-6.
  attn::Rng init_rng(1337);
  const attn::MhaWeights w_init = attn::mha_init(init_rng, 64);
  const attn::Matrix w_qkv_init = attn::fuse_qkv(w_init);
  for (const bool causal : {false, true}) {
    const attn::MhaResult separate = attn::mha_forward(x, w, 4, causal);
    const attn::MhaResult fused = attn::mha_forward_fused(x, w_qkv, w.w_o, 4, causal);
    check_same_to_rounding(fused.out, separate.out);
    check_same_to_rounding(fused.weights, separate.weights);
    const attn::MhaResult separate_init = attn::mha_forward(x, w_init, 4, causal);
    const attn::MhaResult fused_init =
        attn::mha_forward_fused(x, w_qkv_init, w_init.w_o, 4, causal);
    const double diff = max_abs_diff(fused_init.out, separate_init.out);
    MESSAGE("fused vs separate at std 0.02, causal = " << causal << ": max |diff| = " << diff);
    CHECK(diff <= 1e-6);
  }
}

TEST_CASE("need_weights = false: same output, empty weights, for mha_forward and fused") {
  attn::Rng rng(24);
  const Tensor<3> x = attn::randn<3>(rng, {2, 130, 16});
  const attn::MhaWeights w = test_weights(rng, 16);
  const attn::Matrix w_qkv = attn::fuse_qkv(w);
  for (const bool causal : {false, true}) {
    CAPTURE(causal);
    const attn::MhaResult full = attn::mha_forward(x, w, 2, causal, true);
    const attn::MhaResult lean = attn::mha_forward(x, w, 2, causal, false);
    CHECK(lean.weights.shape() == kEmpty4.shape());
    CHECK_TENSOR_NEAR(lean.out, full.out, 0.0, 0.0);
    const attn::MhaResult fused_lean = attn::mha_forward_fused(x, w_qkv, w.w_o, 2, causal, false);
    CHECK(fused_lean.weights.shape() == kEmpty4.shape());
    check_same_to_rounding(fused_lean.out, full.out);
  }
}

TEST_CASE("causal multi-head attention: changing x after position t leaves out[..t] alone") {
  attn::Rng rng(25);
  const attn::MhaWeights w = test_weights(rng, 32);
  const attn::Matrix w_qkv = attn::fuse_qkv(w);
  for (const auto [T, t] : {std::array<std::size_t, 2>{10, 4}, std::array<std::size_t, 2>{150, 70},
                            std::array<std::size_t, 2>{150, 0}}) {
    CAPTURE(T);
    CAPTURE(t);
    const Tensor<3> x = attn::randn<3>(rng, {2, T, 32});
    Tensor<3> x2 = x;
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t s = t + 1; s < T; ++s)
        for (std::size_t c = 0; c < 32; ++c) x2(b, s, c) = 10.0f * rng.normal();
    const auto past = [t](const Tensor<3>& y) {
      return Tensor<3>(xt::view(y, xt::all(), xt::range(0, t + 1), xt::all()));
    };
    const attn::MhaResult a = attn::mha_forward(x, w, 4, true, false);
    const attn::MhaResult b = attn::mha_forward(x2, w, 4, true, false);
    CHECK_TENSOR_NEAR(past(b.out), past(a.out), 0.0, 0.0);
    CHECK(max_abs_diff(a.out, b.out) > 1e-3);
    const attn::MhaResult fa = attn::mha_forward_fused(x, w_qkv, w.w_o, 4, true, false);
    const attn::MhaResult fb = attn::mha_forward_fused(x2, w_qkv, w.w_o, 4, true, false);
    CHECK_TENSOR_NEAR(past(fb.out), past(fa.out), 0.0, 0.0);
    const attn::MhaResult pa = attn::mha_forward_per_head(x, w, 4, true);
    const attn::MhaResult pb = attn::mha_forward_per_head(x2, w, 4, true);
    CHECK_TENSOR_NEAR(past(pb.out), past(pa.out), 0.0, 0.0);
  }
}

TEST_CASE("without the mask, a change anywhere reaches every position") {
  attn::Rng rng(26);
  const attn::MhaWeights w = test_weights(rng, 16);
  const Tensor<3> x = attn::randn<3>(rng, {1, 6, 16});
  Tensor<3> x2 = x;
  x2(0, 5, 0) += 1.0f;  // the last position only
  const Tensor<3> a = attn::mha_forward(x, w, 2, false).out;
  const Tensor<3> b = attn::mha_forward(x2, w, 2, false).out;
  for (std::size_t t = 0; t < 6; ++t) {
    CAPTURE(t);
    double d = 0.0;
    for (std::size_t c = 0; c < 16; ++c)
      d = std::max(d, static_cast<double>(std::abs(a(0, t, c) - b(0, t, c))));
    CHECK(d > 0.0);
  }
}

TEST_CASE("cross-attention: queries from x, keys and values from y, never masked") {
  attn::Rng rng(27);
  struct Cross {
    std::size_t B, T, S, C, H;
  };
  for (const Cross c : {Cross{2, 4, 9, 12, 3}, Cross{1, 1, 5, 8, 2}, Cross{2, 70, 3, 16, 4}}) {
    CAPTURE(c.T);
    CAPTURE(c.S);
    const Tensor<3> x = attn::randn<3>(rng, {c.B, c.T, c.C});
    const Tensor<3> y = attn::randn<3>(rng, {c.B, c.S, c.C});
    const attn::MhaWeights w = test_weights(rng, c.C);
    const attn::MhaResult got = attn::mha_cross_forward(x, y, w, c.H);
    const MhaReference want = reference_mha(x, y, w, c.H, false);
    CHECK(got.weights.shape() == Tensor<4>::shape_type{c.B, c.H, c.T, c.S});
    CHECK_TENSOR_NEAR(got.out, want.out, 1e-5, 1e-4);
    CHECK_TENSOR_NEAR(got.weights, want.weights, 1e-6, 1e-4);
  }
  // With y = x it is plain (unmasked) self-attention.
  const Tensor<3> x = attn::randn<3>(rng, {2, 6, 8});
  const attn::MhaWeights w = test_weights(rng, 8);
  check_same_to_rounding(attn::mha_cross_forward(x, x, w, 2).out,
                         attn::mha_forward(x, w, 2, false).out);
}

TEST_CASE("multi-head errors: head count, every weight's shape, x and y") {
  const Tensor<3> x = xt::zeros<float>({2, 10, 64});
  attn::Rng rng(28);
  const attn::MhaWeights w = attn::mha_init(rng, 64);
  const attn::Matrix w_qkv = attn::fuse_qkv(w);
  using E = std::invalid_argument;

  CHECK_THROWS_WITH_AS(attn::mha_forward(x, w, 5, true),
                       "attn::mha_forward: n_heads = 5 does not divide C = 64", E);
  CHECK_THROWS_WITH_AS(attn::mha_forward(x, w, 0, true),
                       "attn::mha_forward: n_heads = 0 does not divide C = 64", E);
  CHECK_THROWS_WITH_AS(attn::mha_forward_per_head(x, w, 5, true),
                       "attn::mha_forward_per_head: n_heads = 5 does not divide C = 64", E);
  CHECK_THROWS_WITH_AS(attn::mha_forward_fused(x, w_qkv, w.w_o, 5, true),
                       "attn::mha_forward_fused: n_heads = 5 does not divide C = 64", E);
  CHECK_THROWS_WITH_AS(attn::mha_cross_forward(x, x, w, 5),
                       "attn::mha_cross_forward: n_heads = 5 does not divide C = 64", E);

  for (const char* name : {"w_q", "w_k", "w_v", "w_o"}) {
    CAPTURE(name);
    attn::MhaWeights bad = w;
    attn::Matrix& m = name[2] == 'q'   ? bad.w_q
                      : name[2] == 'k' ? bad.w_k
                      : name[2] == 'v' ? bad.w_v
                                       : bad.w_o;
    m = xt::zeros<float>({64, 32});
    const std::string what = std::string(name) + " is (64, 32), expected (64, 64)";
    CHECK_THROWS_WITH_AS(attn::mha_forward(x, bad, 4, true), ("attn::mha_forward: " + what).c_str(),
                         E);
    CHECK_THROWS_WITH_AS(attn::mha_forward_per_head(x, bad, 4, true),
                         ("attn::mha_forward_per_head: " + what).c_str(), E);
    CHECK_THROWS_WITH_AS(attn::mha_cross_forward(x, x, bad, 4),
                         ("attn::mha_cross_forward: " + what).c_str(), E);
  }
  // Weights for another width than x's.
  const attn::MhaWeights w32 = attn::mha_init(rng, 32);
  CHECK_THROWS_WITH_AS(attn::mha_forward(x, w32, 4, true),
                       "attn::mha_forward: w_q is (32, 32), expected (64, 64)", E);

  const attn::Matrix w_qkv_bad = xt::zeros<float>({64, 128});
  CHECK_THROWS_WITH_AS(attn::mha_forward_fused(x, w_qkv_bad, w.w_o, 4, true),
                       "attn::mha_forward_fused: w_qkv is (64, 128), expected (64, 192)", E);
  const attn::Matrix w_o_bad = xt::zeros<float>({32, 64});
  CHECK_THROWS_WITH_AS(attn::mha_forward_fused(x, w_qkv, w_o_bad, 4, true),
                       "attn::mha_forward_fused: w_o is (32, 64), expected (64, 64)", E);

  attn::MhaWeights uneven = w;
  uneven.w_v = xt::zeros<float>({64, 63});
  CHECK_THROWS_WITH_AS(attn::fuse_qkv(uneven), "attn::fuse_qkv: w_v is (64, 63), expected (64, 64)",
                       E);

  const Tensor<3> y_wrong_c = xt::zeros<float>({2, 7, 32});
  CHECK_THROWS_WITH_AS(attn::mha_cross_forward(x, y_wrong_c, w, 4),
                       "attn::mha_cross_forward: expected x (B, T, C) and y (B, S, C), got "
                       "x (2, 10, 64) and y (2, 7, 32)",
                       E);
  const Tensor<3> y_wrong_b = xt::zeros<float>({3, 7, 64});
  CHECK_THROWS_AS(attn::mha_cross_forward(x, y_wrong_b, w, 4), E);
  const Tensor<3> y_empty = xt::zeros<float>({2, 0, 64});
  CHECK_THROWS_WITH_AS(attn::mha_cross_forward(x, y_empty, w, 4),
                       "attn::mha_cross_forward: y is (2, 0, 64), S must be at least 1", E);

  const Tensor<3> x0 = xt::zeros<float>({2, 10, 0});
  CHECK_THROWS_WITH_AS(attn::mha_forward(x0, w, 4, true),
                       "attn::mha_forward: x is (2, 10, 0), C must be at least 1", E);
}

}  // TEST_SUITE

TEST_SUITE("attention.backward") {

using attn::testing::check_caught;
using attn::testing::check_gradients;
using attn::testing::cspan_of;
using attn::testing::span_of;
using attn::testing::upstream;

// The backward of one head written out in double from the five lines of the chapter, with two
// switches for the classic bugs: `scaled` false drops the 1/sqrt(hs) from dq and dk; `mask_in_p`
// false recomputes P for the backward from the scores without the causal mask.
attn::AttentionGrads reference_backward(const Tensor<4>& dout, const Tensor<4>& q,
                                        const Tensor<4>& k, const Tensor<4>& v, bool causal,
                                        bool scaled = true, bool mask_in_p = true) {
  const std::size_t B = q.shape()[0], H = q.shape()[1], T = q.shape()[2], hs = q.shape()[3];
  const std::size_t S = k.shape()[2], hv = v.shape()[3];
  attn::AttentionGrads g{xt::zeros<float>(q.shape()), xt::zeros<float>(k.shape()),
                         xt::zeros<float>(v.shape())};
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  const double grad_scale = scaled ? scale : 1.0;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h) {
      std::vector<double> p(T * S), ds(T * S);
      for (std::size_t t = 0; t < T; ++t) {
        const bool mask = causal && mask_in_p;
        double m = -1e300;
        for (std::size_t s = 0; s < S; ++s) {
          double z = 0.0;
          for (std::size_t i = 0; i < hs; ++i)
            z += static_cast<double>(q(b, h, t, i)) * static_cast<double>(k(b, h, s, i));
          p[t * S + s] = (mask && s > t) ? -1e300 : z * scale;
          m = std::max(m, p[t * S + s]);
        }
        double sum = 0.0;
        for (std::size_t s = 0; s < S; ++s) {
          p[t * S + s] = (mask && s > t) ? 0.0 : std::exp(p[t * S + s] - m);
          sum += p[t * S + s];
        }
        for (std::size_t s = 0; s < S; ++s) p[t * S + s] /= sum;
        // dP = dO V^T, dS = P (dP - sum dP P)
        double dot = 0.0;
        for (std::size_t s = 0; s < S; ++s) {
          double dp = 0.0;
          for (std::size_t i = 0; i < hv; ++i)
            dp += static_cast<double>(dout(b, h, t, i)) * static_cast<double>(v(b, h, s, i));
          ds[t * S + s] = dp;
          dot += dp * p[t * S + s];
        }
        for (std::size_t s = 0; s < S; ++s) ds[t * S + s] = p[t * S + s] * (ds[t * S + s] - dot);
      }
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t s = 0; s < S; ++s) {
          for (std::size_t i = 0; i < hv; ++i)  // dV = P^T dO
            g.dv(b, h, s, i) +=
                static_cast<float>(p[t * S + s] * static_cast<double>(dout(b, h, t, i)));
          for (std::size_t i = 0; i < hs; ++i) {  // dQ = dS K / sqrt(hs), dK = dS^T Q / sqrt(hs)
            g.dq(b, h, t, i) +=
                static_cast<float>(ds[t * S + s] * static_cast<double>(k(b, h, s, i)) * grad_scale);
            g.dk(b, h, s, i) +=
                static_cast<float>(ds[t * S + s] * static_cast<double>(q(b, h, t, i)) * grad_scale);
          }
        }
    }
  return g;
}

struct Sdpa {
  Tensor<4> q, k, v, r;
};
Sdpa make_sdpa(std::size_t B, std::size_t H, std::size_t T, std::size_t S, std::size_t hs,
               std::uint64_t seed) {
  attn::Rng rng(seed);
  Sdpa s{attn::randn<4>(rng, {B, H, T, hs}), attn::randn<4>(rng, {B, H, S, hs}),
         attn::randn<4>(rng, {B, H, S, hs}), Tensor<4>()};
  s.r = attn::randn<4>(rng, {B, H, T, hs});
  return s;
}

std::vector<attn::GradCheckResult> check_sdpa(Sdpa& s, bool causal, const attn::AttentionGrads& g) {
  return attn::grad_check(
      [&] {
        return attn::weighted_sum(
            cspan_of(attn::scaled_dot_product_attention(s.q, s.k, s.v, causal, false).out),
            cspan_of(s.r));
      },
      {{"q", span_of(s.q), cspan_of(g.dq)},
       {"k", span_of(s.k), cspan_of(g.dk)},
       {"v", span_of(s.v), cspan_of(g.dv)}});
}

TEST_CASE(
    "scaled_dot_product_attention_backward matches central differences (T=1, hs=1, H=1, S != T)") {
  struct Case {
    std::size_t B, H, T, S, hs;
    bool causal;
  };
  for (const Case c :
       {Case{1, 1, 1, 1, 1, true}, Case{1, 1, 1, 1, 1, false}, Case{2, 1, 5, 5, 3, true},
        Case{1, 3, 4, 4, 1, true}, Case{2, 2, 3, 6, 2, false}, Case{1, 2, 5, 5, 4, false}}) {
    Sdpa s = make_sdpa(c.B, c.H, c.T, c.S, c.hs, 100 + c.T * 7 + c.hs);
    const attn::AttentionResult f = attn::scaled_dot_product_attention(s.q, s.k, s.v, c.causal);
    const attn::AttentionGrads g =
        attn::scaled_dot_product_attention_backward(s.r, s.q, s.k, s.v, f.weights, c.causal);
    const std::string name = "sdpa " + std::string(c.causal ? "causal " : "full ") +
                             attn::shape_str(std::array<std::size_t, 5>{c.B, c.H, c.T, c.S, c.hs});
    check_gradients(name, check_sdpa(s, c.causal, g));
    // And against the double-precision reference.
    const attn::AttentionGrads ref = reference_backward(s.r, s.q, s.k, s.v, c.causal);
    CHECK_TENSOR_NEAR(g.dq, ref.dq, 1e-5, 1e-4);
    CHECK_TENSOR_NEAR(g.dk, ref.dk, 1e-5, 1e-4);
    CHECK_TENSOR_NEAR(g.dv, ref.dv, 1e-5, 1e-4);
  }
}

TEST_CASE("a wrong attention gradient is caught: the missing 1/sqrt(hs), the mask ignored in P") {
  Sdpa s = make_sdpa(1, 2, 4, 4, 4, 11);
  const attn::AttentionGrads no_scale = reference_backward(s.r, s.q, s.k, s.v, true, false, true);
  check_caught("sdpa without 1/sqrt(hs)", check_sdpa(s, true, no_scale));
  const attn::AttentionGrads no_mask = reference_backward(s.r, s.q, s.k, s.v, true, true, false);
  check_caught("sdpa mask ignored in dS", check_sdpa(s, true, no_mask));
  // The honest reference passes the same check.
  check_gradients("sdpa reference",
                  check_sdpa(s, true, reference_backward(s.r, s.q, s.k, s.v, true)));
}

TEST_CASE("scaled_dot_product_attention_backward names bad shapes") {
  Sdpa s = make_sdpa(1, 2, 3, 3, 4, 12);
  const attn::AttentionResult f = attn::scaled_dot_product_attention(s.q, s.k, s.v, true);
  const Tensor<4> bad_dout = xt::zeros<float>({1, 2, 3, 5});
  CHECK_THROWS_WITH_AS(
      attn::scaled_dot_product_attention_backward(bad_dout, s.q, s.k, s.v, f.weights, true),
      "attn::scaled_dot_product_attention_backward: expected dout (1, 2, 3, 4) (like the forward's "
      "out), got dout (1, 2, 3, 5)",
      std::invalid_argument);
  const Tensor<4> no_weights = xt::zeros<float>({0, 0, 0, 0});
  CHECK_THROWS_WITH_AS(
      attn::scaled_dot_product_attention_backward(s.r, s.q, s.k, s.v, no_weights, true),
      "attn::scaled_dot_product_attention_backward: expected the forward's attention probabilities "
      "(1, 2, 3, 3), "
      "got (0, 0, 0, 0)",
      std::invalid_argument);
}

attn::MhaWeights zeros_like(const attn::MhaWeights& w) {
  return {xt::zeros<float>(w.w_q.shape()), xt::zeros<float>(w.w_k.shape()),
          xt::zeros<float>(w.w_v.shape()), xt::zeros<float>(w.w_o.shape())};
}

TEST_CASE(
    "mha_backward matches central differences (H = 1, hs = 1, T = 1, causal or not, with or "
    "without w_o)") {
  struct Case {
    std::size_t B, T, C, H;
  };
  for (const Case c : {Case{1, 1, 1, 1}, Case{2, 3, 4, 1}, Case{1, 5, 6, 3}, Case{2, 4, 4, 4}}) {
    for (bool causal : {true, false})
      for (bool proj : {true, false}) {
        attn::Rng rng(200 + c.T + c.C);
        attn::MhaWeights w = attn::mha_init(rng, c.C, 0.7f);
        if (!proj) w.w_o = attn::Matrix(attn::Matrix::shape_type{0, 0});
        Tensor<3> x = attn::randn<3>(rng, {c.B, c.T, c.C});
        const Tensor<3> r = attn::randn<3>(rng, {c.B, c.T, c.C});
        attn::MhaCache cache;
        const Tensor<3> out = attn::mha_forward(x, w, c.H, causal, cache);
        CHECK_TENSOR_NEAR(out, attn::mha_forward(x, w, c.H, causal).out, 0.0, 0.0);
        attn::MhaWeights g = zeros_like(w);
        Tensor<3> dx;
        attn::mha_backward(r, cache, w, c.H, causal, dx, g);
        std::vector<attn::GradTensor> tensors = {{"x", span_of(x), cspan_of(dx)},
                                                 {"w_q", span_of(w.w_q), cspan_of(g.w_q)},
                                                 {"w_k", span_of(w.w_k), cspan_of(g.w_k)},
                                                 {"w_v", span_of(w.w_v), cspan_of(g.w_v)}};
        if (proj) tensors.push_back({"w_o", span_of(w.w_o), cspan_of(g.w_o)});
        check_gradients(
            "mha " + std::string(causal ? "causal " : "full ") + (proj ? "" : "no-proj ") +
                attn::shape_str(std::array<std::size_t, 4>{c.B, c.T, c.C, c.H}),
            attn::grad_check(
                [&] {
                  return attn::weighted_sum(
                      cspan_of(attn::mha_forward(x, w, c.H, causal, false).out), cspan_of(r));
                },
                tensors));
      }
  }
}

TEST_CASE("mha_backward names a bad dout and an unfilled cache") {
  attn::Rng rng(301);
  const attn::MhaWeights w = attn::mha_init(rng, 8);
  const Tensor<3> x = attn::randn<3>(rng, {1, 3, 8});
  attn::MhaCache cache;
  (void)attn::mha_forward(x, w, 2, true, cache);
  attn::MhaWeights g = zeros_like(w);
  Tensor<3> dx;
  CHECK_THROWS_WITH_AS(
      attn::mha_backward(Tensor<3>(xt::zeros<float>({1, 3, 7})), cache, w, 2, true, dx, g),
      "attn::mha_backward: expected dout of shape (1, 3, 8) (like the forward's x), got dout (1, "
      "3, 7)",
      std::invalid_argument);
  attn::MhaCache stale = cache;
  stale.weights = Tensor<4>(Tensor<4>::shape_type{0, 0, 0, 0});
  CHECK_THROWS_AS(attn::mha_backward(x, stale, w, 2, true, dx, g), std::invalid_argument);
}

}  // TEST_SUITE
