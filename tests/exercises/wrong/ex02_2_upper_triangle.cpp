// Wrong: the upper triangle (i >= t) instead of the lower: every row looks at the future.

#include "exercises.hpp"

namespace ex02 {

attn::Matrix averaging_weights_tril(std::size_t T) {
  attn::Matrix weights = xt::zeros<float>({T, T});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = t; i < T; ++i) weights(t, i) = 1.0f / static_cast<float>(T - t);
  return weights;
}

}  // namespace ex02
