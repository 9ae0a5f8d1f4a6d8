// Wrong: divides the prefix sum by t instead of t + 1 (and row 0 by 1).

#include "exercises.hpp"

namespace ex02 {

attn::Matrix running_mean_loop(const attn::Matrix& x) {
  const std::size_t T = x.shape()[0], C = x.shape()[1];
  attn::Matrix xbar = xt::zeros<float>({T, C});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t c = 0; c < C; ++c) {
      float sum = 0.0f;
      for (std::size_t i = 0; i <= t; ++i) sum += x(i, c);
      xbar(t, c) = sum / static_cast<float>(t == 0 ? 1 : t);
    }
  return xbar;
}

}  // namespace ex02
