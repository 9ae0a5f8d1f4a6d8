// Wrong: the transposed mask: allowed where s >= t, every query sees the future.
#include <limits>

#include "exercises.hpp"

namespace ex03 {

attn::Mask causal_mask(std::size_t T) {
  attn::Mask m = xt::zeros<bool>({T, T});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t s = t; s < T; ++s) m(t, s) = true;
  return m;
}

attn::Matrix causal_mask_additive(std::size_t T) {
  attn::Matrix m = xt::zeros<float>({T, T});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t s = t + 1; s < T; ++s) m(t, s) = -std::numeric_limits<float>::infinity();
  return m;
}

}  // namespace ex03
