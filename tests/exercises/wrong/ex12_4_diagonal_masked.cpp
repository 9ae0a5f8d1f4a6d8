// Wrong: the causal mask off by one on the diagonal tile: query t skips its own key (j < t).
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
  const std::size_t rows = std::min(tile, T - i0), cols = std::min(tile, T - j0);
  TileGrads g{xt::zeros<float>({rows, hs}), xt::zeros<float>({cols, hs}),
              xt::zeros<float>({cols, hs})};
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t t = i0 + r;
    std::vector<double> s(cols, 0.0), p(cols, 0.0), dp(cols, 0.0);
    std::vector<bool> seen(cols, false);
    double m = -INFINITY, l = 0.0, dtile = 0.0;
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t j = j0 + c;
      if (!(j < t)) continue;
      seen[c] = true;
      for (std::size_t e = 0; e < hs; ++e) {
        s[c] += static_cast<double>(q(t, e)) * static_cast<double>(k(j, e)) * scale;
        dp[c] += static_cast<double>(dout(t, e)) * static_cast<double>(v(j, e));
      }
      m = std::max(m, s[c]);
    }
    for (std::size_t c = 0; c < cols; ++c)
      if (seen[c]) l += std::exp(s[c] - m);
    for (std::size_t c = 0; c < cols; ++c)
      if (seen[c]) {
        p[c] = std::exp(s[c] - static_cast<double>(lse(t)));
        dtile += p[c] * dp[c];
      }
    (void)l;
    (void)dtile;
    for (std::size_t c = 0; c < cols; ++c) {
      if (!seen[c]) continue;
      const double ds = p[c] * (dp[c] - static_cast<double>(d(t))) * scale;
      for (std::size_t e = 0; e < hs; ++e) {
        g.dv(c, e) += static_cast<float>(p[c] * static_cast<double>(dout(t, e)));
        g.dq(r, e) += static_cast<float>(ds * static_cast<double>(k(j0 + c, e)));
        g.dk(c, e) += static_cast<float>(ds * static_cast<double>(q(t, e)));
      }
    }
  }
  return g;
}

}  // namespace ex12
