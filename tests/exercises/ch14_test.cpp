// Don't edit: these tests check your exercises.
// tests/exercises/ch14_test.cpp: chapter 14 (GPT-2 on the course's attention, docs/14-gpt2.md).
// Expected values come from plain loops over the fused matrix and its product, never from the
// attn:: function the reference solution forwards to. Run them with
// build/default/bin/attn-check 14.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <stdexcept>

#include "attn/core/xt.hpp"
#include "exercises.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Matrix;

// A (R, K) matrix with no visible pattern: m(i, j) = sin(1.3 i + 0.7 j + phase).
Matrix wiggly(std::size_t R, std::size_t K, double phase) {
  Matrix m(std::array<std::size_t, 2>{R, K});
  for (std::size_t i = 0; i < R; ++i)
    for (std::size_t j = 0; j < K; ++j)
      m(i, j) = static_cast<float>(
          std::sin(1.3 * static_cast<double>(i) + 0.7 * static_cast<double>(j) + phase));
  return m;
}

}  // namespace

TEST_SUITE("ex14.1 Split c_attn into q, k, v") {

TEST_CASE("each of w_q, w_k, w_v is its own block of C columns, every row kept" *
          doctest::description("hint 2")) {
  const std::size_t C = 4;
  const Matrix fused = wiggly(C, 3 * C, 0.3);
  const std::array<Matrix, 3> qkv = ex14::split_qkv(fused);
  for (std::size_t j = 0; j < 3; ++j) {
    INFO("matrix "
         << "qkv"[j] << " (block " << j << ")");
    REQUIRE(qkv[j].shape()[0] == C);
    REQUIRE(qkv[j].shape()[1] == C);
    Matrix want(std::array<std::size_t, 2>{C, C});
    for (std::size_t r = 0; r < C; ++r)
      for (std::size_t c = 0; c < C; ++c) want(r, c) = fused(r, j * C + c);
    CHECK_TENSOR_NEAR(qkv[j], want, 0.0, 0.0);
  }
}

TEST_CASE("x @ w_q, x @ w_k, x @ w_v are the three thirds of x @ c_attn" *
          doctest::description("hint 1")) {
  const std::size_t C = 6;
  const Matrix fused = wiggly(C, 3 * C, 1.1);
  const Matrix x = wiggly(2, C, 2.0);  // two tokens
  const std::array<Matrix, 3> qkv = ex14::split_qkv(fused);
  for (std::size_t j = 0; j < 3; ++j) {
    INFO("matrix "
         << "qkv"[j]);
    REQUIRE(qkv[j].shape()[0] == C);
    REQUIRE(qkv[j].shape()[1] == C);
    for (std::size_t t = 0; t < 2; ++t)
      for (std::size_t c = 0; c < C; ++c) {
        double got = 0.0, want = 0.0;
        for (std::size_t i = 0; i < C; ++i) {
          got += static_cast<double>(x(t, i)) * static_cast<double>(qkv[j](i, c));
          want += static_cast<double>(x(t, i)) * static_cast<double>(fused(i, j * C + c));
        }
        CHECK(got == doctest::Approx(want).epsilon(1e-12));
      }
  }
}

TEST_CASE("C = 1: three single columns" * doctest::description("hint 3")) {
  const Matrix fused{{1.0f, 2.0f, 3.0f}};
  const std::array<Matrix, 3> qkv = ex14::split_qkv(fused);
  for (std::size_t j = 0; j < 3; ++j) {
    REQUIRE(qkv[j].size() == 1);
    CHECK(qkv[j](0, 0) == static_cast<float>(j + 1));
  }
}

TEST_CASE("a matrix that is not (C, 3C) is refused") {
  CHECK_THROWS_AS(ex14::split_qkv(wiggly(4, 13, 0.0)), std::invalid_argument);
  CHECK_THROWS_AS(ex14::split_qkv(wiggly(4, 4, 0.0)), std::invalid_argument);
  CHECK_THROWS_AS(ex14::split_qkv(wiggly(12, 4, 0.0)), std::invalid_argument);
  CHECK_THROWS_AS(ex14::split_qkv(Matrix(std::array<std::size_t, 2>{0, 0})), std::invalid_argument);
}

}  // TEST_SUITE
