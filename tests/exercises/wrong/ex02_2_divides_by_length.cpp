// Wrong: every allowed entry is 1 / T instead of 1 / (t + 1): rows do not sum to 1.

#include "exercises.hpp"

namespace ex02 {

attn::Matrix averaging_weights_tril(std::size_t T) {
  attn::Matrix weights = xt::zeros<float>({T, T});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = 0; i <= t; ++i) weights(t, i) = 1.0f / static_cast<float>(T);
  return weights;
}

}  // namespace ex02
