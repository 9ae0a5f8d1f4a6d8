// Wrong: the mean over the wrong axis: over the channels c of each row, not over time.

#include "exercises.hpp"

namespace ex02 {

attn::Matrix running_mean_loop(const attn::Matrix& x) {
  const std::size_t T = x.shape()[0], C = x.shape()[1];
  attn::Matrix xbar = xt::zeros<float>({T, C});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t c = 0; c < C; ++c) {
      float sum = 0.0f;
      for (std::size_t i = 0; i <= c; ++i) sum += x(t, i);
      xbar(t, c) = sum / static_cast<float>(c + 1);
    }
  return xbar;
}

}  // namespace ex02
