// Wrong: a row with no allowed key divides 0 by 0: NaN instead of zeros.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "exercises.hpp"

namespace ex03 {

attn::Matrix masked_softmax(const attn::Matrix& scores, const attn::Mask& allowed) {
  if (scores.shape() != allowed.shape()) throw std::invalid_argument("shapes differ");
  const std::size_t T = scores.shape()[0], S = scores.shape()[1];
  attn::Matrix out = xt::zeros<float>({T, S});
  for (std::size_t t = 0; t < T; ++t) {
    float m = -std::numeric_limits<float>::infinity();
    for (std::size_t s = 0; s < S; ++s)
      if (allowed(t, s)) m = std::max(m, scores(t, s));
    float sum = 0.0f;
    for (std::size_t s = 0; s < S; ++s)
      if (allowed(t, s)) sum += std::exp(scores(t, s) - m);
    for (std::size_t s = 0; s < S; ++s)
      out(t, s) = allowed(t, s) ? std::exp(scores(t, s) - m) / sum : 0.0f / sum;
  }
  return out;
}

}  // namespace ex03
