// Wrong: builds the whole (T, T) matrix of masked scores first, then folds each row's tiles out
// of it: the right numbers, and the T * T floats the online softmax exists to avoid.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "exercises.hpp"

namespace ex12 {

attn::Matrix attention_tile(const attn::Matrix& q, const attn::Matrix& k, const attn::Matrix& v,
                            std::size_t i0, std::size_t tile) {
  const std::size_t T = q.shape()[0], hs = q.shape()[1];
  if (tile == 0 || i0 >= T || k.shape() != q.shape() || v.shape() != q.shape())
    throw std::invalid_argument("bad input");
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const float inf = std::numeric_limits<float>::infinity();
  attn::Matrix s(std::array<std::size_t, 2>{T, T});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t j = 0; j < T; ++j) {
      float dot = 0.0f;
      for (std::size_t d = 0; d < hs; ++d) dot += q(t, d) * k(j, d);
      s(t, j) = j <= t ? dot * scale : -inf;
    }
  const std::size_t rows = std::min(tile, T - i0);
  attn::Matrix out(std::array<std::size_t, 2>{rows, hs});
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t t = i0 + r;
    attn::OnlineRow row = attn::online_row_start(hs);
    for (std::size_t j0 = 0; j0 <= t; j0 += tile) {
      const std::size_t n = std::min(tile, T - j0);
      attn::Vector st(std::array<std::size_t, 1>{n});
      attn::Matrix vals(std::array<std::size_t, 2>{n, hs});
      for (std::size_t j = 0; j < n; ++j) {
        st(j) = s(t, j0 + j);
        for (std::size_t d = 0; d < hs; ++d) vals(j, d) = v(j0 + j, d);
      }
      ex12::online_softmax_update(row, st, vals);
    }
    for (std::size_t d = 0; d < hs; ++d) out(r, d) = row.acc(d) / row.l;
  }
  return out;
}

}  // namespace ex12
