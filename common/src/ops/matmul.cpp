// matmul.cpp: the matrix product as three loops (chapter 02, the averaging trick, onward).
// Deliberately plain: it is the reference that every faster product in the course is tested
// against, so it must be obviously right.
#include "attn/ops/matmul.hpp"

#include "attn/core/check.hpp"

namespace attn {

namespace {

template <class Real>
xt::xtensor<Real, 2> matmul_of(const xt::xtensor<Real, 2>& a, const xt::xtensor<Real, 2>& b) {
  const std::size_t M = a.shape()[0];
  const std::size_t K = a.shape()[1];
  const std::size_t N = b.shape()[1];
  if (b.shape()[0] != K) {
    shape_error("attn::matmul", "(M, K) @ (K, N) with the same K",
                shape_str(a.shape()) + " @ " + shape_str(b.shape()));
  }
  xt::xtensor<Real, 2> out = xt::zeros<Real>({M, N});  // (M, K) @ (K, N) -> (M, N)
  const Real* A = a.data();
  const Real* Bm = b.data();
  Real* O = out.data();
  // out[i, :] += a[i, k] * b[k, :] for every k. The i-k-j order keeps the innermost loop on
  // contiguous rows of b and out (row-major), which the compiler can vectorise; the textbook
  // i-j-k order would stride down a column of b instead.
  for (std::size_t i = 0; i < M; ++i) {
    Real* out_row = O + i * N;  // (N,)
    for (std::size_t k = 0; k < K; ++k) {
      const Real aik = A[i * K + k];
      const Real* b_row = Bm + k * N;  // (N,)
      for (std::size_t j = 0; j < N; ++j) out_row[j] += aik * b_row[j];
    }
  }
  return out;
}

}  // namespace

Matrix matmul(const Matrix& a, const Matrix& b) { return matmul_of(a, b); }
template <std::same_as<double> Real>
xt::xtensor<Real, 2> matmul(const xt::xtensor<Real, 2>& a, const xt::xtensor<Real, 2>& b) {
  return matmul_of(a, b);
}
template Tensor64<2> matmul<double>(const Tensor64<2>&, const Tensor64<2>&);

}  // namespace attn
