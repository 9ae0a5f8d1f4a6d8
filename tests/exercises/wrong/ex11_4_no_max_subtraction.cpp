// Wrong: exp(s) / sum exp(s) without the largest score subtracted: scores near 1000 overflow
// to inf even in double (inf / inf is NaN).
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "exercises.hpp"

namespace ex11 {

attn::WindowAttention<float> sliding_window_attention(const attn::Tensor<4>& q,
                                                      const attn::Tensor<4>& k,
                                                      const attn::Tensor<4>& v,
                                                      std::size_t window) {
  if (window == 0 || q.shape() != k.shape() || q.shape() != v.shape())
    throw std::invalid_argument("sliding_window_attention: bad window or shapes");
  const std::size_t B = q.shape()[0], H = q.shape()[1], T = q.shape()[2], hs = q.shape()[3];
  const std::size_t W = window;
  attn::WindowAttention<float> r{xt::zeros<float>({B, H, T, hs}), xt::zeros<float>({B, H, T, T})};
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t) {
        const std::size_t first = t + 1 >= W ? t + 1 - W : 0, last = t;
        std::vector<double> s(T, 0.0);
        double mx = -std::numeric_limits<double>::infinity(), sum = 0.0;
        for (std::size_t u = first; u <= last; ++u) {
          for (std::size_t j = 0; j < hs; ++j)
            s[u] += static_cast<double>(q(b, h, t, j)) * static_cast<double>(k(b, h, u, j));
          s[u] /= std::sqrt(static_cast<double>(hs));
          mx = std::max(mx, s[u]);
        }
        for (std::size_t u = first; u <= last; ++u) sum += std::exp(s[u]);
        for (std::size_t u = first; u <= last; ++u) {
          const double p = std::exp(s[u]) / sum;
          r.weights(b, h, t, u) = static_cast<float>(p);
          for (std::size_t j = 0; j < hs; ++j)
            r.out(b, h, t, j) += static_cast<float>(p * static_cast<double>(v(b, h, u, j)));
        }
      }
  return r;
}

}  // namespace ex11
