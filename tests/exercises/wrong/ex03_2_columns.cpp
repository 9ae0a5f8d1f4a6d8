// Wrong: the softmax over the wrong axis: each column sums to 1 instead of each row.
#include <algorithm>
#include <cmath>
#include <limits>

#include "exercises.hpp"

namespace ex03 {

attn::Matrix softmax(const attn::Matrix& x) {
  const std::size_t T = x.shape()[0], S = x.shape()[1];
  attn::Matrix out = xt::zeros<float>({T, S});
  for (std::size_t s = 0; s < S; ++s) {
    float m = -std::numeric_limits<float>::infinity();
    for (std::size_t t = 0; t < T; ++t) m = std::max(m, x(t, s));
    if (m == -std::numeric_limits<float>::infinity()) continue;
    float sum = 0.0f;
    for (std::size_t t = 0; t < T; ++t) sum += std::exp(x(t, s) - m);
    for (std::size_t t = 0; t < T; ++t) out(t, s) = std::exp(x(t, s) - m) / sum;
  }
  return out;
}

}  // namespace ex03
