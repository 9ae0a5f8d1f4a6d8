// Wrong: returns probabilities (a softmax over V) instead of the raw logits.
#include <algorithm>
#include <stdexcept>

#include "attn/ops/softmax.hpp"
#include "exercises.hpp"

namespace ex07 {

attn::Tensor<3> tied_logits(const attn::Tensor<3>& x, const attn::Matrix& wte) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], V = wte.shape()[0];
  if (x.shape()[2] != wte.shape()[1]) throw std::invalid_argument("widths differ");
  const std::size_t C = std::min(x.shape()[2], wte.shape()[1]);
  attn::Tensor<3> logits = xt::zeros<float>({B, T, V});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t v = 0; v < V; ++v)
        for (std::size_t c = 0; c < C; ++c) logits(b, t, v) += x(b, t, c) * wte(v, c);
  logits = attn::softmax<3>(logits);
  return logits;
}

}  // namespace ex07
