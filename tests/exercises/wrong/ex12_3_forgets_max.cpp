// Wrong: lse = log(l), the max left out: l was summed relative to m, so the result is off by m
// (right only when the largest score is 0).
#include <cmath>
#include <limits>

#include "exercises.hpp"

namespace ex12 {

float row_lse(const attn::OnlineRow& row) {
  if (row.l == 0.0f) return -std::numeric_limits<float>::infinity();
  return std::log(row.l);
}

}  // namespace ex12
