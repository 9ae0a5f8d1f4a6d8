// Tests for attn/ops/matmul.hpp: the plain matrix product every faster one is checked against.
// A hand-worked example, a comparison with an independent double loop over std::vector, and
// the shape error.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "attn/ops/matmul.hpp"
#include "attn/core/random.hpp"
#include "test_helpers.hpp"

TEST_SUITE("matmul") {

TEST_CASE("a 2 x 3 times 3 x 2 product worked by hand") {
  const attn::Matrix a = {{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}};
  const attn::Matrix b = {{7.0f, 8.0f}, {9.0f, 10.0f}, {11.0f, 12.0f}};
  // [1*7 + 2*9 + 3*11, 1*8 + 2*10 + 3*12] = [58, 64]; [4*7 + 5*9 + 6*11, ...] = [139, 154]
  const attn::Matrix want = {{58.0f, 64.0f}, {139.0f, 154.0f}};
  CHECK_TENSOR_NEAR(attn::matmul(a, b), want, 0.0, 0.0);
}

TEST_CASE("random products match a double-precision loop") {
  attn::Rng rng(31);
  for (const auto [M, K, N] :
       {std::array<std::size_t, 3>{1, 1, 1}, {5, 7, 3}, {16, 64, 33}, {1, 40, 9}, {12, 1, 12}}) {
    const attn::Matrix a = attn::randn(rng, M, K);
    const attn::Matrix b = attn::randn(rng, K, N);
    std::vector<double> A(a.begin(), a.end());
    std::vector<double> B(b.begin(), b.end());
    attn::Matrix want(attn::Matrix::shape_type{M, N});
    for (std::size_t i = 0; i < M; ++i) {
      for (std::size_t j = 0; j < N; ++j) {
        double s = 0.0;
        for (std::size_t k = 0; k < K; ++k) s += A[i * K + k] * B[k * N + j];
        want(i, j) = static_cast<float>(s);
      }
    }
    CAPTURE(M);
    CAPTURE(K);
    CAPTURE(N);
    CHECK_TENSOR_NEAR(attn::matmul(a, b), want, 1e-5, 1e-5);
  }
}

TEST_CASE("multiplying by the identity changes nothing") {
  attn::Rng rng(1);
  const attn::Matrix a = attn::randn(rng, 4, 6);
  const attn::Matrix eye = xt::eye<float>(6);
  CHECK_TENSOR_NEAR(attn::matmul(a, eye), a, 0.0, 0.0);
}

TEST_CASE("an empty inner dimension gives zeros") {
  const attn::Matrix a(attn::Matrix::shape_type{2, 0});
  const attn::Matrix b(attn::Matrix::shape_type{0, 3});
  const attn::Matrix want = xt::zeros<float>({2, 3});
  CHECK_TENSOR_NEAR(attn::matmul(a, b), want, 0.0, 0.0);
}

TEST_CASE("mismatched inner dimensions are an error naming both shapes") {
  const attn::Matrix a = xt::zeros<float>({2, 3});
  const attn::Matrix b = xt::zeros<float>({4, 5});
  CHECK_THROWS_WITH_AS(
      attn::matmul(a, b),
      "attn::matmul: expected (M, K) @ (K, N) with the same K, got (2, 3) @ (4, 5)",
      std::invalid_argument);
}

}  // TEST_SUITE
