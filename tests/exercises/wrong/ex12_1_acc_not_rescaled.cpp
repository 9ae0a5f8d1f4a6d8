// Wrong: when the max grows, l is rescaled by exp(m - m') but acc is not.
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
  float m_new = row.m;
  for (std::size_t j = 0; j < n; ++j) m_new = std::max(m_new, scores(j));
  if (m_new == -INFINITY) return;
  row.l *= std::exp(row.m - m_new);
  for (std::size_t j = 0; j < n; ++j) {
    const float p = std::exp(scores(j) - m_new);
    row.l += p;
    for (std::size_t d = 0; d < hs; ++d) row.acc(d) += p * values(j, d);
  }
  row.m = m_new;
}

}  // namespace ex12
