// Don't edit: these tests check your exercises.
// tests/exercises/ch08_test.cpp: chapter 08 (backpropagation by hand). Every expected gradient is
// worked out by hand, by a plain double-precision loop, or by central finite differences of a
// forward written out in double below, never by the attn:: function the exercise mirrors. Run
// them with build/default/bin/attn-check 08.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

#include "exercises.hpp"
#include "test_fixtures.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Matrix;
using attn::Tensor;
using attn::Vector;
using DMatrix = xt::xtensor<double, 2>;
using Double3 = xt::xtensor<double, 3>;

// Fixed numbers with no visible pattern, the same on every machine (tests/test_fixtures.hpp).
using attn::testing::wiggle;
using attn::testing::wiggly1;
using attn::testing::wiggly2;
using attn::testing::wiggly3;

// Central differences in double: d f / d p_i = (f(p + h e_i) - f(p - h e_i)) / 2h for every
// element of `p` (changed in place and restored). f is a double-precision forward, so the only
// error is the O(h^2) truncation, about 1e-10 here.
std::vector<double> numeric_gradient(std::vector<double>& p, const std::function<double()>& f,
                                     double h = 1e-5) {
  std::vector<double> g(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double keep = p[i];
    p[i] = keep + h;
    const double up = f();
    p[i] = keep - h;
    const double down = f();
    p[i] = keep;
    g[i] = (up - down) / (2.0 * h);
  }
  return g;
}

template <class E>
std::vector<double> to_vector(const E& x) {
  std::vector<double> v;
  v.reserve(x.size());
  for (const auto value : x) v.push_back(static_cast<double>(value));
  return v;
}

// The numbers of `values` in a float tensor shaped like `like`.
template <class T>
T shaped_like(const T& like, const std::vector<double>& values) {
  T out = like;
  for (std::size_t i = 0; i < out.size(); ++i) out.data()[i] = static_cast<float>(values[i]);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Forwards in double, one loop per formula.

// Softmax of every row of x (N, S); masked[i][j] true keeps the entry out (weight 0).
DMatrix softmax_rows(const DMatrix& x, const std::vector<std::vector<bool>>* masked = nullptr) {
  DMatrix y = xt::zeros<double>(x.shape());
  for (std::size_t r = 0; r < x.shape()[0]; ++r) {
    double m = -1e300;
    for (std::size_t c = 0; c < x.shape()[1]; ++c)
      if (masked == nullptr || !(*masked)[r][c]) m = std::max(m, x(r, c));
    double sum = 0.0;
    for (std::size_t c = 0; c < x.shape()[1]; ++c)
      if (masked == nullptr || !(*masked)[r][c]) sum += (y(r, c) = std::exp(x(r, c) - m));
    for (std::size_t c = 0; c < x.shape()[1]; ++c) y(r, c) /= sum;
  }
  return y;
}

// y = layer_norm(x) per token (B, T, C), biased variance.
Double3 layer_norm_by_hand(const Double3& x, const std::vector<double>& gamma,
                           const std::vector<double>& beta, double eps = 1e-5) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  Double3 y({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      double mean = 0.0;
      for (std::size_t c = 0; c < C; ++c) mean += x(b, t, c);
      mean /= static_cast<double>(C);
      double var = 0.0;
      for (std::size_t c = 0; c < C; ++c) var += (x(b, t, c) - mean) * (x(b, t, c) - mean);
      var /= static_cast<double>(C);
      for (std::size_t c = 0; c < C; ++c)
        y(b, t, c) = (x(b, t, c) - mean) / std::sqrt(var + eps) * gamma[c] + beta[c];
    }
  return y;
}

// out = softmax(q k^T / sqrt(hs) [+ causal]) v for one head: (T, hs), (S, hs), (S, hs).
DMatrix attention_by_hand(const DMatrix& q, const DMatrix& k, const DMatrix& v, bool causal) {
  const std::size_t T = q.shape()[0], S = k.shape()[0], hs = q.shape()[1];
  DMatrix out = xt::zeros<double>({T, v.shape()[1]});
  for (std::size_t t = 0; t < T; ++t) {
    const std::size_t keys = causal ? t + 1 : S;
    std::vector<double> p(keys);
    double m = -1e300;
    for (std::size_t s = 0; s < keys; ++s) {
      double dot = 0.0;
      for (std::size_t d = 0; d < hs; ++d) dot += q(t, d) * k(s, d);
      p[s] = dot / std::sqrt(static_cast<double>(hs));
      m = std::max(m, p[s]);
    }
    double sum = 0.0;
    for (double& e : p) sum += (e = std::exp(e - m));
    for (std::size_t s = 0; s < keys; ++s)
      for (std::size_t d = 0; d < v.shape()[1]; ++d) out(t, d) += p[s] / sum * v(s, d);
  }
  return out;
}

// sum over all entries of a * b: the loss L = <dy, y> whose gradient with respect to y is dy.
template <class A, class B>
double dot_all(const A& a, const B& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += static_cast<double>(a.data()[i]) * static_cast<double>(b.data()[i]);
  return s;
}

// ---- Finite-difference references for ex08.3 and ex08.4.

struct LayerNormReference {
  Tensor<3> dx;
  Vector dgamma, dbeta;
};

LayerNormReference layer_norm_by_differences(const Tensor<3>& dy, const Tensor<3>& x,
                                             const Vector& gamma, double eps = 1e-5) {
  std::vector<double> px = to_vector(x), pg = to_vector(gamma);
  std::vector<double> pb(gamma.size(), 0.0);
  const auto loss = [&] {
    Double3 xd = xt::zeros<double>(x.shape());
    std::copy(px.begin(), px.end(), xd.begin());
    return dot_all(dy, layer_norm_by_hand(xd, pg, pb, eps));
  };
  LayerNormReference r;
  r.dx = shaped_like(x, numeric_gradient(px, loss));
  r.dgamma = shaped_like(gamma, numeric_gradient(pg, loss));
  r.dbeta = shaped_like(gamma, numeric_gradient(pb, loss));
  return r;
}

ex08::AttentionGrads attention_by_differences(const Matrix& dout, const Matrix& q, const Matrix& k,
                                              const Matrix& v, bool causal) {
  std::vector<double> pq = to_vector(q), pk = to_vector(k), pv = to_vector(v);
  const auto as_matrix = [](const Matrix& like, const std::vector<double>& p) {
    DMatrix m = xt::zeros<double>(like.shape());
    std::copy(p.begin(), p.end(), m.begin());
    return m;
  };
  const auto loss = [&] {
    return dot_all(dout,
                   attention_by_hand(as_matrix(q, pq), as_matrix(k, pk), as_matrix(v, pv), causal));
  };
  ex08::AttentionGrads g;
  g.dq = shaped_like(q, numeric_gradient(pq, loss));
  g.dk = shaped_like(k, numeric_gradient(pk, loss));
  g.dv = shaped_like(v, numeric_gradient(pv, loss));
  return g;
}

}  // namespace

TEST_SUITE("ex08.1 Softmax backward") {
TEST_CASE("one row worked by hand: dx = y (dy - dy . y)") {
  // y = [0.5, 0.25, 0.25], dy = [1, 0, 0]: dy . y = 0.5, so
  // dx = [0.5 (1 - 0.5), 0.25 (0 - 0.5), 0.25 (0 - 0.5)] = [0.25, -0.125, -0.125].
  const Matrix y = {{0.5f, 0.25f, 0.25f}};
  const Matrix dy = {{1.0f, 0.0f, 0.0f}};
  const Matrix want = {{0.25f, -0.125f, -0.125f}};
  CHECK_TENSOR_NEAR(ex08::softmax_backward(y, dy), want, 1e-7, 0.0);
}

TEST_CASE("a gradient that is the same on the whole row gives dx = 0" *
          doctest::description("hint 1")) {
  // Adding c to every dy_j changes dy . y by c (the weights sum to 1): nothing is left. A
  // softmax cannot tell a row from the same row shifted, so no shift can lower the loss.
  const Matrix y = {{0.1f, 0.2f, 0.3f, 0.4f}, {0.7f, 0.1f, 0.1f, 0.1f}};
  const Matrix dy = {{2.0f, 2.0f, 2.0f, 2.0f}, {-3.0f, -3.0f, -3.0f, -3.0f}};
  const Matrix want = xt::zeros<float>({2, 4});
  CHECK_TENSOR_NEAR(ex08::softmax_backward(y, dy), want, 1e-6, 0.0);
}

TEST_CASE("every row of dx sums to zero, each with its own dot product" *
          doctest::description("hint 1")) {
  const DMatrix x = {{0.3, -1.2, 2.0, 0.5}, {4.0, 4.1, -3.0, 0.0}, {0.0, 0.0, 0.0, 0.0}};
  const Matrix y = xt::cast<float>(softmax_rows(x));
  const Matrix dy = wiggly2(3, 4, 0.4, 2.0);
  const Matrix dx = ex08::softmax_backward(y, dy);
  REQUIRE(dx.shape() == y.shape());
  for (std::size_t r = 0; r < 3; ++r) {
    CAPTURE(r);
    double sum = 0.0;
    for (std::size_t c = 0; c < 4; ++c) sum += static_cast<double>(dx(r, c));
    CHECK(std::abs(sum) < 1e-6);
  }
}

TEST_CASE("it matches finite differences of L = sum dy * softmax(x)") {
  for (const std::size_t S : {1u, 2u, 7u}) {
    CAPTURE(S);
    const Matrix xf = wiggly2(3, S, 0.9, 3.0);
    const Matrix dy = wiggly2(3, S, 2.1, 1.5);
    std::vector<double> p = to_vector(xf);
    const auto loss = [&] {
      DMatrix xd = xt::zeros<double>({std::size_t{3}, S});
      std::copy(p.begin(), p.end(), xd.begin());
      return dot_all(dy, softmax_rows(xd));
    };
    const Matrix want = shaped_like(xf, numeric_gradient(p, loss));
    DMatrix xd = xt::cast<double>(xf);
    const Matrix y = xt::cast<float>(softmax_rows(xd));
    CHECK_TENSOR_NEAR(ex08::softmax_backward(y, dy), want, 1e-6, 1e-4);
  }
}

TEST_CASE("masked entries (y = 0) get exactly zero gradient, the rest match finite differences" *
          doctest::description("hint 2")) {
  // A causal (4, 4) softmax: row t sees columns 0..t.
  const std::size_t T = 4;
  std::vector<std::vector<bool>> masked(T, std::vector<bool>(T, false));
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t s = t + 1; s < T; ++s) masked[t][s] = true;
  const Matrix xf = wiggly2(T, T, 1.4, 2.0);
  const Matrix dy = wiggly2(T, T, 0.2, 1.0);  // nonzero above the diagonal too
  std::vector<double> p = to_vector(xf);
  const auto loss = [&] {
    DMatrix xd = xt::zeros<double>({T, T});
    std::copy(p.begin(), p.end(), xd.begin());
    return dot_all(dy, softmax_rows(xd, &masked));
  };
  const Matrix want = shaped_like(xf, numeric_gradient(p, loss));
  const Matrix y = xt::cast<float>(softmax_rows(xt::cast<double>(xf), &masked));
  const Matrix dx = ex08::softmax_backward(y, dy);
  CHECK_TENSOR_NEAR(dx, want, 1e-6, 1e-4);
  REQUIRE(dx.shape() == y.shape());
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t s = t + 1; s < T; ++s) {
      CAPTURE(t);
      CAPTURE(s);
      CHECK(dx(t, s) == 0.0f);
    }
}

TEST_CASE("y and dy of different shapes are rejected" * doctest::description("hint 2")) {
  const Matrix y = {{0.5f, 0.5f}};
  const Matrix dy = {{1.0f, 0.0f, 0.0f}};
  CHECK_THROWS_AS(ex08::softmax_backward(y, dy), std::invalid_argument);
}

TEST_CASE("y and dy with the same number of elements but another shape are rejected" *
          doctest::description("hint 2")) {
  // (2, 3) against (3, 2): six numbers each, but dy's rows are not y's rows.
  const Matrix y = {{0.2f, 0.3f, 0.5f}, {0.1f, 0.1f, 0.8f}};
  const Matrix dy = {{1.0f, 0.0f}, {0.5f, -1.0f}, {2.0f, 0.25f}};
  INFO("y is (2, 3), dy is (3, 2): the same size, not the same shape");
  CHECK_THROWS_AS(ex08::softmax_backward(y, dy), std::invalid_argument);
  CHECK_THROWS_AS(ex08::softmax_backward(dy, y), std::invalid_argument);
}
}

TEST_SUITE("ex08.2 Linear backward") {
TEST_CASE("two tokens worked by hand") {
  // x = [[1, 2], [3, -1]] (1, 2, 2), w = [[1, 0, 2], [-1, 1, 0]] (2, 3),
  // dy = [[1, 0, -1], [2, 1, 0]] (1, 2, 3).
  // dx = dy @ w^T: [1 - 2, -1 + 0] = [-1, -1];  [2 + 0, -2 + 1] = [2, -1].
  // dw = x^T @ dy: row 0 = 1 [1, 0, -1] + 3 [2, 1, 0] = [7, 3, -1];
  //                row 1 = 2 [1, 0, -1] - 1 [2, 1, 0] = [0, -1, -2].
  // db = [1 + 2, 0 + 1, -1 + 0] = [3, 1, -1].
  const Tensor<3> x = {{{1.0f, 2.0f}, {3.0f, -1.0f}}};
  const Matrix w = {{1.0f, 0.0f, 2.0f}, {-1.0f, 1.0f, 0.0f}};
  const Tensor<3> dy = {{{1.0f, 0.0f, -1.0f}, {2.0f, 1.0f, 0.0f}}};
  const attn::LinearGrads g = ex08::linear_backward(dy, x, w);
  const Tensor<3> dx = {{{-1.0f, -1.0f}, {2.0f, -1.0f}}};
  const Matrix dw = {{7.0f, 3.0f, -1.0f}, {0.0f, -1.0f, -2.0f}};
  const Vector db = {3.0f, 1.0f, -1.0f};
  CHECK_TENSOR_NEAR(g.dx, dx, 1e-6, 0.0);
  CHECK_TENSOR_NEAR(g.dw, dw, 1e-6, 0.0);
  CHECK_TENSOR_NEAR(g.db, db, 1e-6, 0.0);
}

TEST_CASE("dw and db add up the contributions of every row of every sequence") {
  // dy = 1 everywhere: db = B * T = 6 for every output, and dw(i, o) = sum of x(., ., i).
  const Tensor<3> x = wiggly3(2, 3, 2, 0.3, 1.0);
  const Matrix w = wiggly2(2, 4, 1.1, 1.0);
  const Tensor<3> dy = xt::ones<float>({2, 3, 4});
  const attn::LinearGrads g = ex08::linear_backward(dy, x, w);
  const Vector db = xt::full_like(Vector(xt::zeros<float>({4})), 6.0f);
  CHECK_TENSOR_NEAR(g.db, db, 1e-6, 0.0);
  Matrix dw = xt::zeros<float>({2, 4});
  for (std::size_t i = 0; i < 2; ++i) {
    double sum = 0.0;
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t t = 0; t < 3; ++t) sum += static_cast<double>(x(b, t, i));
    for (std::size_t o = 0; o < 4; ++o) dw(i, o) = static_cast<float>(sum);
  }
  CHECK_TENSOR_NEAR(g.dw, dw, 1e-6, 1e-6);
}

TEST_CASE("a (B, T, in) batch matches double-precision loops, in != out") {
  const std::size_t B = 2, T = 3, in = 5, out = 3;
  const Tensor<3> x = wiggly3(B, T, in, 0.5, 1.5);
  const Matrix w = wiggly2(in, out, 2.0, 0.8);
  const Tensor<3> dy = wiggly3(B, T, out, 1.0, 1.2);
  Double3 dx = xt::zeros<double>({B, T, in});
  DMatrix dw = xt::zeros<double>({in, out});
  std::vector<double> db(out, 0.0);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t o = 0; o < out; ++o) {
        const double g = static_cast<double>(dy(b, t, o));
        db[o] += g;
        for (std::size_t i = 0; i < in; ++i) {
          dx(b, t, i) += g * static_cast<double>(w(i, o));
          dw(i, o) += g * static_cast<double>(x(b, t, i));
        }
      }
  const attn::LinearGrads g = ex08::linear_backward(dy, x, w);
  CHECK_TENSOR_NEAR(g.dx, Tensor<3>(xt::cast<float>(dx)), 1e-5, 1e-5);
  CHECK_TENSOR_NEAR(g.dw, Matrix(xt::cast<float>(dw)), 1e-5, 1e-5);
  CHECK_TENSOR_NEAR(g.db, shaped_like(Vector(xt::zeros<float>({out})), db), 1e-5, 1e-5);
}

TEST_CASE("a single token with one input and one output: dx = dy w, dw = x dy, db = dy") {
  const Tensor<3> x = {{{3.0f}}};
  const Matrix w = {{-2.0f}};
  const Tensor<3> dy = {{{0.5f}}};
  const attn::LinearGrads g = ex08::linear_backward(dy, x, w);
  CHECK_TENSOR_NEAR(g.dx, Tensor<3>({{{-1.0f}}}), 0.0, 0.0);
  CHECK_TENSOR_NEAR(g.dw, Matrix({{1.5f}}), 0.0, 0.0);
  CHECK_TENSOR_NEAR(g.db, Vector({0.5f}), 0.0, 0.0);
}

TEST_CASE("shapes that do not fit together are rejected") {
  const Tensor<3> x = wiggly3(1, 2, 3, 0.0, 1.0);
  const Matrix w = wiggly2(3, 4, 0.0, 1.0);
  const Tensor<3> dy_wrong_out = wiggly3(1, 2, 5, 0.0, 1.0);  // out = 5, w has 4
  const Tensor<3> dy_wrong_t = wiggly3(1, 3, 4, 0.0, 1.0);    // T = 3, x has 2
  const Matrix w_wrong_in = wiggly2(2, 4, 0.0, 1.0);          // in = 2, x has 3
  CHECK_THROWS_AS(ex08::linear_backward(dy_wrong_out, x, w), std::invalid_argument);
  CHECK_THROWS_AS(ex08::linear_backward(dy_wrong_t, x, w), std::invalid_argument);
  CHECK_THROWS_AS(ex08::linear_backward(wiggly3(1, 2, 4, 0.0, 1.0), x, w_wrong_in),
                  std::invalid_argument);
}
}

TEST_SUITE("ex08.3 LayerNorm backward") {
TEST_CASE("one token worked by hand: the three terms") {
  // x = [1, 2, 6]: mean 3, var 14/3, rstd = sqrt(3/14), xhat = rstd [-2, -1, 3].
  // gamma = 1, dy = [1, 0, 0]: g = [1, 0, 0], mean(g) = 1/3, mean(g xhat) = -2 rstd / 3.
  // dx = rstd (g - 1/3 + xhat 2 rstd / 3) = rstd ([2/3, -1/3, -1/3] + (1/7) [-2, -1, 3])
  //    = rstd [8/21, -10/21, 2/21]                    (rstd^2 = 3/14, so (2/3) rstd^2 = 1/7)
  // dgamma = dy xhat = [-2 rstd, 0, 0], dbeta = dy. (eps = 0 keeps the fractions exact.)
  const Tensor<3> x = {{{1.0f, 2.0f, 6.0f}}};
  const Tensor<3> dy = {{{1.0f, 0.0f, 0.0f}}};
  const Vector gamma = {1.0f, 1.0f, 1.0f};
  const double rstd = std::sqrt(3.0 / 14.0);
  const attn::LayerNormGrads<3> g = ex08::layer_norm_backward(dy, x, gamma, 0.0f);
  const Tensor<3> dx = {
      {{static_cast<float>(rstd * 8.0 / 21.0), static_cast<float>(rstd * -10.0 / 21.0),
        static_cast<float>(rstd * 2.0 / 21.0)}}};
  CHECK_TENSOR_NEAR(g.dx, dx, 1e-6, 1e-6);
  CHECK_TENSOR_NEAR(g.dgamma, Vector({static_cast<float>(-2.0 * rstd), 0.0f, 0.0f}), 1e-6, 1e-6);
  CHECK_TENSOR_NEAR(g.dbeta, Vector({1.0f, 0.0f, 0.0f}), 1e-7, 0.0);
}

TEST_CASE("with two features the output is +-1 whatever x, so dx is 0") {
  // C = 2: xhat = [-1, 1] or [1, -1] for any two different numbers (up to eps), so moving x
  // cannot change y and dx vanishes, while dgamma and dbeta do not.
  const Tensor<3> x = {{{0.0f, 2.0f}, {5.0f, -1.0f}}};
  const Tensor<3> dy = {{{1.0f, 0.5f}, {-2.0f, 3.0f}}};
  const Vector gamma = {1.5f, -0.5f};
  const attn::LayerNormGrads<3> g = ex08::layer_norm_backward(dy, x, gamma, 0.0f);
  CHECK_TENSOR_NEAR(g.dx, Tensor<3>(xt::zeros<float>({1, 2, 2})), 1e-6, 0.0);
  // dgamma = [1 * -1 + -2 * 1, 0.5 * 1 + 3 * -1] = [-3, -2.5]; dbeta = [-1, 3.5].
  CHECK_TENSOR_NEAR(g.dgamma, Vector({-3.0f, -2.5f}), 1e-6, 1e-6);
  CHECK_TENSOR_NEAR(g.dbeta, Vector({-1.0f, 3.5f}), 1e-6, 0.0);
}

TEST_CASE("a (B, T, C) batch matches finite differences for x, gamma and beta") {
  const std::size_t B = 2, T = 3, C = 5;
  const Tensor<3> x = wiggly3(B, T, C, 0.4, 2.0);
  const Tensor<3> dy = wiggly3(B, T, C, 1.9, 1.0);
  const Vector gamma = wiggly1(C, 0.7, 0.5, 1.0);
  const LayerNormReference want = layer_norm_by_differences(dy, x, gamma);
  const attn::LayerNormGrads<3> g = ex08::layer_norm_backward(dy, x, gamma, 1e-5f);
  CHECK_TENSOR_NEAR(g.dx, want.dx, 1e-5, 1e-4);
  CHECK_TENSOR_NEAR(g.dgamma, want.dgamma, 1e-5, 1e-4);
  CHECK_TENSOR_NEAR(g.dbeta, want.dbeta, 1e-5, 1e-4);
}

TEST_CASE("tokens far from zero and of small spread still match finite differences") {
  // x = 1000 + 0.01 * wiggle: a naive E[x^2] - E[x]^2 in float loses every digit here.
  const std::size_t C = 6;
  Tensor<3> x = wiggly3(1, 2, C, 0.1, 0.01);
  x += 1000.0f;
  const Tensor<3> dy = wiggly3(1, 2, C, 2.6, 1.0);
  const Vector gamma = wiggly1(C, 1.3, 0.3, 1.0);
  const LayerNormReference want = layer_norm_by_differences(dy, x, gamma);
  const attn::LayerNormGrads<3> g = ex08::layer_norm_backward(dy, x, gamma, 1e-5f);
  // dx is about 100 (rstd ~ 140): compare relative to that size.
  CHECK_TENSOR_NEAR(g.dx, want.dx, 1e-2, 1e-3);
  CHECK_TENSOR_NEAR(g.dgamma, want.dgamma, 1e-4, 1e-3);
}

TEST_CASE("shapes that do not fit together are rejected") {
  const Tensor<3> x = wiggly3(1, 2, 4, 0.0, 1.0);
  const Tensor<3> dy_wrong = wiggly3(1, 2, 3, 0.0, 1.0);
  const Vector gamma4 = {1.0f, 1.0f, 1.0f, 1.0f};
  const Vector gamma3 = {1.0f, 1.0f, 1.0f};
  CHECK_THROWS_AS(ex08::layer_norm_backward(dy_wrong, x, gamma4, 1e-5f), std::invalid_argument);
  CHECK_THROWS_AS(ex08::layer_norm_backward(x, x, gamma3, 1e-5f), std::invalid_argument);
}
}

TEST_SUITE("ex08.4 Attention backward") {
TEST_CASE("a single query and key: out = v, so dv = dout and dq = dk = 0") {
  // T = S = 1: the softmax of one score is 1 whatever q and k, so only v matters.
  const Matrix q = {{0.3f, -2.0f}};
  const Matrix k = {{1.5f, 0.25f}};
  const Matrix v = {{4.0f, -1.0f}};
  const Matrix dout = {{0.5f, 2.0f}};
  for (const bool causal : {false, true}) {
    CAPTURE(causal);
    const ex08::AttentionGrads g = ex08::attention_backward(dout, q, k, v, causal);
    CHECK_TENSOR_NEAR(g.dv, dout, 1e-7, 0.0);
    CHECK_TENSOR_NEAR(g.dq, Matrix(xt::zeros<float>({1, 2})), 1e-7, 0.0);
    CHECK_TENSOR_NEAR(g.dk, Matrix(xt::zeros<float>({1, 2})), 1e-7, 0.0);
  }
}

TEST_CASE("two keys with hs = 1 worked by hand") {
  // q = [[1]], k = [[0], [ln 3]], v = [[1], [3]], dout = [[1]]: scores [0, ln 3], P = [1/4, 3/4]
  // (hs = 1, no scaling), out = 1/4 + 9/4 = 2.5.
  // dv = P^T dout = [[0.25], [0.75]];  dP = dout v^T = [1, 3];  dP . P = 2.5;
  // dS = P (dP - 2.5) = [0.25 * -1.5, 0.75 * 0.5] = [-0.375, 0.375];
  // dq = dS k = 0.375 ln 3;  dk = dS^T q = [[-0.375], [0.375]].
  const Matrix q = {{1.0f}};
  const Matrix k = {{0.0f}, {static_cast<float>(std::log(3.0))}};
  const Matrix v = {{1.0f}, {3.0f}};
  const Matrix dout = {{1.0f}};
  const ex08::AttentionGrads g = ex08::attention_backward(dout, q, k, v, false);
  CHECK_TENSOR_NEAR(g.dv, Matrix({{0.25f}, {0.75f}}), 1e-6, 1e-6);
  CHECK_TENSOR_NEAR(g.dq, Matrix({{static_cast<float>(0.375 * std::log(3.0))}}), 1e-6, 1e-6);
  CHECK_TENSOR_NEAR(g.dk, Matrix({{-0.375f}, {0.375f}}), 1e-6, 1e-6);
}

TEST_CASE("a causal head matches finite differences for q, k and v") {
  const std::size_t T = 5, hs = 4;
  const Matrix q = wiggly2(T, hs, 0.2, 1.0);
  const Matrix k = wiggly2(T, hs, 1.0, 1.0);
  const Matrix v = wiggly2(T, hs, 1.8, 1.0);
  const Matrix dout = wiggly2(T, hs, 2.6, 1.0);
  const ex08::AttentionGrads want = attention_by_differences(dout, q, k, v, true);
  const ex08::AttentionGrads g = ex08::attention_backward(dout, q, k, v, true);
  CHECK_TENSOR_NEAR(g.dq, want.dq, 1e-5, 1e-4);
  CHECK_TENSOR_NEAR(g.dk, want.dk, 1e-5, 1e-4);
  CHECK_TENSOR_NEAR(g.dv, want.dv, 1e-5, 1e-4);
}

TEST_CASE("cross-attention without a mask (S != T) matches finite differences") {
  const std::size_t T = 3, S = 4, hs = 2;
  const Matrix q = wiggly2(T, hs, 0.5, 1.5);
  const Matrix k = wiggly2(S, hs, 1.3, 1.5);
  const Matrix v = wiggly2(S, hs, 2.1, 1.0);
  const Matrix dout = wiggly2(T, hs, 2.9, 1.0);
  const ex08::AttentionGrads want = attention_by_differences(dout, q, k, v, false);
  const ex08::AttentionGrads g = ex08::attention_backward(dout, q, k, v, false);
  CHECK_TENSOR_NEAR(g.dq, want.dq, 1e-5, 1e-4);
  CHECK_TENSOR_NEAR(g.dk, want.dk, 1e-5, 1e-4);
  CHECK_TENSOR_NEAR(g.dv, want.dv, 1e-5, 1e-4);
}

TEST_CASE("causal: a gradient at the first query reaches only the first key and value") {
  // Query 0 sees key 0 alone (P row 0 = [1, 0, 0, 0]), so keys and values 1..3 get exactly 0,
  // and dq row 0 is 0 too (one key: the softmax is 1 whatever the score).
  const std::size_t T = 4, hs = 3;
  const Matrix q = wiggly2(T, hs, 0.7, 1.0);
  const Matrix k = wiggly2(T, hs, 1.4, 1.0);
  const Matrix v = wiggly2(T, hs, 2.2, 1.0);
  Matrix dout = xt::zeros<float>({T, hs});
  dout(0, 0) = 1.0f;
  dout(0, 2) = -2.0f;
  const ex08::AttentionGrads g = ex08::attention_backward(dout, q, k, v, true);
  REQUIRE(g.dk.shape() == k.shape());
  REQUIRE(g.dv.shape() == v.shape());
  CHECK(g.dv(0, 0) == 1.0f);
  CHECK(g.dv(0, 2) == -2.0f);
  for (std::size_t s = 1; s < T; ++s)
    for (std::size_t d = 0; d < hs; ++d) {
      CAPTURE(s);
      CHECK(g.dk(s, d) == 0.0f);
      CHECK(g.dv(s, d) == 0.0f);
    }
  CHECK_TENSOR_NEAR(g.dq, Matrix(xt::zeros<float>({T, hs})), 1e-7, 0.0);
}

TEST_CASE("shapes that do not fit together are rejected") {
  const Matrix q = wiggly2(3, 2, 0.0, 1.0);
  const Matrix k4 = wiggly2(4, 2, 0.0, 1.0);
  const Matrix v4 = wiggly2(4, 2, 0.0, 1.0);
  const Matrix k_hs3 = wiggly2(4, 3, 0.0, 1.0);
  const Matrix dout = wiggly2(3, 2, 0.0, 1.0);
  CHECK_THROWS_AS(ex08::attention_backward(dout, q, k_hs3, v4, false), std::invalid_argument);
  CHECK_THROWS_AS(ex08::attention_backward(dout, q, k4, wiggly2(3, 2, 0.0, 1.0), false),
                  std::invalid_argument);
  CHECK_THROWS_AS(ex08::attention_backward(wiggly2(2, 2, 0.0, 1.0), q, k4, v4, false),
                  std::invalid_argument);
  CHECK_THROWS_AS(ex08::attention_backward(dout, q, k4, v4, true), std::invalid_argument);
}
}

TEST_SUITE("ex08.5 Central differences") {

TEST_CASE("a quadratic's gradient comes out exact, whatever h" * doctest::description("hint 2")) {
  // f(x) = 3 x0^2 + x0 x1 - 2 x1^2 + 5 x2: gradient (6 x0 + x1, x0 - 4 x1, 5). A central
  // difference is exact on a quadratic; a forward difference is off by h times the curvature.
  const auto f = [](std::span<const double> x) {
    return 3.0 * x[0] * x[0] + x[0] * x[1] - 2.0 * x[1] * x[1] + 5.0 * x[2];
  };
  const std::vector<double> x = {0.5, -1.25, 2.0};
  const double want[] = {6.0 * 0.5 - 1.25, 0.5 + 4.0 * 1.25, 5.0};
  for (const double h : {1e-2, 1e-3}) {
    const std::vector<double> g = ex08::central_differences(f, x, h);
    REQUIRE_MESSAGE(g.size() == 3, "expected one derivative per coordinate (3), got " << g.size());
    for (std::size_t i = 0; i < 3; ++i) {
      INFO("f = 3 x0^2 + x0 x1 - 2 x1^2 + 5 x2 at (0.5, -1.25, 2), h = "
           << h << ": df/dx" << i << " = " << want[i]
           << " exactly (a central difference is exact on a quadratic)");
      CHECK(g[i] == doctest::Approx(want[i]).epsilon(1e-9));
    }
  }
}

TEST_CASE("the error of sin's derivative shrinks like h^2" * doctest::description("hint 1")) {
  // d/dx sin(x) = cos(x); (sin(x + h) - sin(x - h)) / 2h = cos(x) sin(h) / h exactly.
  const auto f = [](std::span<const double> x) { return std::sin(x[0]); };
  const std::vector<double> x = {0.7};
  for (const double h : {1e-1, 1e-2}) {
    const std::vector<double> g = ex08::central_differences(f, x, h);
    REQUIRE(g.size() == 1);
    const double want = std::cos(0.7) * std::sin(h) / h;
    INFO("sin at 0.7, h = " << h << ": expected " << want << " (cos 0.7 = " << std::cos(0.7)
                            << ", times 1 - h^2/6)");
    CHECK(g[0] == doctest::Approx(want).epsilon(1e-9));
  }
}

TEST_CASE("every call sees exactly one coordinate moved, the others exactly as given" *
          doctest::description("hint 2")) {
  // x values for which x + h - h is not x in floating point: a coordinate restored by
  // subtracting h is left slightly off, and the later calls see two coordinates moved.
  const std::vector<double> x = {0.1, 0.7, 1.3, -2.9, 1e-3};
  const double h = 1e-3;
  std::size_t calls = 0, bad_calls = 0;
  const auto f = [&](std::span<const double> at) {
    ++calls;
    std::size_t moved = 0;
    double sum = 0.0;
    for (std::size_t i = 0; i < at.size() && i < x.size(); ++i) {
      if (at[i] != x[i]) ++moved;
      sum += static_cast<double>(i + 1) * at[i];
    }
    if (at.size() != x.size() || moved != 1) ++bad_calls;
    return sum;
  };
  const std::vector<double> g = ex08::central_differences(f, x, h);
  INFO("5 coordinates: expected 10 calls of f, each with exactly one coordinate moved; got "
       << calls << " calls, " << bad_calls << " of them with another number of moved coordinates");
  CHECK(calls == 10);
  CHECK(bad_calls == 0);
  REQUIRE(g.size() == 5);
  for (std::size_t i = 0; i < 5; ++i) {
    CAPTURE(i);
    CHECK(g[i] == doctest::Approx(static_cast<double>(i + 1)).epsilon(1e-9));
  }
}

TEST_CASE("no coordinates give an empty gradient; h not finite or not > 0 is rejected" *
          doctest::description("hint 2")) {
  std::size_t calls = 0;
  const auto f = [&calls](std::span<const double> x) {
    ++calls;
    return x.empty() ? 0.0 : x[0];
  };
  CHECK(ex08::central_differences(f, std::vector<double>{}, 1e-3).empty());
  CHECK(calls == 0);
  const std::vector<double> x = {1.0};
  for (const double h : {0.0, -1e-3, std::numeric_limits<double>::infinity(),
                         std::numeric_limits<double>::quiet_NaN()}) {
    CAPTURE(h);
    CHECK_THROWS_AS(ex08::central_differences(f, x, h), std::invalid_argument);
  }
}

}  // TEST_SUITE

TEST_SUITE("ex08.6 Tied embedding backward") {

// Both uses of the table, by plain double loops: the scatter of dx by token id and
// dlogits^T @ h; dh = dlogits @ wte.
void tied_by_hand(const Tensor<3>& dx, const xt::xtensor<int, 2>& tokens, const Matrix& dlogits,
                  const Matrix& h, const Matrix& wte, Matrix& dwte, Matrix& dh) {
  const std::size_t V = wte.shape()[0], C = wte.shape()[1], N = h.shape()[0];
  dwte = xt::zeros<float>({V, C});
  dh = xt::zeros<float>({N, C});
  for (std::size_t v = 0; v < V; ++v)
    for (std::size_t c = 0; c < C; ++c) {
      double acc = 0.0;
      for (std::size_t b = 0; b < tokens.shape()[0]; ++b)
        for (std::size_t t = 0; t < tokens.shape()[1]; ++t)
          if (tokens(b, t) == static_cast<int>(v)) acc += static_cast<double>(dx(b, t, c));
      for (std::size_t r = 0; r < N; ++r)
        acc += static_cast<double>(dlogits(r, v)) * static_cast<double>(h(r, c));
      dwte(v, c) = static_cast<float>(acc);
    }
  for (std::size_t r = 0; r < N; ++r)
    for (std::size_t c = 0; c < C; ++c) {
      double acc = 0.0;
      for (std::size_t v = 0; v < V; ++v)
        acc += static_cast<double>(dlogits(r, v)) * static_cast<double>(wte(v, c));
      dh(r, c) = static_cast<float>(acc);
    }
}

TEST_CASE("one token, one head row, worked by hand" * doctest::description("hint 1")) {
  // V 2, C 2, token 1 at the only position; dx = (1, 2); h = (3, -1); dlogits = (0.5, -2);
  // wte = [[1, 0], [2, 4]].
  //   lookup: row 1 gets (1, 2); head: dwte[v] += dlogits[v] h -> row 0 (1.5, -0.5), row 1
  //   (-6, 2); dh = 0.5 (1, 0) - 2 (2, 4) = (-3.5, -8).
  Tensor<3> dx(std::array<std::size_t, 3>{1, 1, 2});
  dx(0, 0, 0) = 1.0f;
  dx(0, 0, 1) = 2.0f;
  xt::xtensor<int, 2> tokens(std::array<std::size_t, 2>{1, 1});
  tokens(0, 0) = 1;
  const Matrix h = {{3.0f, -1.0f}};
  const Matrix dlogits = {{0.5f, -2.0f}};
  const Matrix wte = {{1.0f, 0.0f}, {2.0f, 4.0f}};
  const attn::TiedEmbeddingGrads g = ex08::tied_embedding_backward(dx, tokens, dlogits, h, wte);
  const Matrix want_dwte = {{1.5f, -0.5f}, {-5.0f, 4.0f}};
  const Matrix want_dh = {{-3.5f, -8.0f}};
  INFO("dwte = the lookup's dx on row 1 (1, 2) + the head's dlogits^T @ h");
  CHECK_TENSOR_NEAR(g.dwte, want_dwte, 1e-6, 1e-6);
  CHECK_TENSOR_NEAR(g.dh, want_dh, 1e-6, 1e-6);
}

TEST_CASE("a token used at several positions collects all of them, unused rows only the head" *
          doctest::description("hint 2")) {
  // V 5, C 3; tokens use 1 three times and 3 once; 0, 2 and 4 are never looked up.
  const Tensor<3> dx = wiggly3(2, 2, 3, 0.3, 1.0);
  const xt::xtensor<int, 2> tokens = {{1, 3}, {1, 1}};
  const Matrix h = wiggly2(4, 3, 1.1, 0.8);
  const Matrix dlogits = wiggly2(4, 5, 2.2, 0.5);
  const Matrix wte = wiggly2(5, 3, 0.7, 1.2);
  Matrix want_dwte, want_dh;
  tied_by_hand(dx, tokens, dlogits, h, wte, want_dwte, want_dh);
  const attn::TiedEmbeddingGrads g = ex08::tied_embedding_backward(dx, tokens, dlogits, h, wte);
  INFO("token 1 at 3 positions: its row collects 3 rows of dx plus the head's part");
  CHECK_TENSOR_NEAR(g.dwte, want_dwte, 1e-5, 1e-5);
  CHECK_TENSOR_NEAR(g.dh, want_dh, 1e-5, 1e-5);
}

TEST_CASE(
    "the gradient of L = sum(dx * lookup) + sum(dlogits * h @ wte^T), by central "
    "differences" *
    doctest::description("hint 2")) {
  // L is linear in wte and in h: a central difference gives the exact gradient of each element.
  const Tensor<3> dx = wiggly3(2, 3, 4, 0.9, 1.0);
  const xt::xtensor<int, 2> tokens = {{0, 2, 2}, {5, 0, 1}};
  const Matrix h = wiggly2(6, 4, 0.2, 1.0);
  const Matrix dlogits = wiggly2(6, 6, 1.4, 0.7);
  const Matrix wte = wiggly2(6, 4, 2.5, 1.0);
  const auto loss = [&](const Matrix& table, const Matrix& hidden) {
    double L = 0.0;
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t c = 0; c < 4; ++c)
          L += static_cast<double>(dx(b, t, c)) *
               static_cast<double>(table(static_cast<std::size_t>(tokens(b, t)), c));
    for (std::size_t r = 0; r < 6; ++r)
      for (std::size_t v = 0; v < 6; ++v) {
        double logit = 0.0;
        for (std::size_t c = 0; c < 4; ++c)
          logit += static_cast<double>(hidden(r, c)) * static_cast<double>(table(v, c));
        L += static_cast<double>(dlogits(r, v)) * logit;
      }
    return L;
  };
  const attn::TiedEmbeddingGrads g = ex08::tied_embedding_backward(dx, tokens, dlogits, h, wte);
  REQUIRE(g.dwte.shape() == wte.shape());
  REQUIRE(g.dh.shape() == h.shape());
  const float step = 0.125f;  // exact in float: wte +- step is exact for these magnitudes
  for (std::size_t v = 0; v < 6; ++v)
    for (std::size_t c = 0; c < 4; ++c) {
      Matrix up = wte, down = wte;
      up(v, c) += step;
      down(v, c) -= step;
      const double numeric = (loss(up, h) - loss(down, h)) /
                             (static_cast<double>(up(v, c)) - static_cast<double>(down(v, c)));
      INFO("dL/dwte[" << v << ", " << c << "]");
      CHECK(static_cast<double>(g.dwte(v, c)) ==
            doctest::Approx(numeric).epsilon(1e-4).scale(1e-3));
    }
  for (std::size_t r = 0; r < 6; ++r)
    for (std::size_t c = 0; c < 4; ++c) {
      Matrix up = h, down = h;
      up(r, c) += step;
      down(r, c) -= step;
      const double numeric = (loss(wte, up) - loss(wte, down)) /
                             (static_cast<double>(up(r, c)) - static_cast<double>(down(r, c)));
      INFO("dL/dh[" << r << ", " << c << "]");
      CHECK(static_cast<double>(g.dh(r, c)) == doctest::Approx(numeric).epsilon(1e-4).scale(1e-3));
    }
}

TEST_CASE("shapes that do not fit and ids outside [0, V) are rejected" *
          doctest::description("hint 2")) {
  const Tensor<3> dx = wiggly3(1, 2, 3, 0.3, 1.0);
  const xt::xtensor<int, 2> tokens = {{0, 3}};
  const Matrix h = wiggly2(2, 3, 1.1, 0.8);
  const Matrix dlogits = wiggly2(2, 4, 2.2, 0.5);
  const Matrix wte = wiggly2(4, 3, 0.7, 1.2);
  CHECK_NOTHROW(ex08::tied_embedding_backward(dx, tokens, dlogits, h, wte));
  const xt::xtensor<int, 2> out_of_range = {{0, 4}}, negative = {{-1, 0}}, longer = {{0, 1, 2}};
  CHECK_THROWS_AS(ex08::tied_embedding_backward(dx, out_of_range, dlogits, h, wte),
                  std::invalid_argument);
  CHECK_THROWS_AS(ex08::tied_embedding_backward(dx, negative, dlogits, h, wte),
                  std::invalid_argument);
  CHECK_THROWS_AS(ex08::tied_embedding_backward(dx, longer, dlogits, h, wte),
                  std::invalid_argument);
  CHECK_THROWS_AS(
      ex08::tied_embedding_backward(wiggly3(1, 2, 2, 0.3, 1.0), tokens, dlogits, h, wte),
      std::invalid_argument);
  CHECK_THROWS_AS(ex08::tied_embedding_backward(dx, tokens, wiggly2(2, 5, 2.2, 0.5), h, wte),
                  std::invalid_argument);
  CHECK_THROWS_AS(ex08::tied_embedding_backward(dx, tokens, wiggly2(3, 4, 2.2, 0.5), h, wte),
                  std::invalid_argument);
}

}  // TEST_SUITE
