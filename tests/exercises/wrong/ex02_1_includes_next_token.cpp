// Wrong: off by one: row t averages tokens 0..t+1, a peek at the future.

#include "exercises.hpp"

namespace ex02 {

attn::Matrix running_mean_loop(const attn::Matrix& x) {
  const std::size_t T = x.shape()[0], C = x.shape()[1];
  attn::Matrix xbar = xt::zeros<float>({T, C});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t c = 0; c < C; ++c) {
      const std::size_t last = t + 1 < T ? t + 1 : t;
      float sum = 0.0f;
      for (std::size_t i = 0; i <= last; ++i) sum += x(i, c);
      xbar(t, c) = sum / static_cast<float>(last + 1);
    }
  return xbar;
}

}  // namespace ex02
