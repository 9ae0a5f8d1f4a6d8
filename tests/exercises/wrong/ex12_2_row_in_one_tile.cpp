// Wrong: ignores the key tiles: each query's visible keys 0 .. t are folded in one update, so a
// whole row of scores and a (t + 1, hs) copy of the values are held at once.
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
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::size_t rows = std::min(tile, T - i0);
  attn::Matrix out(std::array<std::size_t, 2>{rows, hs});
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t t = i0 + r;
    attn::OnlineRow row = attn::online_row_start(hs);
    attn::Vector s(std::array<std::size_t, 1>{t + 1});
    attn::Matrix vals(std::array<std::size_t, 2>{t + 1, hs});
    for (std::size_t j = 0; j <= t; ++j) {
      float dot = 0.0f;
      for (std::size_t d = 0; d < hs; ++d) dot += q(t, d) * k(j, d);
      s(j) = dot * scale;
      for (std::size_t d = 0; d < hs; ++d) vals(j, d) = v(j, d);
    }
    ex12::online_softmax_update(row, s, vals);
    for (std::size_t d = 0; d < hs; ++d) out(r, d) = row.acc(d) / row.l;
  }
  return out;
}

}  // namespace ex12
