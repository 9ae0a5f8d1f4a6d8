// fast/rope.cpp: RoPE in place on the rows of a projection buffer (chapter 11's fast path). The
// reference (ops/rope.cpp) rotates one pair at a time over a (B, H, T, hs) tensor; here the
// cos/sin of every (position, pair) are computed once per call into a table, then each row of
// q (or k) is rotated where the projection wrote it. Same angles, same double products, same
// rounding as the reference: equal bit for bit.
#include "attn/fast/rope.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/core/parallel.hpp"
#include "../ops/rope_checks.hpp"

namespace attn::fast {

namespace {

// Rows are rotated in pieces of this many, over the library's threads (each row on its own: any
// split gives the same result).
constexpr std::size_t kRopeRows = 64;

// Rotates row x (width floats, heads of hs) by the angles of one position: cs holds (cos, sin)
// for the hs / 2 pairs.
void rotate_row(float* x, std::size_t width, std::size_t hs, const double* cs) {
  for (std::size_t h0 = 0; h0 < width; h0 += hs) {
    float* head = x + h0;  // (hs,)
    for (std::size_t i = 0; i < hs / 2; ++i) {
      const double c = cs[2 * i], s = cs[2 * i + 1];
      const double x0 = static_cast<double>(head[2 * i]), x1 = static_cast<double>(head[2 * i + 1]);
      head[2 * i] = static_cast<float>(x0 * c - x1 * s);
      head[2 * i + 1] = static_cast<float>(x0 * s + x1 * c);
    }
  }
}

}  // namespace

void rope_in_place(const RopeRows& rows, std::size_t hs, double theta, std::size_t offset,
                   bool inverse, Workspace& ws) {
  detail::check_rope("attn::fast::rope", hs, theta);
  require(rows.width % hs == 0 && rows.width <= rows.row_stride, "attn::fast::rope",
          "width must be a whole number of heads inside each row");
  const std::size_t half = hs / 2, T = rows.T;
  // 1. The table: (cos, sin) of the angle of pair i at position offset + t, (T, hs/2, 2), with
  //    the reference's expressions (theta^(-2i / hs) as attn::rope_frequencies, then sign * p *
  //    freq), so the same doubles come out. In ws.angles: the frequencies (hs/2,), then the
  //    table (T, hs).
  double* freq = at_least(ws.angles, half + T * hs);
  double* table = freq + half;
  for (std::size_t i = 0; i < half; ++i)
    freq[i] = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(hs));
  const double sign = inverse ? -1.0 : 1.0;
  for (std::size_t t = 0; t < T; ++t) {
    const double p = static_cast<double>(offset + t);
    for (std::size_t i = 0; i < half; ++i) {
      const double angle = sign * p * freq[i];
      table[t * hs + 2 * i] = std::cos(angle);
      table[t * hs + 2 * i + 1] = std::sin(angle);
    }
  }
  // 2. Every row (b, t) turned by the angles of its position t.
  const std::size_t n = rows.B * T;
  const std::size_t pieces = (n + kRopeRows - 1) / kRopeRows;
  const double* tab = table;
  detail::run_parts(
      pieces, detail::worker_count(pieces), [&](std::size_t first, std::size_t last, std::size_t) {
        for (std::size_t r = first * kRopeRows; r < std::min(n, last * kRopeRows); ++r) {
          rotate_row(rows.data + r * rows.row_stride, rows.width, hs, tab + (r % T) * hs);
        }
      });
}

namespace {

// (B, H, T, hs) -> a copy with each (b, h) seen as T rows of hs floats, rotated.
Tensor<4> rotated(const Tensor<4>& x, double theta, std::size_t offset, bool inverse) {
  const std::size_t B = x.shape()[0], H = x.shape()[1], T = x.shape()[2], hs = x.shape()[3];
  Tensor<4> y = x;
  // Head (b, h) is a block of T rows: B * H blocks of T positions each.
  Workspace ws;
  rope_in_place({y.data(), B * H, T, hs, hs}, hs, theta, offset, inverse, ws);
  return y;
}

}  // namespace

Tensor<4> rope(const Tensor<4>& x, double theta, std::size_t offset) {
  return rotated(x, theta, offset, false);
}

Tensor<4> rope_backward(const Tensor<4>& dy, double theta, std::size_t offset) {
  return rotated(dy, theta, offset, true);
}

}  // namespace attn::fast
