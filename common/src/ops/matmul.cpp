// matmul.cpp: the matrix product as three loops (chapter 02, the averaging trick, onward).
// Deliberately plain: it is the reference that every faster product in the course is tested
// against, so it must be obviously right.
#include "attn/ops/matmul.hpp"

#include "attn/core/check.hpp"

namespace attn {

Matrix matmul(const Matrix& a, const Matrix& b) {
  const std::size_t M = a.shape()[0];
  const std::size_t K = a.shape()[1];
  const std::size_t N = b.shape()[1];
  if (b.shape()[0] != K) {
    shape_error("attn::matmul", "(M, K) @ (K, N) with the same K",
                shape_str(a.shape()) + " @ " + shape_str(b.shape()));
  }
  Matrix out = xt::zeros<float>({M, N});  // (M, K) @ (K, N) -> (M, N)
  const float* A = a.data();
  const float* Bm = b.data();
  float* O = out.data();
  // out[i, :] += a[i, k] * b[k, :] for every k. The i-k-j order keeps the innermost loop on
  // contiguous rows of b and out (row-major), which the compiler can vectorise; the textbook
  // i-j-k order would stride down a column of b instead.
  for (std::size_t i = 0; i < M; ++i) {
    float* out_row = O + i * N;  // (N,)
    for (std::size_t k = 0; k < K; ++k) {
      const float aik = A[i * K + k];
      const float* b_row = Bm + k * N;  // (N,)
      for (std::size_t j = 0; j < N; ++j) out_row[j] += aik * b_row[j];
    }
  }
  return out;
}

}  // namespace attn
