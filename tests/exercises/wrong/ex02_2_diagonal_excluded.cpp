// Wrong: mask off by one: i < t, so a token never sees itself (row 0 is empty).

#include "exercises.hpp"

namespace ex02 {

attn::Matrix averaging_weights_tril(std::size_t T) {
  attn::Matrix weights = xt::zeros<float>({T, T});
  for (std::size_t t = 1; t < T; ++t)
    for (std::size_t i = 0; i < t; ++i) weights(t, i) = 1.0f / static_cast<float>(t);
  return weights;
}

}  // namespace ex02
