// Wrong: compares the number of elements of y and dy, not their shapes, so (2, 3) against (3, 2) passes.
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

attn::Matrix softmax_backward(const attn::Matrix& y, const attn::Matrix& dy) {
  if (y.size() != dy.size()) throw std::invalid_argument("softmax_backward: sizes differ");
  const std::size_t N = y.shape()[0], S = y.shape()[1];
  attn::Matrix dx = y;  // (N, S)
  for (std::size_t r = 0; r < N; ++r) {
    double dot = 0.0;  // sum_j dy_j y_j, reading dy as if it had y's shape
    for (std::size_t c = 0; c < S; ++c)
      dot += static_cast<double>(dy.data()[r * S + c]) * static_cast<double>(y(r, c));
    for (std::size_t c = 0; c < S; ++c)
      dx(r, c) = static_cast<float>(static_cast<double>(y(r, c)) *
                                    (static_cast<double>(dy.data()[r * S + c]) - dot));
  }
  return dx;
}

}  // namespace ex08
