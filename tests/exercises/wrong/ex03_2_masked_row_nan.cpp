// Wrong: subtracts the max even when it is -inf: -inf - (-inf) is NaN for a fully masked row.
#include <algorithm>
#include <cmath>

#include "exercises.hpp"

namespace ex03 {

attn::Matrix softmax(const attn::Matrix& x) {
  const std::size_t T = x.shape()[0], S = x.shape()[1];
  attn::Matrix out({T, S});
  for (std::size_t t = 0; t < T; ++t) {
    float m = x(t, 0);
    for (std::size_t s = 1; s < S; ++s) m = std::max(m, x(t, s));
    float sum = 0.0f;
    for (std::size_t s = 0; s < S; ++s) sum += std::exp(x(t, s) - m);
    for (std::size_t s = 0; s < S; ++s) out(t, s) = std::exp(x(t, s) - m) / sum;
  }
  return out;
}

}  // namespace ex03
