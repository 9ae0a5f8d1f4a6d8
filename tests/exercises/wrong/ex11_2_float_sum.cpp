// Wrong: the sum of squares accumulated in float, not double: after a large value the small
// ones round away (1e8 + 1 is 1e8 in float).
#include <cmath>
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

attn::Tensor<3> rms_norm(const attn::Tensor<3>& x, const attn::Vector& gamma, double eps) {
  const std::size_t C = x.shape()[2], rows = x.size() / C;
  if (gamma.size() != C) throw std::invalid_argument("rms_norm: gamma is not (C,)");
  attn::Tensor<3> y = x;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = x.data() + r * C;
    float sq = 0.0f;
    for (std::size_t j = 0; j < C; ++j) sq += in[j] * in[j];
    const double rstd = 1.0 / std::sqrt(static_cast<double>(sq) / static_cast<double>(C) + eps);
    for (std::size_t j = 0; j < C; ++j)
      y.data()[r * C + j] = static_cast<float>(static_cast<double>(in[j]) * rstd * static_cast<double>(gamma(j)));
  }
  return y;
}

}  // namespace ex11
