// online_softmax.cpp: the online softmax and one tile of the causal forward, written as plainly
// as the page's math (attn/ops/online_softmax.hpp). The flash kernel (fast/flash.cpp) and chapter
// 12's rungs 5-7 run the same steps on raw pointers, in SIMD lanes and over threads.
#include "attn/ops/online_softmax.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "attn/core/check.hpp"

namespace attn {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace

OnlineRow online_row_start(std::size_t hs) {
  return {kNegInf, 0.0f, Vector(Vector::shape_type{hs}, 0.0f)};
}

// Exponents are all <= 0, so nothing overflows.
void online_softmax_update(OnlineRow& row, const Vector& scores, const Matrix& values) {
  const std::size_t n = scores.size(), hs = row.acc.size();
  require(values.shape()[0] == n && values.shape()[1] == hs, "attn::online_softmax_update", [&] {
    return "values must be (n, hs) = " + shape_str(std::array<std::size_t, 2>{n, hs}) + ", got " +
           shape_str(values.shape());
  });
  // 1. The new running max.
  float m_new = row.m;
  for (std::size_t j = 0; j < n; ++j) m_new = std::max(m_new, scores(j));
  if (m_new == kNegInf) return;  // nothing visible yet
  // 2. What was summed so far was relative to the old max: rescale it by exp(m - m').
  const float a = std::exp(row.m - m_new);
  row.l *= a;
  row.acc *= a;
  // 3. Add this tile's keys, relative to the new max.
  for (std::size_t j = 0; j < n; ++j) {
    const float p = std::exp(scores(j) - m_new);
    row.l += p;
    for (std::size_t d = 0; d < hs; ++d) row.acc(d) += p * values(j, d);
  }
  row.m = m_new;
}

void check_head_and_tile(const char* fn, const Matrix& q, const Matrix& k, const Matrix& v,
                         std::size_t tile) {
  const auto& qs = q.shape();
  require(qs[0] >= 1 && qs[1] >= 1 && std::equal(qs.begin(), qs.end(), k.shape().begin()) &&
              std::equal(qs.begin(), qs.end(), v.shape().begin()),
          fn, [&] {
            return "q, k, v must have the same shape (T, hs) with T, hs >= 1, got q " +
                   shape_str(qs) + ", k " + shape_str(k.shape()) + ", v " + shape_str(v.shape());
          });
  require(tile >= 1, fn, "tile must be at least 1, got 0");
}

Matrix attention_tile(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t i0,
                      std::size_t tile) {
  const char* fn = "attn::attention_tile";
  check_head_and_tile(fn, q, k, v, tile);
  const std::size_t T = q.shape()[0], hs = q.shape()[1];
  require(i0 < T, fn, [&] {
    return "i0 must be below T = " + std::to_string(T) + ", got " + std::to_string(i0);
  });
  const std::size_t rows = std::min(tile, T - i0);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  Matrix out(Matrix::shape_type{rows, hs});
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t t = i0 + r;
    OnlineRow row = online_row_start(hs);
    for (std::size_t j0 = 0; j0 <= t; j0 += tile) {  // key tiles after t are all masked
      const std::size_t n = std::min(tile, T - j0);
      Vector s(Vector::shape_type{n});         // (n,) the tile's scores
      Matrix vals(Matrix::shape_type{n, hs});  // (n, hs) its values
      for (std::size_t j = 0; j < n; ++j) {
        float dot = 0.0f;
        for (std::size_t d = 0; d < hs; ++d) dot += q(t, d) * k(j0 + j, d);
        s(j) = j0 + j <= t ? dot * scale : kNegInf;
        for (std::size_t d = 0; d < hs; ++d) vals(j, d) = v(j0 + j, d);
      }
      online_softmax_update(row, s, vals);
    }
    for (std::size_t d = 0; d < hs; ++d) out(r, d) = row.acc(d) / row.l;
  }
  return out;
}

}  // namespace attn
