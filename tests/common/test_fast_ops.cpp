// Tests for attn/fast/{gemm,linear,ffn,loss}.hpp: every fast kernel against its reference in
// attn/ops/ (the functions the pages teach), over the shapes at the limits: size 1, odd sizes and
// sizes that are not a multiple of the 8 SIMD lanes, row counts that cross the fast side's
// chunks (128 rows of a GEMM block or an FFN chunk, 256 rows of the loss), on 1 and 3 threads.
// Agreement is bitwise where both sides take the same sums in the same order, else the golden
// tolerance |fast - ref| <= 1e-5 + 1e-4 |ref| (tools/golden.cpp's), stated per kernel with why.
// Each op also has a test that a subtly wrong kernel would fail that tolerance.
// (softmax, log_softmax and the masked softmax have no fast variant: their plain loops are what
// the model runs, tested in test_softmax.cpp and test_mask.cpp.)
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <span>
#include <string>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/core/threads.hpp"
#include "attn/fast/ffn.hpp"
#include "attn/fast/gemm.hpp"
#include "attn/fast/linear.hpp"
#include "attn/fast/loss.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/ops/linear.hpp"
#include "attn/ops/loss.hpp"
#include "attn/ops/matmul.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Activation;
using attn::testing::tensor_mismatch;

constexpr double kAtol = 1e-5;  // the golden tolerance: |got - ref| <= kAtol + kRtol |ref|
constexpr double kRtol = 1e-4;

constexpr std::array<Activation, 3> kActivations{Activation::relu, Activation::gelu,
                                                 Activation::gelu_tanh};

// Runs f() with the library on `threads` threads, restoring the previous count.
template <class F>
auto on_threads(std::size_t threads, F f) {
  const std::size_t saved = attn::num_threads();
  attn::set_num_threads(threads);
  auto result = f();
  attn::set_num_threads(saved);
  return result;
}

// Normal(0, 0.5) weights and non-zero biases, so that both bias additions are checked.
attn::FfnWeights weights_with_biases(attn::Rng& rng, std::size_t C, std::size_t F) {
  attn::FfnWeights w = attn::ffn_init(rng, C, F, 0.5f);
  w.b1 = attn::randn<1>(rng, {F}, 0.5f);
  w.b2 = attn::randn<1>(rng, {C}, 0.5f);
  return w;
}

attn::FfnWeights zeros_like(const attn::FfnWeights& w) {
  return {xt::zeros_like(w.w1), xt::zeros_like(w.b1), xt::zeros_like(w.w2), xt::zeros_like(w.b2)};
}

// -20, -20 + step, ..., 20 as floats, then the values where kernels special-case.
std::vector<float> activation_inputs(double step) {
  std::vector<float> xs;
  for (double x = -20.0; x <= 20.0; x += step) xs.push_back(static_cast<float>(x));
  for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, 50.0f, -50.0f, 100.0f, -100.0f, 1e30f, -1e30f})
    xs.push_back(x);
  return xs;
}

attn::Vector as_vector(const std::vector<float>& v) {
  attn::Vector t(attn::Vector::shape_type{v.size()});
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}

// The (B, T, C) shapes of the FFN and linear tests: one token of width 1; odd sizes below the
// 8 SIMD lanes; and 300 tokens, two full chunks of 128 and a partial one.
struct Sizes {
  std::size_t B, T, C, F;
};
constexpr std::array<Sizes, 3> kSizes{Sizes{1, 1, 1, 1}, Sizes{2, 3, 5, 7}, Sizes{3, 100, 16, 24}};

}  // namespace

TEST_SUITE("fast_ops") {

// ---- gemm (attn/fast/gemm.hpp) is tested against attn::matmul in test_linear.cpp. -----------

// ---- linear ----------------------------------------------------------------------------------
// Tolerance: BLAS sums each dot product in its own blocked order, the reference in index order,
// so they agree to float rounding, not bit for bit. The bias gradient is bitwise: both sum each
// column in double, in row order.

TEST_CASE("fast::linear equals the reference linear, with and without bias, on 1 and 3 threads") {
  attn::Rng rng(101);
  // The last shape is a GEMM big enough (400 x 96 x 200) to be split in blocks of 128 rows.
  for (const Sizes s : {Sizes{1, 1, 1, 1}, Sizes{2, 3, 5, 7}, Sizes{4, 100, 96, 200}}) {
    CAPTURE(s.B * s.T);
    CAPTURE(s.C);
    CAPTURE(s.F);
    const attn::Tensor<3> x = attn::randn<3>(rng, {s.B, s.T, s.C});
    const attn::Matrix w = attn::randn(rng, s.C, s.F);
    const attn::Vector b = attn::randn<1>(rng, {s.F});
    const attn::Tensor<3> ref = attn::linear(x, w);
    const attn::Tensor<3> ref_b = attn::linear(x, w, b);
    const attn::Tensor<3> one = on_threads(1, [&] { return attn::fast::linear(x, w); });
    const attn::Tensor<3> one_b = on_threads(1, [&] { return attn::fast::linear(x, w, b); });
    CHECK_TENSOR_NEAR(one, ref, kAtol, kRtol);
    CHECK_TENSOR_NEAR(one_b, ref_b, kAtol, kRtol);
    CHECK_TENSOR_NEAR(on_threads(3, [&] { return attn::fast::linear(x, w); }), one, 0.0, 0.0);
    CHECK_TENSOR_NEAR(on_threads(3, [&] { return attn::fast::linear(x, w, b); }), one_b, 0.0, 0.0);
  }
}

TEST_CASE("fast::linear_backward equals the reference: dx, dW accumulated, db bit for bit") {
  attn::Rng rng(102);
  for (const Sizes s : {Sizes{1, 1, 1, 1}, Sizes{2, 3, 5, 7}, Sizes{4, 100, 96, 200}}) {
    CAPTURE(s.B * s.T);
    const attn::Tensor<3> x = attn::randn<3>(rng, {s.B, s.T, s.C});
    const attn::Matrix w = attn::randn(rng, s.C, s.F);
    const attn::Tensor<3> dy = attn::randn<3>(rng, {s.B, s.T, s.F});
    // Gradients that already hold something: both sides must add to them.
    const attn::Matrix dw0 = attn::randn(rng, s.C, s.F);
    const attn::Vector db0 = attn::randn<1>(rng, {s.F});
    attn::Tensor<3> dx_ref;
    attn::Matrix dw_ref = dw0;
    attn::Vector db_ref = db0;
    attn::linear_backward(dy, x, w, dx_ref, dw_ref, &db_ref);
    for (const std::size_t threads : {1, 3}) {
      CAPTURE(threads);
      attn::Tensor<3> dx = xt::ones<float>({s.B, s.T, s.C});  // overwritten, not added to
      attn::Matrix dw = dw0;
      attn::Vector db = db0;
      on_threads(threads, [&] {
        attn::fast::linear_backward(dy, x, w, dx, dw, &db);
        return 0;
      });
      CHECK_TENSOR_NEAR(dx, dx_ref, kAtol, kRtol);
      CHECK_TENSOR_NEAR(db, db_ref, 0.0, 0.0);
      // dW sums B*T products of mixed sign: BLAS's float rounding is relative to the sum of
      // their sizes (~300 here), not to the result, which may cancel to near 0 (the reference
      // sums in double). So each element may also be off by the float rounding bound of its
      // sum, B*T * 2^-24 * sum_r |x[r, i] dy[r, o]|: a wrong kernel is off by whole terms.
      const std::size_t rows = s.B * s.T;
      for (std::size_t i = 0; i < s.C; ++i) {
        for (std::size_t o = 0; o < s.F; ++o) {
          double size = 0.0;
          for (std::size_t r = 0; r < rows; ++r)
            size += std::abs(static_cast<double>(x.data()[r * s.C + i]) *
                             static_cast<double>(dy.data()[r * s.F + o]));
          const double ref = static_cast<double>(dw_ref(i, o));
          const double bound = kAtol + kRtol * std::abs(ref) +
                               static_cast<double>(rows) * std::ldexp(1.0, -24) * size;
          if (!(std::abs(static_cast<double>(dw(i, o)) - ref) <= bound)) {
            FAIL_CHECK("dw at (" << i << ", " << o << "): got " << dw(i, o) << ", expected " << ref
                                 << ", bound " << bound);
          }
        }
      }
    }
  }
}

TEST_CASE(
    "fast::bias_backward sums every column bit for bit like the reference, across its "
    "512-column blocks and 4-column steps") {
  attn::Rng rng(103);
  for (const std::size_t cols : {std::size_t{1}, std::size_t{3}, std::size_t{515}}) {
    CAPTURE(cols);
    const attn::Tensor<3> dy = attn::randn<3>(rng, {1, 37, cols});
    const attn::Tensor<3> x = attn::randn<3>(rng, {1, 37, 2});
    const attn::Matrix w = attn::randn(rng, 2, cols);
    const attn::LinearGrads ref = attn::linear_backward(dy, x, w);
    attn::Vector db = xt::zeros<float>({cols});
    attn::fast::bias_backward(dy.data(), 37, cols, db.data());
    CHECK_TENSOR_NEAR(db, ref.db, 0.0, 0.0);
  }
}

TEST_CASE("fast::bias_backward_strided: a few columns of a wider dy, the same bits as the whole") {
  attn::Rng rng(105);
  const std::size_t rows = 37, cols = 300;
  const attn::Tensor<3> dy = attn::randn<3>(rng, {1, rows, cols});
  attn::Vector whole = xt::zeros<float>({cols}), pieces = xt::zeros<float>({cols});
  attn::fast::bias_backward(dy.data(), rows, cols, whole.data());
  for (std::size_t j0 = 0; j0 < cols; j0 += 128) {
    const std::size_t n = std::min<std::size_t>(128, cols - j0);
    attn::fast::bias_backward_strided(dy.data() + j0, rows, n, cols, pieces.data() + j0);
  }
  CHECK_TENSOR_NEAR(pieces, whole, 0.0, 0.0);
}

TEST_CASE(
    "fast::cross_entropy_backward_inplace with a denominator: two halves of a batch, each "
    "divided by the whole's rows, add up to the whole batch's loss and gradient") {
  attn::Rng rng(106);
  const std::size_t N = 300, V = 11;
  const attn::Matrix logits = attn::randn(rng, N, V);
  std::vector<int> targets(N);
  for (int& t : targets) t = static_cast<int>(rng.below(V));
  attn::Matrix whole = logits;
  const double loss = attn::fast::cross_entropy_backward_inplace(whole, targets);
  attn::Matrix top = xt::view(logits, xt::range(0, 100), xt::all());
  attn::Matrix bottom = xt::view(logits, xt::range(100, N), xt::all());
  const std::span<const int> t(targets);
  attn::fast::Workspace ws;  // the chunks' sums, shared by the calls
  const double a = attn::fast::cross_entropy_backward_inplace(top, t.subspan(0, 100), N, ws);
  const double b = attn::fast::cross_entropy_backward_inplace(bottom, t.subspan(100), N, ws);
  CHECK(a + b == doctest::Approx(loss).epsilon(1e-12));
  CHECK_TENSOR_NEAR(attn::Matrix(xt::view(whole, xt::range(0, 100), xt::all())), top, 0.0, 0.0);
  CHECK_TENSOR_NEAR(attn::Matrix(xt::view(whole, xt::range(100, N), xt::all())), bottom, 0.0, 0.0);
  attn::Matrix small = logits;
  CHECK_THROWS_WITH_AS(
      attn::fast::cross_entropy_backward_inplace(small, targets, N - 1, ws),
      "attn::fast::cross_entropy_backward_inplace: the denominator must be at least the number "
      "of rows",
      std::invalid_argument);
}

TEST_CASE("the linear tolerance catches a kernel that forgets the bias or transposes dW") {
  attn::Rng rng(104);
  const attn::Tensor<3> x = attn::randn<3>(rng, {2, 3, 6});
  const attn::Matrix w = attn::randn(rng, 6, 6);
  const attn::Vector b = attn::randn<1>(rng, {6}, 0.1f);  // a small bias
  CHECK_FALSE(
      tensor_mismatch(attn::fast::linear(x, w), attn::linear(x, w, b), kAtol, kRtol).empty());
  const attn::Tensor<3> dy = attn::randn<3>(rng, {2, 3, 6});
  const attn::LinearGrads ref = attn::linear_backward(dy, x, w);
  attn::Tensor<3> dx;
  attn::Matrix dw = xt::zeros<float>({6, 6});
  attn::fast::linear_backward(dy, x, w, dx, dw);
  CHECK_TENSOR_NEAR(dw, ref.dw, kAtol, kRtol);
  const attn::Matrix dw_t = xt::transpose(dw);
  CHECK_FALSE(tensor_mismatch(dw_t, ref.dw, kAtol, kRtol).empty());
  CHECK_THROWS_WITH_AS(attn::fast::linear(x, attn::randn(rng, 5, 6)),
                       "attn::fast::linear: expected x (B, T, in) @ w (in, out) with the same in, "
                       "got x (2, 3, 6) @ w (5, 6)",
                       std::invalid_argument);
}

// ---- activations -----------------------------------------------------------------------------
// Tolerance: the reference evaluates each formula in double and rounds once; the fast kernels
// use a polynomial erfc (exact GELU) and exp on 8 lanes in float, within ~2.4e-7 of the formula.
// ReLU is bitwise (a comparison, no arithmetic).

TEST_CASE("fast::activate equals the reference activation on [-20, 20] and at the extremes") {
  const std::vector<float> xs = activation_inputs(1e-3);
  for (const Activation a : kActivations) {
    CAPTURE(attn::activation_name(a));
    std::vector<float> ref = xs;
    std::vector<float> got = xs;
    attn::activate(ref, a);
    attn::fast::activate(got, a);
    if (a == Activation::relu) {
      CHECK_TENSOR_NEAR(as_vector(got), as_vector(ref), 0.0, 0.0);
    } else {
      CHECK_TENSOR_NEAR(as_vector(got), as_vector(ref), kAtol, kRtol);
    }
  }
}

TEST_CASE("fast exact GELU is within 1e-7 plus one float step of the erf formula") {
  // 400001 points on [-20, 20], step 1e-4, against 0.5 x erfc(-x / sqrt 2) in double: the bound
  // the kernel's comment in common/src/fast/ffn.cpp states.
  std::vector<float> xs;
  for (double x = -20.0; x <= 20.0; x += 1e-4) xs.push_back(static_cast<float>(x));
  std::vector<float> ys = xs;
  attn::fast::activate(ys, Activation::gelu);
  double max_err = 0.0, max_err_small = 0.0, worst_excess = -1.0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double x = static_cast<double>(xs[i]);
    const double exact = 0.5 * x * std::erfc(-x / std::numbers::sqrt2);
    const double err = std::abs(static_cast<double>(ys[i]) - exact);
    max_err = std::max(max_err, err);
    if (std::abs(x) <= 3.0) max_err_small = std::max(max_err_small, err);
    const float r = static_cast<float>(exact);
    const double step = static_cast<double>(
        std::nextafter(std::abs(r), std::numeric_limits<float>::infinity()) - std::abs(r));
    worst_excess = std::max(worst_excess, err - (1e-7 + step));
  }
  CAPTURE(max_err);
  CAPTURE(max_err_small);
  CHECK(worst_excess <= 0.0);
  CHECK(max_err <= 2.5e-7);        // measured 2.4e-7, at x = 4.16 (a float step there: 4.8e-7)
  CHECK(max_err_small <= 1.5e-7);  // measured 1.34e-7 on [-3, 3]
}

TEST_CASE(
    "fast activations: infinities and NaN like the reference, and a value gets the same "
    "result wherever it sits in the buffer (full lanes and padded tails)") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  attn::Rng rng(105);
  const attn::Matrix values = attn::randn(rng, 1, 17, 3.0f);
  for (const Activation a : kActivations) {
    CAPTURE(attn::activation_name(a));
    std::vector<float> ref = {inf, -inf, nan};
    std::vector<float> got = ref;
    attn::activate(ref, a);
    attn::fast::activate(got, a);
    CHECK(got[0] == ref[0]);
    CHECK(got[1] == ref[1]);
    CHECK((std::isnan(got[2]) && std::isnan(ref[2])));
    // 17 values: two full 8-lane steps and a tail of 1; every suffix takes the other paths.
    std::vector<float> all(values.data(), values.data() + 17);
    attn::fast::activate(all, a);
    for (std::size_t n = 1; n <= 17; ++n) {
      std::vector<float> part(values.data() + (17 - n), values.data() + 17);
      attn::fast::activate(part, a);
      for (std::size_t i = 0; i < n; ++i) CHECK(part[i] == all[17 - n + i]);
    }
  }
}

TEST_CASE("fast::activate_backward equals the reference derivative, the extremes included") {
  const std::vector<float> xs = activation_inputs(1e-3);
  attn::Rng rng(106);
  const attn::Vector dy_t = attn::randn<1>(rng, {xs.size()});
  const std::vector<float> dy(dy_t.begin(), dy_t.end());
  for (const Activation a : kActivations) {
    CAPTURE(attn::activation_name(a));
    std::vector<float> ref(xs.size()), got(xs.size());
    attn::activate_backward(xs, dy, ref, a);
    attn::fast::activate_backward(xs, dy, got, a);
    CHECK_TENSOR_NEAR(as_vector(got), as_vector(ref), a == Activation::relu ? 0.0 : kAtol,
                      a == Activation::relu ? 0.0 : kRtol);
  }
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special = {inf, -inf, std::nanf("")};
  const std::vector<float> twos(3, 2.0f);
  for (const Activation a : kActivations) {
    std::vector<float> ref(3), got(3);
    attn::activate_backward(special, twos, ref, a);
    attn::fast::activate_backward(special, twos, got, a);
    CHECK(got[0] == ref[0]);
    CHECK(got[1] == ref[1]);
    CHECK((std::isnan(got[2]) && std::isnan(ref[2])));
  }
}

TEST_CASE("the activation tolerance catches the tanh approximation passed off as exact GELU") {
  // The two GELUs differ by at most 4.7e-4 (near x = -2.7): small, but far outside the tolerance.
  const std::vector<float> xs = activation_inputs(1e-2);
  std::vector<float> ref = xs, wrong = xs;
  attn::activate(ref, Activation::gelu);
  attn::fast::activate(wrong, Activation::gelu_tanh);
  CHECK_FALSE(tensor_mismatch(as_vector(wrong), as_vector(ref), kAtol, kRtol).empty());
  const std::vector<float> ones(xs.size(), 1.0f);
  std::vector<float> dref(xs.size()), dwrong(xs.size());
  attn::activate_backward(xs, ones, dref, Activation::gelu);
  attn::fast::activate_backward(xs, ones, dwrong, Activation::gelu_tanh);
  CHECK_FALSE(tensor_mismatch(as_vector(dwrong), as_vector(dref), kAtol, kRtol).empty());
}

// ---- FFN -------------------------------------------------------------------------------------
// Tolerance: two GEMMs and the activation kernel, each within float rounding of the reference.
// Between thread counts, and between the cache and no-cache forwards, the fast side is bitwise
// (fixed chunks of 128 tokens, each computed the same way on any thread).

TEST_CASE("fast::ffn_forward equals the reference, all activations, chunks and threads") {
  attn::Rng rng(107);
  for (const Sizes s : kSizes) {
    const attn::FfnWeights w = weights_with_biases(rng, s.C, s.F);
    const attn::Tensor<3> x = attn::randn<3>(rng, {s.B, s.T, s.C});
    for (const Activation a : kActivations) {
      CAPTURE(s.B * s.T);
      CAPTURE(attn::activation_name(a));
      attn::FfnCache ref_cache;
      const attn::Tensor<3> ref = attn::ffn_forward(x, w, a, ref_cache);
      const attn::Tensor<3> one = on_threads(1, [&] { return attn::fast::ffn_forward(x, w, a); });
      CHECK_TENSOR_NEAR(one, ref, kAtol, kRtol);
      for (const std::size_t threads : {1, 3}) {
        CAPTURE(threads);
        attn::FfnCache cache;
        const attn::Tensor<3> y =
            on_threads(threads, [&] { return attn::fast::ffn_forward(x, w, a, cache); });
        CHECK_TENSOR_NEAR(y, one, 0.0, 0.0);
        CHECK_TENSOR_NEAR(on_threads(threads, [&] { return attn::fast::ffn_forward(x, w, a); }),
                          one, 0.0, 0.0);
        CHECK_TENSOR_NEAR(cache.x, x, 0.0, 0.0);
        CHECK_TENSOR_NEAR(cache.pre, ref_cache.pre, kAtol, kRtol);
        CHECK_TENSOR_NEAR(cache.act, ref_cache.act, kAtol, kRtol);
      }
    }
  }
}

TEST_CASE("fast::ffn_backward equals the reference: dx and every weight gradient, accumulated") {
  attn::Rng rng(108);
  for (const Sizes s : kSizes) {
    const attn::FfnWeights w = weights_with_biases(rng, s.C, s.F);
    const attn::Tensor<3> x = attn::randn<3>(rng, {s.B, s.T, s.C});
    const attn::Tensor<3> dy = attn::randn<3>(rng, {s.B, s.T, s.C});
    const attn::FfnWeights g0 = weights_with_biases(rng, s.C, s.F);  // gradients so far
    for (const Activation a : kActivations) {
      CAPTURE(s.B * s.T);
      CAPTURE(attn::activation_name(a));
      attn::FfnCache ref_cache;
      (void)attn::ffn_forward(x, w, a, ref_cache);
      attn::Tensor<3> dx_ref;
      attn::FfnWeights g_ref = g0;
      attn::ffn_backward(dy, ref_cache, w, a, dx_ref, g_ref);
      std::vector<attn::Tensor<3>> dxs;
      std::vector<attn::FfnWeights> gs;
      for (const std::size_t threads : {1, 3}) {
        attn::FfnCache cache;
        attn::Tensor<3> dx;
        attn::FfnWeights g = g0;
        on_threads(threads, [&] {
          (void)attn::fast::ffn_forward(x, w, a, cache);
          attn::fast::ffn_backward(dy, cache, w, a, dx, g);
          return 0;
        });
        CHECK_TENSOR_NEAR(dx, dx_ref, kAtol, kRtol);
        CHECK_TENSOR_NEAR(g.w1, g_ref.w1, kAtol, kRtol);
        CHECK_TENSOR_NEAR(g.b1, g_ref.b1, kAtol, kRtol);
        CHECK_TENSOR_NEAR(g.w2, g_ref.w2, kAtol, kRtol);
        CHECK_TENSOR_NEAR(g.b2, g_ref.b2, kAtol, kRtol);
        dxs.push_back(dx);
        gs.push_back(g);
      }
      // The same bits on 1 and 3 threads.
      CHECK_TENSOR_NEAR(dxs[0], dxs[1], 0.0, 0.0);
      CHECK_TENSOR_NEAR(gs[0].w1, gs[1].w1, 0.0, 0.0);
      CHECK_TENSOR_NEAR(gs[0].b1, gs[1].b1, 0.0, 0.0);
      CHECK_TENSOR_NEAR(gs[0].w2, gs[1].w2, 0.0, 0.0);
      CHECK_TENSOR_NEAR(gs[0].b2, gs[1].b2, 0.0, 0.0);
    }
  }
}

TEST_CASE("the FFN tolerance catches a swapped activation; fast::ffn_* name bad shapes") {
  attn::Rng rng(109);
  const attn::FfnWeights w = weights_with_biases(rng, 8, 32);
  const attn::Tensor<3> x = attn::randn<3>(rng, {2, 5, 8});
  CHECK_FALSE(tensor_mismatch(attn::fast::ffn_forward(x, w, Activation::gelu_tanh),
                              attn::ffn_forward(x, w, Activation::gelu), kAtol, kRtol)
                  .empty());
  attn::FfnWeights bad = w;
  bad.w2 = attn::randn(rng, 32, 7);
  CHECK_THROWS_WITH_AS(attn::fast::ffn_forward(x, bad),
                       "attn::fast::ffn_forward: w2 is (32, 7), expected (32, 8)",
                       std::invalid_argument);
  attn::FfnCache cache;
  (void)attn::fast::ffn_forward(x, w, Activation::gelu, cache);
  attn::Tensor<3> dx;
  attn::FfnWeights g = zeros_like(w);
  const attn::Tensor<3> dy_bad = xt::zeros<float>({2, 5, 7});
  CHECK_THROWS_WITH_AS(attn::fast::ffn_backward(dy_bad, cache, w, Activation::gelu, dx, g),
                       "attn::fast::ffn_backward: expected dy of shape (2, 5, 8) (like the "
                       "forward's input), got dy (2, 5, 7)",
                       std::invalid_argument);
  // A cache filled by a narrower FFN's forward (F 16) for these weights (F 32): refused before
  // its (2, 5, 16) activations are read at width 32, and nothing is added.
  const attn::FfnWeights narrow = weights_with_biases(rng, 8, 16);
  attn::FfnCache narrow_cache;
  (void)attn::fast::ffn_forward(x, narrow, Activation::gelu, narrow_cache);
  const attn::Tensor<3> dy = attn::randn<3>(rng, {2, 5, 8});
  CHECK_THROWS_WITH_AS(attn::fast::ffn_backward(dy, narrow_cache, w, Activation::gelu, dx, g),
                       "attn::fast::ffn_backward: cache.pre is (2, 5, 16), expected (2, 5, 32)",
                       std::invalid_argument);
  CHECK(xt::all(xt::equal(g.w1, 0.0f)));
  CHECK(xt::all(xt::equal(g.b2, 0.0f)));
}

// ---- cross-entropy ---------------------------------------------------------------------------
// The gradient is bitwise: both sides compute each row with the same float exponentials and the
// same double sum, in the same order. The loss is bitwise up to 256 rows; beyond, the fast side
// adds the rows' losses in chunks of 256 (then the chunks in order), a different order of double
// additions, so the two agree to 1e-12 relative.

TEST_CASE("fast cross-entropy equals the reference: loss, gradient, in place, 1 and 3 threads") {
  attn::Rng rng(110);
  for (const std::array<std::size_t, 2> nv :
       {std::array<std::size_t, 2>{1, 1}, {5, 13}, {256, 7}, {600, 65}}) {
    const std::size_t N = nv[0], V = nv[1];
    CAPTURE(N);
    CAPTURE(V);
    const attn::Matrix logits = attn::randn(rng, N, V, 3.0f);
    std::vector<int> targets(N);
    for (std::size_t n = 0; n < N; ++n) targets[n] = static_cast<int>((n * 7 + 3) % V);
    const attn::LossGrad ref = attn::cross_entropy_with_grad(logits, targets);
    CHECK(ref.loss == attn::cross_entropy(logits, targets));
    const double loss_tol = N <= 256 ? 0.0 : 1e-12 * std::abs(ref.loss);
    for (const std::size_t threads : {1, 3}) {
      CAPTURE(threads);
      const attn::LossGrad got =
          on_threads(threads, [&] { return attn::fast::cross_entropy_with_grad(logits, targets); });
      CHECK(std::abs(got.loss - ref.loss) <= loss_tol);
      CHECK_TENSOR_NEAR(got.grad, ref.grad, 0.0, 0.0);
      CHECK(
          std::abs(on_threads(threads, [&] { return attn::fast::cross_entropy(logits, targets); }) -
                   ref.loss) <= loss_tol);
      attn::Matrix inplace = logits;
      const double loss = on_threads(
          threads, [&] { return attn::fast::cross_entropy_backward_inplace(inplace, targets); });
      CHECK(loss == got.loss);
      CHECK_TENSOR_NEAR(inplace, ref.grad, 0.0, 0.0);
    }
  }
}

TEST_CASE("the loss comparison catches a target off by one; fast cross-entropy checks targets") {
  attn::Rng rng(111);
  const attn::Matrix logits = attn::randn(rng, 4, 9);
  const std::vector<int> targets = {0, 3, 8, 5};
  const std::vector<int> shifted = {1, 4, 0, 6};
  const attn::LossGrad ref = attn::cross_entropy_with_grad(logits, targets);
  const attn::LossGrad wrong = attn::fast::cross_entropy_with_grad(logits, shifted);
  CHECK(std::abs(wrong.loss - ref.loss) > kAtol + kRtol * std::abs(ref.loss));
  CHECK_FALSE(tensor_mismatch(wrong.grad, ref.grad, kAtol, kRtol).empty());
  CHECK_THROWS_WITH_AS(attn::fast::cross_entropy(logits, std::vector<int>{0, 1, 2, 9}),
                       "attn::fast::cross_entropy: expected targets in [0, 9), got 9 at index 3",
                       std::invalid_argument);
}

}  // TEST_SUITE
