// Tests for attn/ops/rope.hpp, rotary position embeddings (chapter 11): a hand example, a naive
// loop in complex numbers, the property RoPE exists for (q . k depends only on the offset), the
// rotate-half layout of Hugging Face through the permutation, the offset of a generation step,
// and the backward by float64 central differences, which also catch a backward that rotates the
// wrong way.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <stdexcept>
#include <string>

#include "attn/core/random.hpp"
#include "attn/ops/rope.hpp"
#include "gradcheck_helpers.hpp"
#include "test_helpers.hpp"

namespace {

using attn::testing::error_of;

using T4 = xt::xtensor<double, 4>;
using attn::RopeLayout;

// The paper's definition in complex numbers: pair i is z = x[2i] + i x[2i+1], multiplied by
// e^{i p theta^(-2i/hs)} at position p.
T4 naive_rope(const T4& x, double theta, std::size_t offset) {
  T4 y = x;
  const std::size_t hs = x.shape()[3];
  for (std::size_t b = 0; b < x.shape()[0]; ++b)
    for (std::size_t h = 0; h < x.shape()[1]; ++h)
      for (std::size_t t = 0; t < x.shape()[2]; ++t)
        for (std::size_t i = 0; i < hs / 2; ++i) {
          const double p = static_cast<double>(offset + t);
          const double angle = p / std::pow(theta, static_cast<double>(2 * i) / hs);
          const std::complex<double> z(x(b, h, t, 2 * i), x(b, h, t, 2 * i + 1));
          const std::complex<double> r = z * std::polar(1.0, angle);
          y(b, h, t, 2 * i) = r.real();
          y(b, h, t, 2 * i + 1) = r.imag();
        }
  return y;
}

// Hugging Face's formula: y = x * cos + rotate_half(x) * sin, with cos and sin of the angles
// [f_0 .. f_{hs/2-1}, f_0 .. f_{hs/2-1}] * p and rotate_half(x) = (-x[hs/2:], x[:hs/2]).
T4 hf_rope(const T4& x, double theta) {
  T4 y = x;
  const std::size_t hs = x.shape()[3], half = hs / 2;
  for (std::size_t b = 0; b < x.shape()[0]; ++b)
    for (std::size_t h = 0; h < x.shape()[1]; ++h)
      for (std::size_t t = 0; t < x.shape()[2]; ++t)
        for (std::size_t j = 0; j < hs; ++j) {
          const double f = 1.0 / std::pow(theta, static_cast<double>(2 * (j % half)) / hs);
          const double angle = static_cast<double>(t) * f;
          const double rotated = j < half ? -x(b, h, t, j + half) : x(b, h, t, j - half);
          y(b, h, t, j) = x(b, h, t, j) * std::cos(angle) + rotated * std::sin(angle);
        }
  return y;
}

}  // namespace

TEST_SUITE("rope") {

TEST_CASE("hand example: pair 0 turns by one radian per position") {
  // hs = 2: one pair, frequency theta^0 = 1. (1, 0) at position 1 -> (cos 1, sin 1); at
  // position 0 nothing moves.
  T4 x = xt::zeros<double>({1, 1, 2, 2});
  x(0, 0, 0, 0) = 1.0;
  x(0, 0, 1, 0) = 1.0;
  const T4 y = attn::rope<double>(x);
  CHECK(y(0, 0, 0, 0) == doctest::Approx(1.0));
  CHECK(y(0, 0, 0, 1) == doctest::Approx(0.0));
  CHECK(y(0, 0, 1, 0) == doctest::Approx(std::cos(1.0)));
  CHECK(y(0, 0, 1, 1) == doctest::Approx(std::sin(1.0)));
  // The frequencies: theta^(-2i/hs) for hs = 4, theta 100: 1 and 1/10.
  const auto f = attn::rope_frequencies(4, 100.0);
  REQUIRE(f.size() == 2);
  CHECK(f[0] == doctest::Approx(1.0));
  CHECK(f[1] == doctest::Approx(0.1));
}

TEST_CASE("equals the paper's definition in complex numbers, in float and double, any offset") {
  attn::Rng rng(11);
  const T4 x = attn::testing::randn64<4>(rng, {2, 3, 7, 8});
  for (const std::size_t offset : {0u, 5u, 100u}) {
    for (const double theta : {10000.0, 10.0, 500000.0}) {
      CAPTURE(offset);
      CAPTURE(theta);
      const T4 want = naive_rope(x, theta, offset);
      CHECK_TENSOR_NEAR(attn::rope<double>(x, theta, offset), want, 1e-12, 1e-12);
      const attn::Tensor<4> xf = xt::cast<float>(x);
      const attn::Tensor<4> yf = attn::rope<float>(xf, theta, offset);
      CHECK_TENSOR_NEAR(T4(xt::cast<double>(yf)), want, 1e-5, 1e-5);
    }
  }
}

TEST_CASE("a rotation: norms are kept, position 0 is the identity") {
  attn::Rng rng(12);
  const T4 x = attn::testing::randn64<4>(rng, {1, 2, 5, 6});
  const T4 y = attn::rope<double>(x, 10000.0, 3);
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t t = 0; t < 5; ++t)
      for (std::size_t i = 0; i < 3; ++i) {
        const double before = std::hypot(x(0, h, t, 2 * i), x(0, h, t, 2 * i + 1));
        const double after = std::hypot(y(0, h, t, 2 * i), y(0, h, t, 2 * i + 1));
        CHECK(after == doctest::Approx(before).epsilon(1e-12));
      }
  const T4 at0 = attn::rope<double>(x, 10000.0, 0);
  CHECK_TENSOR_NEAR(T4(xt::view(at0, xt::all(), xt::all(), xt::range(0, 1))),
                    T4(xt::view(x, xt::all(), xt::all(), xt::range(0, 1))), 0.0, 0.0);
}

TEST_CASE("relative positions: <rope(q, m), rope(k, n)> depends only on m - n") {
  attn::Rng rng(13);
  const T4 q = attn::testing::randn64<4>(rng, {1, 1, 1, 16});
  const T4 k = attn::testing::randn64<4>(rng, {1, 1, 1, 16});
  auto score = [&](std::size_t m, std::size_t n) {
    return attn::testing::dot64(attn::rope<double>(q, 10000.0, m),
                                attn::rope<double>(k, 10000.0, n));
  };
  // Offset 3 at three different places, and offset 0.
  CHECK(score(5, 2) == doctest::Approx(score(3, 0)).epsilon(1e-12));
  CHECK(score(5, 2) == doctest::Approx(score(103, 100)).epsilon(1e-12));
  CHECK(score(7, 7) == doctest::Approx(score(0, 0)).epsilon(1e-12));
  CHECK(score(0, 0) == doctest::Approx(attn::testing::dot64(q, k)).epsilon(1e-12));
  // ... and it does change with the offset (the property is not trivially true).
  CHECK(std::abs(score(5, 2) - score(5, 5)) > 1e-3);
  CHECK(std::abs(score(5, 2) - score(2, 5)) > 1e-3);
}

TEST_CASE("rotate-half layout: Hugging Face's formula, and the permutation that maps the layouts") {
  attn::Rng rng(14);
  const T4 x = attn::testing::randn64<4>(rng, {2, 2, 6, 8});
  // The library's rotate-half layout is Hugging Face's cos/sin formula.
  CHECK_TENSOR_NEAR(attn::rope<double>(x, 10000.0, 0, RopeLayout::rotate_half), hf_rope(x, 10000.0),
                    1e-12, 1e-12);
  // perm = (0, 2, 4, 6, 1, 3, 5, 7).
  const auto perm = attn::rope_half_permutation(8);
  CHECK(perm == std::vector<std::size_t>{0, 2, 4, 6, 1, 3, 5, 7});
  // rope(P x, rotate_half) = P rope(x, interleaved): the same model with reordered features.
  const T4 px = attn::rope_to_half_layout<double>(x);
  CHECK(px(1, 1, 4, 1) == x(1, 1, 4, 2));
  CHECK(px(1, 1, 4, 4) == x(1, 1, 4, 1));
  const T4 lhs = attn::rope<double>(px, 10000.0, 0, RopeLayout::rotate_half);
  const T4 rhs = attn::rope_to_half_layout<double>(attn::rope<double>(x));
  CHECK_TENSOR_NEAR(lhs, rhs, 1e-12, 1e-12);
  CHECK_TENSOR_NEAR(attn::rope_from_half_layout<double>(px), x, 0.0, 0.0);
  // Without the permutation the two layouts differ.
  CHECK(xt::amax(xt::abs(attn::rope<double>(x, 10000.0, 0, RopeLayout::rotate_half) -
                         attn::rope<double>(x)))() > 1e-2);
}

TEST_CASE("offset: rows from position t0 on, rotated with offset t0, equal the full sequence's") {
  attn::Rng rng(15);
  const T4 x = attn::testing::randn64<4>(rng, {1, 2, 9, 4});
  const T4 full = attn::rope<double>(x);
  const T4 tail = xt::view(x, xt::all(), xt::all(), xt::range(6, 9));
  CHECK_TENSOR_NEAR(attn::rope<double>(tail, 10000.0, 6),
                    T4(xt::view(full, xt::all(), xt::all(), xt::range(6, 9))), 1e-12, 1e-12);
}

TEST_CASE("backward: float64 central differences agree, a backward rotating the wrong way fails") {
  attn::Rng rng(16);
  for (const RopeLayout layout : {RopeLayout::interleaved, RopeLayout::rotate_half}) {
    const char* op = layout == RopeLayout::interleaved ? "rope interleaved" : "rope rotate_half";
    T4 x = attn::testing::randn64<4>(rng, {2, 2, 5, 6});
    const T4 r = attn::testing::randn64<4>(rng, {2, 2, 5, 6});  // dL/dy
    auto loss = [&] { return attn::testing::dot64(attn::rope<double>(x, 50.0, 3, layout), r); };
    const T4 dx = attn::rope_backward<double>(r, 50.0, 3, layout);
    attn::testing::check_grad64(op, "x", attn::testing::central_differences64<T4>(loss, x, dx));
    // Wrong: the forward rotation (by +angle, "rope by -theta" in the backward's place).
    const T4 wrong = attn::rope<double>(r, 50.0, 3, layout);
    attn::testing::check_grad64_caught(op, "x",
                                       attn::testing::central_differences64<T4>(loss, x, wrong));
    // Wrong: the backward at offset 0 instead of the forward's.
    const T4 wrong_offset = attn::rope_backward<double>(r, 50.0, 0, layout);
    attn::testing::check_grad64_caught(
        op, "x", attn::testing::central_differences64<T4>(loss, x, wrong_offset));
  }
}

TEST_CASE("bad input: an odd head size or a theta that is not > 0 is a one-line error") {
  const T4 odd = xt::zeros<double>({1, 1, 2, 5});
  const std::string e = error_of([&] { (void)attn::rope<double>(odd); });
  CHECK(e ==
        "attn::rope: head size hs = 5 is odd, but RoPE rotates pairs of features (expected "
        "an even hs >= 2)");
  const T4 x = xt::zeros<double>({1, 1, 2, 4});
  for (const double theta : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity()}) {
    CAPTURE(theta);
    const std::string msg = error_of([&] { (void)attn::rope<double>(x, theta); });
    CHECK(msg.starts_with("attn::rope: theta must be a finite number > 0"));
    CHECK(msg.find('\n') == std::string::npos);
  }
  CHECK(error_of([&] {
          (void)attn::rope_backward<double>(odd);
        }).starts_with("attn::rope_backward: head size hs = 5 is odd"));
  const T4 empty = xt::zeros<double>({1, 1, 2, 0});
  CHECK(error_of([&] {
          (void)attn::rope<double>(empty);
        }).starts_with("attn::rope: head size hs = 0 is 0"));
}

}  // TEST_SUITE
