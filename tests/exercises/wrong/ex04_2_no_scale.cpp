// Wrong: the raw dot products, never divided by sqrt(hs).
#include <stdexcept>

#include "exercises.hpp"

namespace ex04 {

attn::Matrix attention_scores(const attn::Matrix& q, const attn::Matrix& k) {
  if (q.shape()[1] != k.shape()[1]) throw std::invalid_argument("widths differ");
  const std::size_t T = q.shape()[0], S = k.shape()[0], hs = q.shape()[1];
  attn::Matrix scores = xt::zeros<float>({T, S});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t s = 0; s < S; ++s) {
      float dot = 0.0f;
      for (std::size_t j = 0; j < hs; ++j) dot += q(t, j) * k(s, j);
      scores(t, s) = dot;
    }
  return scores;
}

}  // namespace ex04
