// Wrong: the additive mask as triu(ones, 1) * -inf: NaN (0 * -inf) on and below the diagonal.
#include <limits>

#include "exercises.hpp"

namespace ex03 {

attn::Mask causal_mask(std::size_t T) {
  attn::Mask m = xt::zeros<bool>({T, T});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t s = 0; s <= t; ++s) m(t, s) = true;
  return m;
}

attn::Matrix causal_mask_additive(std::size_t T) {
  attn::Matrix m({T, T});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t s = 0; s < T; ++s)
      m(t, s) = (s > t ? 1.0f : 0.0f) * -std::numeric_limits<float>::infinity();
  return m;
}

}  // namespace ex03
