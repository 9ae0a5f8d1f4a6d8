// Wrong: the softmax of the raw dot products: no 1 / sqrt(hs).
#include <cmath>
#include <stdexcept>

#include "attn/ops/mask.hpp"
#include "exercises.hpp"

namespace ex04 {

AttentionResult single_head_attention(const attn::Matrix& q, const attn::Matrix& k,
                                      const attn::Matrix& v, bool causal) {
  if (q.shape()[1] != k.shape()[1] || k.shape()[0] != v.shape()[0] ||
      (causal && q.shape()[0] != k.shape()[0]))
    throw std::invalid_argument("shapes do not fit");
  const std::size_t T = q.shape()[0], S = k.shape()[0], hs = q.shape()[1], D = v.shape()[1];
  attn::Matrix scores = xt::zeros<float>({T, S});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t s = 0; s < S; ++s) {
      float dot = 0.0f;
      for (std::size_t j = 0; j < hs; ++j) dot += q(t, j) * k(s, j);
      scores(t, s) = dot;
    }
  attn::Mask allowed = xt::ones<bool>({T, S});
  if (causal)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t s = 0; s < S; ++s) allowed(t, s) = s <= t;
  const attn::Matrix weights = attn::masked_softmax(scores, allowed);
  attn::Matrix out = xt::zeros<float>({T, D});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t d = 0; d < D; ++d)
      for (std::size_t s = 0; s < S; ++s) out(t, d) += weights(t, s) * v(s, d);
  return {out, weights};
}

}  // namespace ex04
