// Wrong: recomputes the whole (T, T) matrix of weights from lse first, then reads the tile out of
// it: the right numbers, but the memory the flash backward exists to avoid.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "exercises.hpp"

namespace ex12 {

TileGrads flash_backward_tile(const attn::Matrix& q, const attn::Matrix& k, const attn::Matrix& v,
                              const attn::Matrix& dout, const attn::Vector& lse,
                              const attn::Vector& d, std::size_t i0, std::size_t j0,
                              std::size_t tile) {
  const std::size_t T = q.shape()[0], hs = q.shape()[1];
  if (tile == 0 || i0 >= T || j0 >= T || k.shape() != q.shape() || v.shape() != q.shape() ||
      dout.shape() != q.shape() || lse.size() != T || d.size() != T)
    throw std::invalid_argument("flash_backward_tile: bad input");
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  std::vector<float> P(T * T, 0.0f);  // every weight of the head
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t j = 0; j <= t; ++j) {
      double s = 0.0;
      for (std::size_t e = 0; e < hs; ++e)
        s += static_cast<double>(q(t, e)) * static_cast<double>(k(j, e));
      P[t * T + j] = static_cast<float>(std::exp(s * scale - static_cast<double>(lse(t))));
    }
  const std::size_t rows = std::min(tile, T - i0), cols = std::min(tile, T - j0);
  TileGrads g{xt::zeros<float>({rows, hs}), xt::zeros<float>({cols, hs}),
              xt::zeros<float>({cols, hs})};
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t t = i0 + r, j = j0 + c;
      if (j > t) continue;
      const double p = P[t * T + j];
      double dp = 0.0;
      for (std::size_t e = 0; e < hs; ++e)
        dp += static_cast<double>(dout(t, e)) * static_cast<double>(v(j, e));
      const double ds = p * (dp - static_cast<double>(d(t))) * scale;
      for (std::size_t e = 0; e < hs; ++e) {
        g.dv(c, e) += static_cast<float>(p * static_cast<double>(dout(t, e)));
        g.dq(r, e) += static_cast<float>(ds * static_cast<double>(k(j, e)));
        g.dk(c, e) += static_cast<float>(ds * static_cast<double>(q(t, e)));
      }
    }
  return g;
}

}  // namespace ex12
