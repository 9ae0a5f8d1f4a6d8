// Wrong: rstd recomputed from a sum of squares kept in float, not double: after a large value
// the small ones round away, and rstd (so dgamma and dx) is off by 1e-4.
#include <cmath>
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

attn::RmsNormGrads<float, 3> rms_norm_backward(const attn::Tensor<3>& dy, const attn::Tensor<3>& x,
                                               const attn::Vector& gamma, double eps) {
  const std::size_t C = x.shape()[2], rows = x.size() / C;
  if (dy.shape() != x.shape() || gamma.size() != C)
    throw std::invalid_argument("rms_norm_backward: bad shapes");
  attn::RmsNormGrads<float, 3> out{x, xt::zeros<float>({C})};
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * C;
    const float* dr = dy.data() + r * C;
    float sq = 0.0f;
    for (std::size_t j = 0; j < C; ++j) sq += xr[j] * xr[j];
    const double rstd = 1.0 / std::sqrt(static_cast<double>(sq) / static_cast<double>(C) + eps);
    double mean_gx = 0.0;
    for (std::size_t j = 0; j < C; ++j) {
      const double xhat = static_cast<double>(xr[j]) * rstd;
      const double g = static_cast<double>(gamma(j)) * static_cast<double>(dr[j]);
      mean_gx += g * xhat / static_cast<double>(C);
      out.dgamma(j) += static_cast<float>(static_cast<double>(dr[j]) * xhat);
    }
    for (std::size_t j = 0; j < C; ++j) {
      const double xhat = static_cast<double>(xr[j]) * rstd;
      const double g = static_cast<double>(gamma(j)) * static_cast<double>(dr[j]);
      out.dx.data()[r * C + j] = static_cast<float>(rstd * (g - xhat * mean_gx));
    }
  }
  return out;
}

}  // namespace ex11
