// Wrong: one dot product over the whole matrix instead of one per row.
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

attn::Matrix softmax_backward(const attn::Matrix& y, const attn::Matrix& dy) {
  if (y.shape() != dy.shape()) throw std::invalid_argument("softmax_backward: shapes differ");
  const std::size_t N = y.shape()[0], S = y.shape()[1];
  attn::Matrix dx = y;  // (N, S)
  double dot = 0.0;  // sum over every row and column of dy * y
  for (std::size_t r = 0; r < N; ++r)
    for (std::size_t c = 0; c < S; ++c)
      dot += static_cast<double>(dy(r, c)) * static_cast<double>(y(r, c));
  for (std::size_t r = 0; r < N; ++r) {
    for (std::size_t c = 0; c < S; ++c)
      dx(r, c) = static_cast<float>(static_cast<double>(y(r, c)) *
                                    (static_cast<double>(dy(r, c)) - dot));
  }
  return dx;
}

}  // namespace ex08
