// Don't edit: these tests check your exercises.
// tests/exercises/ch14_test.cpp: chapter 14 (GPT-2 on the course's attention, docs/14-gpt2.md).
// Expected values come from plain loops over the fused matrix and its product (ex14.1, ex14.3:
// the full forward of every position in double) and from file layouts written out by hand
// (ex14.2), never from the attn:: functions the reference solution uses. Run them with
// build/default/bin/attn-check 14.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

// n as the 8 bytes a safetensors file starts with: little-endian, its low byte first.
std::string length_bytes(std::uint64_t n) {
  std::string out;
  for (int i = 0; i < 8; ++i) {
    out += static_cast<char>(static_cast<unsigned char>(n & 0xffu));
    n >>= 8;
  }
  return out;
}

ex14::TensorEntry entry(const char* dtype, std::vector<std::uint64_t> shape, std::uint64_t begin,
                        std::uint64_t end) {
  ex14::TensorEntry e;
  e.dtype = dtype;
  e.shape = std::move(shape);
  e.begin = begin;
  e.end = end;
  return e;
}

// The full forward's q, k, v of every position, in double: rows of x (T, C) @ w (C, 3C) + b
// (3C,), cut into three blocks of C columns. qkv[t][j][c].
std::vector<std::array<std::vector<double>, 3>> full_forward_qkv(const Matrix& x, const Matrix& w,
                                                                 const attn::Vector& b) {
  const std::size_t T = x.shape()[0], C = x.shape()[1];
  std::vector<std::array<std::vector<double>, 3>> out(T);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t j = 0; j < 3; ++j) {
      out[t][j].assign(C, 0.0);
      for (std::size_t c = 0; c < C; ++c) {
        double sum = static_cast<double>(b(j * C + c));
        for (std::size_t i = 0; i < C; ++i)
          sum += static_cast<double>(x(t, i)) * static_cast<double>(w(i, j * C + c));
        out[t][j][c] = sum;
      }
    }
  return out;
}

// A (n,) vector with no visible pattern: v(i) = cos(0.9 i + phase).
attn::Vector wiggly_vector(std::size_t n, double phase) {
  attn::Vector v = attn::Vector::from_shape({n});
  for (std::size_t i = 0; i < n; ++i)
    v(i) = static_cast<float>(std::cos(0.9 * static_cast<double>(i) + phase));
  return v;
}

// Row r of m, as the one token a step sees.
attn::Vector row(const Matrix& m, std::size_t r) {
  attn::Vector v = attn::Vector::from_shape({m.shape()[1]});
  for (std::size_t c = 0; c < m.shape()[1]; ++c) v(c) = m(r, c);
  return v;
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

TEST_SUITE("ex14.2 Check a safetensors entry") {

// A file of N = 40 header bytes and a data section of 8576 bytes: wpe.weight, F32 (64, 32), at
// [256, 8448), 128 bytes after it.
constexpr std::uint64_t kN = 40, kData = 8576, kFile = 8 + kN + kData;

TEST_CASE("a tensor starts at 8 + N + begin, N read little-endian" *
          doctest::description("hint 1")) {
  CHECK(ex14::tensor_offset(length_bytes(kN), kFile, entry("F32", {64, 32}, 256, 8448)) ==
        8 + kN + 256);
  // Only the first 8 bytes are the length; the JSON after them is the caller's.
  CHECK(ex14::tensor_offset(length_bytes(kN) + "{\"wpe.weight\": {}}", kFile,
                            entry("F32", {64, 32}, 256, 8448)) == 8 + kN + 256);
  // N = 416, bytes a0 01 00 ...: a byte above 127 and a second byte that counts 256.
  const std::uint64_t n = 416;
  CHECK(ex14::tensor_offset(length_bytes(n), 8 + n + 20, entry("F16", {10}, 0, 20)) == 8 + n);
  // N = 0: no header at all, the data section starts at byte 8.
  CHECK(ex14::tensor_offset(length_bytes(0), 8 + 12, entry("F32", {3}, 0, 12)) == 8);
}

TEST_CASE("offsets count from the data section, which ends at the file's end" *
          doctest::description("hint 2")) {
  // The last tensor ends exactly where the file ends: accepted.
  CHECK(ex14::tensor_offset(length_bytes(kN), kFile, entry("F32", {32}, kData - 128, kData)) ==
        8 + kN + kData - 128);
  // An empty tensor right at the end: accepted.
  CHECK(ex14::tensor_offset(length_bytes(kN), kFile, entry("F32", {0, 32}, kData, kData)) ==
        8 + kN + kData);
  // Inside the file, but past the data section's end by 8 + N bytes or fewer: refused.
  CHECK_THROWS_AS(
      ex14::tensor_offset(length_bytes(kN), kFile, entry("F32", {32}, kData - 128 + 4, kData + 4)),
      std::invalid_argument);
  CHECK_THROWS_AS(ex14::tensor_offset(length_bytes(kN), kFile,
                                      entry("F32", {32}, kData + kN - 128, kData + kN)),
                  std::invalid_argument);
  CHECK_THROWS_AS(ex14::tensor_offset(length_bytes(kN), kFile,
                                      entry("F32", {32}, kData + kN + 8 - 128, kData + kN + 8)),
                  std::invalid_argument);
  // begin after end.
  CHECK_THROWS_AS(ex14::tensor_offset(length_bytes(kN), kFile, entry("F32", {0}, 300, 200)),
                  std::invalid_argument);
}

TEST_CASE("the byte count: elements times the dtype's size, never wrapped around" *
          doctest::description("hint 3")) {
  const std::string s = length_bytes(kN);
  CHECK(ex14::tensor_offset(s, kFile, entry("BF16", {3, 5}, 10, 40)) == 8 + kN + 10);
  CHECK(ex14::tensor_offset(s, kFile, entry("F32", {}, 100, 104)) == 8 + kN + 100);  // scalar
  CHECK(ex14::tensor_offset(s, kFile, entry("F32", {7, 0, 3}, 5, 5)) == 8 + kN + 5);
  // One byte too many or too few.
  CHECK_THROWS_AS(ex14::tensor_offset(s, kFile, entry("F32", {64, 32}, 256, 8449)),
                  std::invalid_argument);
  CHECK_THROWS_AS(ex14::tensor_offset(s, kFile, entry("F32", {64, 32}, 256, 8447)),
                  std::invalid_argument);
  CHECK_THROWS_AS(ex14::tensor_offset(s, kFile, entry("F16", {64, 32}, 256, 8448)),
                  std::invalid_argument);
  // 2^32 * 2^32 * 4 bytes is 2^66: wrapped around 2^64 it would be 0, or 4 for the third shape.
  const std::uint64_t big = std::uint64_t{1} << 32;
  CHECK_THROWS_AS(ex14::tensor_offset(s, kFile, entry("F32", {big, big}, 0, 0)),
                  std::invalid_argument);
  CHECK_THROWS_AS(ex14::tensor_offset(s, kFile, entry("F16", {big, big, 2}, 0, 0)),
                  std::invalid_argument);
  CHECK_THROWS_AS(ex14::tensor_offset(s, kFile, entry("F32", {big, big + 1, big}, 0, 0)),
                  std::invalid_argument);
}

TEST_CASE("a length, a dtype or a file the format does not allow is refused") {
  const ex14::TensorEntry e = entry("F32", {1}, 0, 4);
  CHECK_THROWS_AS(ex14::tensor_offset(length_bytes(0).substr(0, 7), 12, e), std::invalid_argument);
  CHECK_THROWS_AS(ex14::tensor_offset(length_bytes(0), 7, e), std::invalid_argument);
  // The header runs past the end of the file, by one byte or by almost 2^64.
  CHECK_THROWS_AS(ex14::tensor_offset(length_bytes(9), 8 + 8 + 4, e), std::invalid_argument);
  CHECK_THROWS_AS(
      ex14::tensor_offset(length_bytes(std::numeric_limits<std::uint64_t>::max() - 3), 64, e),
      std::invalid_argument);
  for (const char* dtype : {"F64", "I32", "f32", "U8", ""}) {
    INFO("dtype '" << dtype << "'");
    CHECK_THROWS_AS(ex14::tensor_offset(length_bytes(kN), kFile, entry(dtype, {1}, 0, 4)),
                    std::invalid_argument);
  }
}

}  // TEST_SUITE

TEST_SUITE("ex14.3 The bias in the KV-cache step") {

TEST_CASE("without a bias, q, k, v are the three blocks of h @ c_attn" *
          doctest::description("hint 1")) {
  const std::size_t C = 4;
  const Matrix w = wiggly(C, 3 * C, 0.4);
  const Matrix x = wiggly(1, C, 1.7);
  const attn::Vector b = xt::zeros<float>(std::array<std::size_t, 1>{3 * C});
  const auto want = full_forward_qkv(x, w, b);
  const std::array<attn::Vector, 3> got = ex14::step_qkv(row(x, 0), w, b);
  for (std::size_t j = 0; j < 3; ++j) {
    INFO("vector "
         << "qkv"[j]);
    REQUIRE(got[j].size() == C);
    for (std::size_t c = 0; c < C; ++c)
      CHECK(static_cast<double>(got[j](c)) == doctest::Approx(want[0][j][c]).epsilon(1e-5));
  }
}

TEST_CASE("for h = 0, q, k, v are b_q, b_k, b_v, each its own third of c_attn's bias" *
          doctest::description("hint 2")) {
  const std::size_t C = 3;
  const Matrix w = wiggly(C, 3 * C, 0.9);
  const attn::Vector b = wiggly_vector(3 * C, 0.2);
  const attn::Vector h = xt::zeros<float>(std::array<std::size_t, 1>{C});
  const std::array<attn::Vector, 3> got = ex14::step_qkv(h, w, b);
  for (std::size_t j = 0; j < 3; ++j) {
    INFO("vector "
         << "qkv"[j] << ": its bias is c_attn_b[" << j * C << ", " << (j + 1) * C << ")");
    REQUIRE(got[j].size() == C);
    for (std::size_t c = 0; c < C; ++c) CHECK(got[j](c) == b(j * C + c));
  }
}

TEST_CASE("every position's step gives the full forward's q, k, v for that row" *
          doctest::description("hint 3")) {
  const std::size_t C = 6, T = 5;
  const Matrix w = wiggly(C, 3 * C, 2.3);
  const attn::Vector b = wiggly_vector(3 * C, 1.4);
  const Matrix x = wiggly(T, C, 0.6);
  const auto want = full_forward_qkv(x, w, b);
  for (std::size_t t = 0; t < T; ++t) {
    const std::array<attn::Vector, 3> got = ex14::step_qkv(row(x, t), w, b);
    for (std::size_t j = 0; j < 3; ++j) {
      INFO("position " << t << ", vector "
                       << "qkv"[j]);
      REQUIRE(got[j].size() == C);
      for (std::size_t c = 0; c < C; ++c)
        CHECK(static_cast<double>(got[j](c)) == doctest::Approx(want[t][j][c]).epsilon(1e-5));
    }
  }
  // C = 1: q = h w(0, 0) + b(0), k = h w(0, 1) + b(1), v = h w(0, 2) + b(2).
  const Matrix w1{{2.0f, 3.0f, 5.0f}};
  const attn::Vector b1{0.5f, -1.0f, 0.25f};
  const std::array<attn::Vector, 3> got = ex14::step_qkv(attn::Vector{2.0f}, w1, b1);
  CHECK(got[0](0) == 4.5f);
  CHECK(got[1](0) == 5.0f);
  CHECK(got[2](0) == 10.25f);
}

TEST_CASE("shapes that disagree are refused") {
  const Matrix w = wiggly(4, 12, 0.0);
  const attn::Vector b = wiggly_vector(12, 0.0);
  const attn::Vector h = wiggly_vector(4, 0.0);
  CHECK_THROWS_AS(ex14::step_qkv(wiggly_vector(3, 0.0), w, b), std::invalid_argument);
  CHECK_THROWS_AS(ex14::step_qkv(wiggly_vector(12, 0.0), w, b), std::invalid_argument);
  CHECK_THROWS_AS(ex14::step_qkv(h, w, wiggly_vector(4, 0.0)), std::invalid_argument);
  CHECK_THROWS_AS(ex14::step_qkv(h, w, wiggly_vector(13, 0.0)), std::invalid_argument);
  CHECK_THROWS_AS(ex14::step_qkv(h, wiggly(4, 13, 0.0), b), std::invalid_argument);
  CHECK_THROWS_AS(ex14::step_qkv(h, wiggly(12, 4, 0.0), b), std::invalid_argument);
  CHECK_THROWS_AS(
      ex14::step_qkv(attn::Vector::from_shape({0}), Matrix(std::array<std::size_t, 2>{0, 0}),
                     attn::Vector::from_shape({0})),
      std::invalid_argument);
}

}  // TEST_SUITE
