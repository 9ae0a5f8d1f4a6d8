// Wrong: the new max is the tile's own max, forgetting the max seen before (a max started at 0
// or at -inf for every tile).
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "exercises.hpp"

namespace ex12 {

void online_softmax_update(attn::OnlineRow& row, const attn::Vector& scores,
                           const attn::Matrix& values) {
  const std::size_t n = scores.size(), hs = row.acc.size();
  if (values.shape()[0] != n || values.shape()[1] != hs)
    throw std::invalid_argument("values must be (n, hs)");
  float m_new = -INFINITY;
  for (std::size_t j = 0; j < n; ++j) m_new = std::max(m_new, scores(j));
  if (m_new == -INFINITY) return;
  const float a = row.m == -INFINITY ? 0.0f : std::exp(row.m - m_new);
  row.l *= a;
  row.acc *= a;
  for (std::size_t j = 0; j < n; ++j) {
    const float p = std::exp(scores(j) - m_new);
    row.l += p;
    for (std::size_t d = 0; d < hs; ++d) row.acc(d) += p * values(j, d);
  }
  row.m = m_new;
}

}  // namespace ex12
