// Wrong: the dot product sum_j dy_j y_j is not subtracted (dx = y * dy, the diagonal of the Jacobian only).
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

attn::Matrix softmax_backward(const attn::Matrix& y, const attn::Matrix& dy) {
  if (y.shape() != dy.shape()) throw std::invalid_argument("softmax_backward: shapes differ");
  const std::size_t N = y.shape()[0], S = y.shape()[1];
  attn::Matrix dx = y;  // (N, S)
  for (std::size_t r = 0; r < N; ++r) {
    for (std::size_t c = 0; c < S; ++c)
      dx(r, c) = static_cast<float>(static_cast<double>(y(r, c)) * static_cast<double>(dy(r, c)));
  }
  return dx;
}

}  // namespace ex08
