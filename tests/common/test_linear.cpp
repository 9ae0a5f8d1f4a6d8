// Tests for attn/fast/linear.hpp: the BLAS products (attn/fast/gemm.hpp, which linear.hpp names
// attn::fast::gemm, attn::fast::gemm_strided and attn::fast::matmul_blas) and the reference linear
// layer (chapters 04-08); test_fast_ops.cpp checks attn::fast::linear against it. Every BLAS result
// is compared with the plain-loop attn::matmul or a double-precision loop, never with itself: odd
// shapes (1x1, vectors, K = 1), both transposes, alpha and beta, empty sizes, bias broadcasting,
// and the shape errors.
#include <doctest/doctest.h>

#include <array>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attn/ops/linear.hpp"
#include "attn/ops/matmul.hpp"
#include "attn/core/random.hpp"
#include "attn/core/threads.hpp"
#include "attn/train/gradcheck.hpp"
#include "gradcheck_helpers.hpp"
#include "attn/fast/gemm.hpp"
#include "test_helpers.hpp"

namespace {

// The stored transpose of a, by two loops.
attn::Matrix transposed(const attn::Matrix& a) {
  attn::Matrix t(attn::Matrix::shape_type{a.shape()[1], a.shape()[0]});
  for (std::size_t i = 0; i < a.shape()[0]; ++i)
    for (std::size_t j = 0; j < a.shape()[1]; ++j) t(j, i) = a(i, j);
  return t;
}

// x (B, T, in) @ w (in, out) + b, in double.
attn::Tensor<3> reference_linear(const attn::Tensor<3>& x, const attn::Matrix& w,
                                 const std::vector<double>& bias) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], in = w.shape()[0], out = w.shape()[1];
  attn::Tensor<3> y(attn::Tensor<3>::shape_type{B, T, out});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t j = 0; j < out; ++j) {
        double s = bias.empty() ? 0.0 : bias[j];
        for (std::size_t i = 0; i < in; ++i)
          s += static_cast<double>(x(b, t, i)) * static_cast<double>(w(i, j));
        y(b, t, j) = static_cast<float>(s);
      }
  return y;
}

using Shape3 = std::array<std::size_t, 3>;  // M, K, N

}  // namespace

TEST_SUITE("linear") {

TEST_CASE("gemm matches the plain matmul on odd shapes, with and without transposes") {
  attn::Rng rng(4);
  for (const auto [M, K, N] : {Shape3{1, 1, 1}, Shape3{3, 5, 2}, Shape3{7, 1, 9}, Shape3{1, 40, 1},
                               Shape3{17, 33, 16}, Shape3{65, 70, 3}}) {
    const attn::Matrix a = attn::randn(rng, M, K);
    const attn::Matrix b = attn::randn(rng, K, N);
    const attn::Matrix want = attn::matmul(a, b);  // (M, K) @ (K, N) -> (M, N)
    const attn::Matrix a_t = transposed(a);        // stored (K, M)
    const attn::Matrix b_t = transposed(b);        // stored (N, K)
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        CAPTURE(M);
        CAPTURE(K);
        CAPTURE(N);
        CAPTURE(ta);
        CAPTURE(tb);
        attn::Matrix got(attn::Matrix::shape_type{M, N});
        attn::fast::gemm(M, N, K, 1.0f, (ta ? a_t : a).data(), ta, (tb ? b_t : b).data(), tb, 0.0f,
                         got.data());
        CHECK_TENSOR_NEAR(got, want, 1e-5, 1e-5);
      }
    }
  }
}

TEST_CASE("a big gemm split into row blocks over 1 to 3 threads: same bits, transposes and beta") {
  // 2 * 301 * 200 * 90 multiply-adds is above the split threshold; 301 rows do not divide evenly.
  attn::Rng rng(6);
  const std::size_t M = 301, K = 200, N = 90;
  const attn::Matrix a = attn::randn(rng, M, K);
  const attn::Matrix b = attn::randn(rng, K, N);
  const attn::Matrix c0 = attn::randn(rng, M, N);
  const attn::Matrix a_t = transposed(a);
  const attn::Matrix b_t = transposed(b);
  const attn::Matrix ab = attn::matmul(a, b);
  const std::size_t saved = attn::num_threads();
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      auto run = [&](std::size_t threads) {
        attn::set_num_threads(threads);
        attn::Matrix got = c0;
        attn::fast::gemm(M, N, K, 0.5f, (ta ? a_t : a).data(), ta, (tb ? b_t : b).data(), tb, 2.0f,
                         got.data());
        return got;
      };
      const attn::Matrix one = run(1);
      CHECK_TENSOR_NEAR(one, attn::Matrix(0.5f * ab + 2.0f * c0), 1e-4, 1e-5);
      CHECK_TENSOR_NEAR(run(2), one, 0.0, 0.0);
      CHECK_TENSOR_NEAR(run(3), one, 0.0, 0.0);
    }
  }
  attn::set_num_threads(saved);
}

TEST_CASE("a big gemm with few rows is cut into column tiles too: same bits on 1 to 3 threads") {
  // 200 rows (2 row blocks) and 1100 columns (3 tiles of at most 512): a weight gradient's shape.
  attn::Rng rng(8);
  const std::size_t M = 200, K = 64, N = 1100;
  const attn::Matrix a_t = attn::randn(rng, K, M);  // stored (K, M), read transposed: x^T
  const attn::Matrix b = attn::randn(rng, K, N);
  const attn::Matrix c0 = attn::randn(rng, M, N);
  const attn::Matrix want = attn::matmul(transposed(a_t), b);
  const std::size_t saved = attn::num_threads();
  auto run = [&](std::size_t threads) {
    attn::set_num_threads(threads);
    attn::Matrix got = c0;
    attn::fast::gemm(M, N, K, 1.0f, a_t.data(), true, b.data(), false, 1.0f, got.data());
    return got;
  };
  const attn::Matrix one = run(1);
  CHECK_TENSOR_NEAR(one, attn::Matrix(want + c0), 1e-4, 1e-5);
  CHECK_TENSOR_NEAR(run(2), one, 0.0, 0.0);
  CHECK_TENSOR_NEAR(run(3), one, 0.0, 0.0);
  attn::set_num_threads(saved);
}

TEST_CASE("gemm_many: each job's result is gemm_strided's alone, bit for bit, on 1 to 3 threads") {
  attn::Rng rng(9);
  // A small job (one call), a big one in row blocks, one in column tiles, and an empty sum.
  const attn::Matrix a1 = attn::randn(rng, 5, 7), b1 = attn::randn(rng, 7, 3);
  const attn::Matrix a2 = attn::randn(rng, 301, 200), b2 = attn::randn(rng, 90, 200);
  const attn::Matrix a3 = attn::randn(rng, 64, 200), b3 = attn::randn(rng, 64, 1100);
  const attn::Matrix c1 = attn::randn(rng, 5, 3), c2 = attn::randn(rng, 301, 90),
                     c3 = attn::randn(rng, 200, 1100), c4 = attn::randn(rng, 4, 6);
  // Alone, one after another.
  attn::Matrix w1 = c1, w2 = c2, w3 = c3, w4 = c4;
  attn::fast::gemm(5, 3, 7, 1.0f, a1.data(), false, b1.data(), false, 0.0f, w1.data());
  attn::fast::gemm(301, 90, 200, 0.5f, a2.data(), false, b2.data(), true, 1.0f, w2.data());
  attn::fast::gemm(200, 1100, 64, 1.0f, a3.data(), true, b3.data(), false, 1.0f, w3.data());
  attn::fast::gemm_strided(4, 6, 0, 1.0f, a1.data(), 1, false, b1.data(), 6, false, 3.0f, w4.data(),
                           6);
  const std::size_t saved = attn::num_threads();
  for (std::size_t threads : {1, 2, 3}) {
    CAPTURE(threads);
    attn::set_num_threads(threads);
    attn::Matrix g1 = c1, g2 = c2, g3 = c3, g4 = c4;
    const attn::fast::GemmJob jobs[] = {
        {5, 3, 7, 1.0f, a1.data(), 7, false, b1.data(), 3, false, 0.0f, g1.data(), 3},
        {301, 90, 200, 0.5f, a2.data(), 200, false, b2.data(), 200, true, 1.0f, g2.data(), 90},
        {200, 1100, 64, 1.0f, a3.data(), 200, true, b3.data(), 1100, false, 1.0f, g3.data(), 1100},
        {4, 6, 0, 1.0f, a1.data(), 1, false, b1.data(), 6, false, 3.0f, g4.data(), 6}};
    attn::fast::gemm_many(jobs);
    CHECK_TENSOR_NEAR(g1, w1, 0.0, 0.0);
    CHECK_TENSOR_NEAR(g2, w2, 0.0, 0.0);
    CHECK_TENSOR_NEAR(g3, w3, 0.0, 0.0);
    CHECK_TENSOR_NEAR(g4, attn::Matrix(3.0f * c4), 0.0, 0.0);
  }
  attn::set_num_threads(saved);
  CHECK_TENSOR_NEAR(w3, attn::Matrix(attn::matmul(transposed(a3), b3) + c3), 1e-4, 1e-5);
  std::vector<attn::fast::GemmJob> too_many(9, attn::fast::GemmJob{});
  CHECK_THROWS_WITH_AS(attn::fast::gemm_many(too_many),
                       "attn::fast::gemm_many: at most 8 jobs at a time", std::invalid_argument);
}

TEST_CASE("gemm_strided works on blocks inside wider buffers and leaves the rest alone") {
  // a: columns 2..5 of a (7, 9) buffer; b: columns 1..3 of a (4, 5) buffer (or its transpose);
  // out: columns 3..5 of a (7, 8) buffer. Both the one-call and the split path (big M).
  attn::Rng rng(7);
  for (const std::size_t M : {std::size_t{7}, std::size_t{1000}}) {
    const std::size_t K = 4, N = 3;
    const std::size_t lda = 9, ldc = 8;
    const attn::Matrix a_buf = attn::randn(rng, M, lda);
    const attn::Matrix b_buf = attn::randn(rng, K, 5);
    const attn::Matrix b_t_buf = transposed(b_buf);  // (5, K)
    const attn::Matrix a = xt::view(a_buf, xt::all(), xt::range(2, 2 + K));
    const attn::Matrix b = xt::view(b_buf, xt::all(), xt::range(1, 1 + N));
    const attn::Matrix want = attn::matmul(a, b);  // (M, K) @ (K, N)
    for (const bool tb : {false, true}) {
      CAPTURE(M);
      CAPTURE(tb);
      attn::Matrix out_buf = attn::randn(rng, M, ldc);
      const attn::Matrix before = out_buf;
      // b^T stored: rows 1..3 of the (5, K) buffer, K floats apart.
      const float* b_ptr = tb ? b_t_buf.data() + 1 * K : b_buf.data() + 1;
      attn::fast::gemm_strided(M, N, K, 1.0f, a_buf.data() + 2, lda, false, b_ptr, tb ? K : 5, tb,
                               0.0f, out_buf.data() + 3, ldc);
      const attn::Matrix got = xt::view(out_buf, xt::all(), xt::range(3, 3 + N));
      CHECK_TENSOR_NEAR(got, want, 1e-5, 1e-5);
      // Columns outside the block are untouched.
      const attn::Matrix left = xt::view(out_buf, xt::all(), xt::range(0, 3));
      const attn::Matrix right = xt::view(out_buf, xt::all(), xt::range(6, 8));
      CHECK_TENSOR_NEAR(left, attn::Matrix(xt::view(before, xt::all(), xt::range(0, 3))), 0.0, 0.0);
      CHECK_TENSOR_NEAR(right, attn::Matrix(xt::view(before, xt::all(), xt::range(6, 8))), 0.0,
                        0.0);
    }
  }
}

TEST_CASE("the thread count: at least 1 by default, settable, 0 refused") {
  const std::size_t saved = attn::num_threads();
  CHECK(saved >= 1);
  attn::set_num_threads(3);
  CHECK(attn::num_threads() == 3);
  CHECK_THROWS_WITH_AS(attn::set_num_threads(0),
                       "attn::set_num_threads: n = 0, expected at least 1", std::invalid_argument);
  CHECK(attn::num_threads() == 3);
  attn::set_num_threads(saved);
}

TEST_CASE("gemm computes alpha * a @ b + beta * out") {
  attn::Rng rng(5);
  const attn::Matrix a = attn::randn(rng, 4, 6);
  const attn::Matrix b = attn::randn(rng, 6, 3);
  const attn::Matrix c0 = attn::randn(rng, 4, 3);
  attn::Matrix got = c0;
  attn::fast::gemm(4, 3, 6, 0.5f, a.data(), false, b.data(), false, -2.0f, got.data());
  const attn::Matrix ab = attn::matmul(a, b);
  attn::Matrix want(attn::Matrix::shape_type{4, 3});
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 3; ++j) want(i, j) = 0.5f * ab(i, j) - 2.0f * c0(i, j);
  CHECK_TENSOR_NEAR(got, want, 1e-5, 1e-5);
}

TEST_CASE("gemm with beta = 0 ignores whatever the output held, even NaN") {
  const attn::Matrix a = {{1.0f, 2.0f}};
  const attn::Matrix b = {{3.0f}, {4.0f}};
  attn::Matrix out = {{std::numeric_limits<float>::quiet_NaN()}};
  attn::fast::gemm(1, 1, 2, 1.0f, a.data(), false, b.data(), false, 0.0f, out.data());
  CHECK(out(0, 0) == 11.0f);
}

TEST_CASE("gemm with an empty inner dimension scales the output by beta") {
  attn::Matrix out = {{1.0f, 2.0f}, {3.0f, 4.0f}};
  attn::fast::gemm(2, 2, 0, 1.0f, nullptr, false, nullptr, false, 3.0f, out.data());
  const attn::Matrix tripled = {{3.0f, 6.0f}, {9.0f, 12.0f}};
  CHECK_TENSOR_NEAR(out, tripled, 0.0, 0.0);
  out(0, 0) = std::numeric_limits<float>::quiet_NaN();
  attn::fast::gemm(2, 2, 0, 1.0f, nullptr, false, nullptr, false, 0.0f, out.data());
  const attn::Matrix zeros = xt::zeros<float>({2, 2});
  CHECK_TENSOR_NEAR(out, zeros, 0.0, 0.0);
}

TEST_CASE("matmul_blas matches the plain matmul and a double loop") {
  attn::Rng rng(6);
  for (const auto [M, K, N] :
       {Shape3{1, 1, 1}, Shape3{3, 5, 2}, Shape3{2, 1, 5}, Shape3{31, 64, 9}}) {
    const attn::Matrix a = attn::randn(rng, M, K);
    const attn::Matrix b = attn::randn(rng, K, N);
    attn::Tensor<3> a3(attn::Tensor<3>::shape_type{1, M, K});
    std::copy(a.begin(), a.end(), a3.begin());
    const attn::Tensor<3> want_d = reference_linear(a3, b, {});
    const attn::Matrix got = attn::fast::matmul_blas(a, b);
    CAPTURE(M);
    CAPTURE(K);
    CAPTURE(N);
    CHECK_TENSOR_NEAR(got, attn::matmul(a, b), 1e-5, 1e-5);
    const attn::Matrix want = xt::view(want_d, 0);
    CHECK_TENSOR_NEAR(got, want, 1e-5, 1e-5);
  }
}

TEST_CASE("matmul_blas: a hand-worked product, and an empty inner dimension gives zeros") {
  const attn::Matrix a = {{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}};
  const attn::Matrix b = {{7.0f, 8.0f}, {9.0f, 10.0f}, {11.0f, 12.0f}};
  const attn::Matrix want = {{58.0f, 64.0f}, {139.0f, 154.0f}};
  CHECK_TENSOR_NEAR(attn::fast::matmul_blas(a, b), want, 0.0, 0.0);
  const attn::Matrix e1(attn::Matrix::shape_type{2, 0});
  const attn::Matrix e2(attn::Matrix::shape_type{0, 3});
  const attn::Matrix zeros = xt::zeros<float>({2, 3});
  CHECK_TENSOR_NEAR(attn::fast::matmul_blas(e1, e2), zeros, 0.0, 0.0);
}

TEST_CASE("matmul_blas with mismatched inner dimensions names both shapes") {
  const attn::Matrix a = xt::zeros<float>({2, 3});
  const attn::Matrix b = xt::zeros<float>({4, 5});
  CHECK_THROWS_WITH_AS(
      attn::fast::matmul_blas(a, b),
      "attn::fast::matmul_blas: expected (M, K) @ (K, N) with the same K, got (2, 3) @ (4, 5)",
      std::invalid_argument);
}

TEST_CASE("linear without bias is x @ W on every position") {
  attn::Rng rng(7);
  for (const auto [B, T, in] : {Shape3{1, 1, 1}, Shape3{2, 3, 5}, Shape3{3, 7, 16}}) {
    for (const std::size_t out : {std::size_t{1}, std::size_t{4}, std::size_t{33}}) {
      const attn::Tensor<3> x = attn::randn<3>(rng, {B, T, in});
      const attn::Matrix w = attn::randn(rng, in, out);
      CAPTURE(B);
      CAPTURE(T);
      CAPTURE(in);
      CAPTURE(out);
      const attn::Tensor<3> y = attn::linear(x, w);
      CHECK_TENSOR_NEAR(y, reference_linear(x, w, {}), 1e-5, 1e-5);
      // Each position on its own through the plain matmul: the batch axes are really just rows.
      for (std::size_t b = 0; b < B; ++b) {
        const attn::Matrix xb = xt::view(x, b);
        const attn::Matrix yb = xt::view(y, b);
        CHECK_TENSOR_NEAR(yb, attn::matmul(xb, w), 1e-5, 1e-5);
      }
    }
  }
}

TEST_CASE("linear with bias adds the bias to every position") {
  attn::Rng rng(8);
  const attn::Tensor<3> x = attn::randn<3>(rng, {2, 5, 6});
  const attn::Matrix w = attn::randn(rng, 6, 3);
  const attn::Vector bias = {0.5f, -1.0f, 100.0f};
  const std::vector<double> bias_d(bias.begin(), bias.end());
  CHECK_TENSOR_NEAR(attn::linear(x, w, bias), reference_linear(x, w, bias_d), 1e-4, 1e-6);
}

TEST_CASE("linear by hand: one position, identity-like weights and a bias") {
  const attn::Tensor<3> x = {{{1.0f, 2.0f}}};                       // (1, 1, 2)
  const attn::Matrix w = {{1.0f, 0.0f, 2.0f}, {0.0f, 1.0f, 3.0f}};  // (2, 3)
  const attn::Vector b = {10.0f, 20.0f, 30.0f};                     // (3,)
  // x @ w = [1, 2, 1*2 + 2*3] = [1, 2, 8]; + b = [11, 22, 38]
  const attn::Tensor<3> want_no_bias = {{{1.0f, 2.0f, 8.0f}}};
  const attn::Tensor<3> want = {{{11.0f, 22.0f, 38.0f}}};
  CHECK_TENSOR_NEAR(attn::linear(x, w), want_no_bias, 0.0, 0.0);
  CHECK_TENSOR_NEAR(attn::linear(x, w, b), want, 0.0, 0.0);
}

TEST_CASE("linear of an empty batch is an empty result") {
  const attn::Tensor<3> x(attn::Tensor<3>::shape_type{0, 4, 3});
  const attn::Matrix w = xt::ones<float>({3, 2});
  const attn::Vector b = xt::ones<float>({2});
  CHECK(attn::linear(x, w).shape() == attn::Tensor<3>::shape_type{0, 4, 2});
  CHECK(attn::linear(x, w, b).shape() == attn::Tensor<3>::shape_type{0, 4, 2});
}

TEST_CASE("linear shape errors name both shapes") {
  const attn::Tensor<3> x = xt::zeros<float>({2, 3, 4});
  const attn::Matrix w = xt::zeros<float>({5, 6});
  CHECK_THROWS_WITH_AS(attn::linear(x, w),
                       "attn::linear: expected x (B, T, in) @ w (in, out) with the same in, got x "
                       "(2, 3, 4) @ w (5, 6)",
                       std::invalid_argument);
  const attn::Matrix w_ok = xt::zeros<float>({4, 6});
  const attn::Vector b = xt::zeros<float>({5});
  CHECK_THROWS_WITH_AS(
      attn::linear(x, w_ok, b),
      "attn::linear: expected bias (out,) matching w (in, out), got w (4, 6) and bias (5,)",
      std::invalid_argument);
  CHECK_THROWS_AS(attn::linear(x, w, b), std::invalid_argument);
}

}  // TEST_SUITE

TEST_SUITE("linear.backward") {

using attn::testing::check_gradients;
using attn::testing::cspan_of;
using attn::testing::span_of;
using attn::testing::upstream;

TEST_CASE("linear_backward matches central differences for x, W and b at odd sizes") {
  attn::Rng rng(84);
  for (const std::array<std::size_t, 4> s :
       {std::array<std::size_t, 4>{1, 1, 1, 1}, {2, 3, 5, 7}, {1, 4, 3, 1}}) {
    const std::size_t B = s[0], T = s[1], in = s[2], out = s[3];
    attn::Tensor<3> x = attn::randn<3>(rng, {B, T, in});
    attn::Matrix w = attn::randn(rng, in, out);
    attn::Vector b = attn::randn<1>(rng, {out});
    const attn::Tensor<3> r = upstream(attn::linear(x, w, b), 3);
    const attn::LinearGrads g = attn::linear_backward(r, x, w);
    check_gradients(
        "linear " + attn::shape_str(s),
        attn::grad_check(
            [&] { return attn::weighted_sum(cspan_of(attn::linear(x, w, b)), cspan_of(r)); },
            {{"x", span_of(x), cspan_of(g.dx)},
             {"w", span_of(w), cspan_of(g.dw)},
             {"b", span_of(b), cspan_of(g.db)}}));
  }
}

TEST_CASE("linear_backward accumulates dW and db, and overwrites dx") {
  attn::Rng rng(85);
  const attn::Tensor<3> x = attn::randn<3>(rng, {2, 3, 4});
  const attn::Matrix w = attn::randn(rng, 4, 5);
  const attn::Tensor<3> dy = attn::randn<3>(rng, {2, 3, 5});
  const attn::LinearGrads once = attn::linear_backward(dy, x, w);
  attn::Tensor<3> dx = attn::randn<3>(rng, {1, 1, 1});  // wrong shape: resized
  attn::Matrix dw = xt::zeros<float>({4, 5});
  attn::Vector db = xt::zeros<float>({5});
  attn::linear_backward(dy, x, w, dx, dw, &db);
  attn::linear_backward(dy, x, w, dx, dw, &db);
  CHECK_TENSOR_NEAR(dx, once.dx, 0.0, 0.0);
  CHECK_TENSOR_NEAR(dw, attn::Matrix(2.0f * once.dw), 1e-6, 1e-6);
  CHECK_TENSOR_NEAR(db, attn::Vector(2.0f * once.db), 1e-6, 1e-6);
  // Against the plain-loop matmul: dx = dy @ W^T, dW = x^T @ dy.
  const attn::Matrix dy2 = xt::reshape_view(dy, {6, 5});
  const attn::Matrix x2 = xt::reshape_view(x, {6, 4});
  const attn::Matrix wt = xt::transpose(w);
  const attn::Matrix xt2 = xt::transpose(x2);
  CHECK_TENSOR_NEAR(attn::Matrix(xt::reshape_view(once.dx, {6, 4})), attn::matmul(dy2, wt), 1e-5,
                    1e-5);
  CHECK_TENSOR_NEAR(once.dw, attn::matmul(xt2, dy2), 1e-5, 1e-5);
  attn::Matrix dw_nb = xt::zeros<float>({4, 5});
  attn::linear_backward(dy, x, w, dx, dw_nb);  // db null: skipped
  CHECK_TENSOR_NEAR(dw_nb, once.dw, 0.0, 0.0);
}

TEST_CASE("linear_backward names mismatched shapes") {
  const attn::Tensor<3> x = xt::zeros<float>({2, 3, 4});
  const attn::Matrix w = xt::zeros<float>({4, 5});
  const attn::Tensor<3> dy_bad = xt::zeros<float>({2, 3, 4});
  using E = std::invalid_argument;
  CHECK_THROWS_WITH_AS(
      attn::linear_backward(dy_bad, x, w),
      "attn::linear_backward: expected dy of shape (2, 3, 5) (like y = x @ w), got dy (2, 3, 4)",
      E);
  attn::Tensor<3> dx;
  attn::Matrix dw = xt::zeros<float>({5, 4});
  const attn::Tensor<3> dy = xt::zeros<float>({2, 3, 5});
  CHECK_THROWS_WITH_AS(attn::linear_backward(dy, x, w, dx, dw),
                       "attn::linear_backward: expected dw shaped like w (4, 5), got dw (5, 4)", E);
  const attn::Matrix w_bad = xt::zeros<float>({3, 5});
  CHECK_THROWS_WITH_AS(attn::linear_backward(dy, x, w_bad),
                       "attn::linear_backward: expected x (B, T, in) and w (in, out) with the same "
                       "in, got x (2, 3, 4) and w (3, 5)",
                       E);
}

}  // TEST_SUITE
