// Wrong: eps outside the square root: (x - mean) / (sqrt(var) + eps).
#include <cmath>
#include <stdexcept>

#include "exercises.hpp"

namespace ex06 {

attn::Tensor<3> layer_norm(const attn::Tensor<3>& x, const attn::Vector& gamma,
                           const attn::Vector& beta, float eps) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  if (gamma.size() != C || beta.size() != C) throw std::invalid_argument("gamma, beta: (C,)");
  attn::Tensor<3> y({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      float mean = 0.0f;
      for (std::size_t c = 0; c < C; ++c) mean += x(b, t, c);
      mean /= static_cast<float>(C);
      float var = 0.0f;
      for (std::size_t c = 0; c < C; ++c) var += (x(b, t, c) - mean) * (x(b, t, c) - mean);
      var /= static_cast<float>(C);
      for (std::size_t c = 0; c < C; ++c)
        y(b, t, c) = (x(b, t, c) - mean) / (std::sqrt(var) + eps) * gamma(c) + beta(c);
    }
  return y;
}

}  // namespace ex06
