// Wrong: gamma left out of dx: g = dy instead of gamma * dy.
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
    double sq = 0.0;
    for (std::size_t j = 0; j < C; ++j) sq += static_cast<double>(xr[j]) * static_cast<double>(xr[j]);
    const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(C) + eps);
    double mean_gx = 0.0, mean_g = 0.0;
    for (std::size_t j = 0; j < C; ++j) {
      const double xhat = static_cast<double>(xr[j]) * rstd;
      const double g = static_cast<double>(dr[j]);
      mean_gx += g * xhat / static_cast<double>(C);
      mean_g += g / static_cast<double>(C);
      out.dgamma(j) += static_cast<float>(static_cast<double>(dr[j]) * xhat);
    }
    for (std::size_t j = 0; j < C; ++j) {
      const double xhat = static_cast<double>(xr[j]) * rstd;
      const double g = static_cast<double>(dr[j]);
      out.dx.data()[r * C + j] = static_cast<float>(rstd * (g - xhat * mean_gx));
    }
  }
  return out;
}

}  // namespace ex11
