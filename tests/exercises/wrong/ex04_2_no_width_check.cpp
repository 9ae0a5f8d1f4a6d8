// Wrong: q and k of different widths are not rejected (the shorter width is used).
#include <algorithm>
#include <cmath>

#include "exercises.hpp"

namespace ex04 {

attn::Matrix attention_scores(const attn::Matrix& q, const attn::Matrix& k) {
  const std::size_t T = q.shape()[0], S = k.shape()[0];
  const std::size_t hs = std::min(q.shape()[1], k.shape()[1]);
  attn::Matrix scores = xt::zeros<float>({T, S});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t s = 0; s < S; ++s) {
      float dot = 0.0f;
      for (std::size_t j = 0; j < hs; ++j) dot += q(t, j) * k(s, j);
      scores(t, s) = dot / std::sqrt(static_cast<float>(hs));
    }
  return scores;
}

}  // namespace ex04
