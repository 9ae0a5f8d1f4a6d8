// Wrong: the mask also hides the diagonal (key j < t instead of j <= t), except for query 0.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "exercises.hpp"

namespace ex12 {

attn::Matrix attention_tile(const attn::Matrix& q, const attn::Matrix& k, const attn::Matrix& v,
                            std::size_t i0, std::size_t tile) {
  const std::size_t T = q.shape()[0], hs = q.shape()[1];
  if (tile == 0 || i0 >= T || k.shape() != q.shape() || v.shape() != q.shape())
    throw std::invalid_argument("bad input");
  const std::size_t rows = std::min(tile, T - i0);
  attn::Matrix out(std::array<std::size_t, 2>{rows, hs});
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t t = i0 + r;
    attn::OnlineRow row = attn::online_row_start(hs);
    for (std::size_t j0 = 0; j0 <= t; j0 += tile) {
      const std::size_t n = std::min(tile, T - j0);
      attn::Vector s(std::array<std::size_t, 1>{n});
      attn::Matrix vals(std::array<std::size_t, 2>{n, hs});
      for (std::size_t j = 0; j < n; ++j) {
        float dot = 0.0f;
        for (std::size_t d = 0; d < hs; ++d) dot += q(t, d) * k(j0 + j, d);
        s(j) = (j0 + j < t || (t == 0 && j0 + j == 0)) ? dot / std::sqrt(static_cast<float>(hs)) : -INFINITY;
        for (std::size_t d = 0; d < hs; ++d) vals(j, d) = v(j0 + j, d);
      }
      ex12::online_softmax_update(row, s, vals);
    }
    for (std::size_t d = 0; d < hs; ++d) out(r, d) = row.acc(d) / row.l;
  }
  return out;
}

}  // namespace ex12
