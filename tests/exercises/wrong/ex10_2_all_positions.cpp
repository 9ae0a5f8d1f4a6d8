// Wrong: attends over all T_max positions of the cache, the empty ones after n included.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "exercises.hpp"

namespace ex10 {

attn::Matrix attend_cache(const attn::Matrix& q, const attn::Tensor<4>& keys,
                          const attn::Tensor<4>& values, std::size_t n) {
  const std::size_t B = keys.shape()[0], H = keys.shape()[1], T_max = keys.shape()[2];
  const std::size_t hs = keys.shape()[3];
  if (values.shape() != keys.shape() || q.shape()[0] != B || q.shape()[1] != H * hs || n == 0 ||
      n > T_max) {
    throw std::invalid_argument("attend_cache: bad shapes or n");
  }
  attn::Matrix out = xt::zeros<float>({B, H * hs});
  std::vector<double> w(T_max);
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h) {
      double m = -1e300, sum = 0.0;
      for (std::size_t j = 0; j < T_max; ++j) {
        double s = 0.0;
        for (std::size_t i = 0; i < hs; ++i) s += double(q(b, h * hs + i)) * double(keys(b, h, j, i));
        w[j] = s * scale;
        m = std::max(m, w[j]);
      }
      for (std::size_t j = 0; j < T_max; ++j) sum += (w[j] = std::exp(w[j] - m));
      for (std::size_t j = 0; j < T_max; ++j)
        for (std::size_t i = 0; i < hs; ++i)
          out(b, h * hs + i) += static_cast<float>(w[j] / sum * double(values(b, h, j, i)));
    }
  return out;
}

}  // namespace ex10
