// Wrong: the term through the variance, xhat * mean(g * xhat), is left out of dx.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "exercises.hpp"

namespace ex08 {

attn::LayerNormGrads<3> layer_norm_backward(const attn::Tensor<3>& dy, const attn::Tensor<3>& x,
                                            const attn::Vector& gamma, float eps) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  if (dy.shape() != x.shape() || gamma.size() != C)
    throw std::invalid_argument("layer_norm_backward: shapes do not fit");
  attn::LayerNormGrads<3> g;
  g.dx = xt::zeros<float>(x.shape());
  g.dgamma = xt::zeros<float>({C});
  g.dbeta = xt::zeros<float>({C});
  std::vector<double> xhat(C), gd(C);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      double mean = 0.0;
      for (std::size_t c = 0; c < C; ++c) mean += static_cast<double>(x(b, t, c));
      mean /= static_cast<double>(C);
      double var = 0.0;
      for (std::size_t c = 0; c < C; ++c) {
        const double d = static_cast<double>(x(b, t, c)) - mean;
        var += d * d;
      }
      var /= static_cast<double>(C);
      const double rstd = 1.0 / std::sqrt(var + static_cast<double>(eps));
      double mean_g = 0.0, mean_gx = 0.0;
      for (std::size_t c = 0; c < C; ++c) {
        const double d = static_cast<double>(dy(b, t, c));
        xhat[c] = (static_cast<double>(x(b, t, c)) - mean) * rstd;
        gd[c] = static_cast<double>(gamma(c)) * d;
        mean_g += gd[c];
        mean_gx += gd[c] * xhat[c];
        g.dgamma(c) += static_cast<float>(d * xhat[c]);
        g.dbeta(c) += dy(b, t, c);
      }
      mean_g /= static_cast<double>(C);
      mean_gx /= static_cast<double>(C);
      for (std::size_t c = 0; c < C; ++c)
        g.dx(b, t, c) = static_cast<float>(rstd * (gd[c] - mean_g));
    }
  return g;
}

}  // namespace ex08
