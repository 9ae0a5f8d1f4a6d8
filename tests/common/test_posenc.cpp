// Tests for attn/ops/posenc.hpp: sinusoidal positional encodings (chapter 06).
// Hand values, odd widths, the range a heatmap relies on, and the property that makes these
// encodings useful: the dot product of two positions depends only on their distance.
#include <doctest/doctest.h>

#include <cmath>

#include "attn/ops/posenc.hpp"
#include "test_helpers.hpp"

namespace {

// The formula as the original paper's code writes it: w_i = exp(2i * -ln(10000) / C).
attn::Matrix reference_positions(std::size_t T, std::size_t C) {
  attn::Matrix pe(attn::Matrix::shape_type{T, C});
  for (std::size_t p = 0; p < T; ++p) {
    for (std::size_t i = 0; 2 * i < C; ++i) {
      const double w =
          std::exp(static_cast<double>(2 * i) * -std::log(10000.0) / static_cast<double>(C));
      pe(p, 2 * i) = static_cast<float>(std::sin(static_cast<double>(p) * w));
      if (2 * i + 1 < C)
        pe(p, 2 * i + 1) = static_cast<float>(std::cos(static_cast<double>(p) * w));
    }
  }
  return pe;
}

}  // namespace

TEST_SUITE("posenc") {

TEST_CASE("position 0 is sin 0 = 0 in even columns and cos 0 = 1 in odd ones") {
  const attn::Matrix pe = attn::sinusoidal_positions(3, 8);
  CHECK(pe.shape() == std::array<std::size_t, 2>{3, 8});
  for (std::size_t col = 0; col < 8; ++col) CHECK(pe(0, col) == (col % 2 == 0 ? 0.0f : 1.0f));
}

TEST_CASE("hand-computed entries for C = 4") {
  // Column pairs (0, 1) have w = 1, columns (2, 3) have w = 10000^(-2/4) = 1/100.
  const attn::Matrix pe = attn::sinusoidal_positions(3, 4);
  const attn::Matrix want = {
      {0.0f, 1.0f, 0.0f, 1.0f},
      {0.8414709848078965f, 0.5403023058681398f, 0.009999833334166664f, 0.9999500004166653f},
      {0.9092974268256817f, -0.4161468365471424f, 0.01999866669333308f, 0.9998000066665778f}};
  CHECK_TENSOR_NEAR(pe, want, 1e-7, 0.0);
}

TEST_CASE("an odd C ends with a sine column") {
  // C = 5: the last column (index 4) is sin(p * 10000^(-4/5)); 10000^(-0.8) = 6.3096e-4.
  const attn::Matrix pe = attn::sinusoidal_positions(4, 5);
  CHECK(pe.shape() == std::array<std::size_t, 2>{4, 5});
  CHECK(static_cast<double>(pe(3, 4)) == doctest::Approx(std::sin(3.0 * 6.309573444801932e-4)));
  CHECK(std::abs(pe(3, 4) - 0.0018928709f) < 1e-9f);
  CHECK_TENSOR_NEAR(pe, reference_positions(4, 5), 1e-7, 0.0);
}

TEST_CASE("matches the exp/log form of the formula for a larger table") {
  CHECK_TENSOR_NEAR(attn::sinusoidal_positions(200, 33), reference_positions(200, 33), 1e-6, 0.0);
  CHECK_TENSOR_NEAR(attn::sinusoidal_positions(64, 64), reference_positions(64, 64), 1e-6, 0.0);
}

TEST_CASE("every value lies in [-1, 1], ready for a fixed-range heatmap") {
  const attn::Matrix pe = attn::sinusoidal_positions(512, 64);
  CHECK(xt::amin(pe)() >= -1.0f);
  CHECK(xt::amax(pe)() <= 1.0f);
  CHECK(xt::amin(pe)() < -0.99f);  // and the waves really swing through the whole range
  CHECK(xt::amax(pe)() > 0.99f);
}

TEST_CASE("the dot product of two positions depends only on their distance") {
  // sum_i sin(p w_i) sin(q w_i) + cos(p w_i) cos(q w_i) = sum_i cos((p - q) w_i).
  const std::size_t C = 16;
  const attn::Matrix pe = attn::sinusoidal_positions(60, C);
  auto dot = [&](std::size_t p, std::size_t q) {
    double s = 0.0;
    for (std::size_t c = 0; c < C; ++c)
      s += static_cast<double>(pe(p, c)) * static_cast<double>(pe(q, c));
    return s;
  };
  for (const std::size_t k : {1u, 5u, 20u}) {
    double want = 0.0;
    for (std::size_t i = 0; 2 * i < C; ++i)
      want +=
          std::cos(static_cast<double>(k) * std::pow(10000.0, -static_cast<double>(2 * i) / 16.0));
    for (const std::size_t p : {0u, 7u, 33u})
      CHECK(dot(p, p + k) == doctest::Approx(want).epsilon(1e-6));
  }
  CHECK(dot(10, 10) == doctest::Approx(8.0).epsilon(1e-6));  // C/2 pairs of sin^2 + cos^2
}

TEST_CASE("empty tables") {
  CHECK(attn::sinusoidal_positions(0, 8).shape() == std::array<std::size_t, 2>{0, 8});
  CHECK(attn::sinusoidal_positions(5, 0).shape() == std::array<std::size_t, 2>{5, 0});
}

}  // TEST_SUITE
