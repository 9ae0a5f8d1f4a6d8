// posenc.cpp: the fixed sinusoidal positional encodings of "Attention Is All You Need"
// (chapter 06). Attention alone cannot tell token order apart; adding PE[p] to the token at
// position p gives every position its own pattern of waves.
#include "attn/ops/posenc.hpp"
#include "attn/core/limits.hpp"

#include <cmath>

namespace attn {

Matrix sinusoidal_positions(std::size_t T_max, std::size_t C) {
  checked_elements({T_max, C}, "attn::sinusoidal_positions: (T_max, C)");
  Matrix pe(Matrix::shape_type{T_max, C});  // (T_max, C)
  for (std::size_t p = 0; p < T_max; ++p) {
    for (std::size_t col = 0; col < C; ++col) {
      // 1. Columns 2i and 2i + 1 share the frequency w_i = 10000^(-2i / C). The wavelengths
      //    2 pi / w_i grow geometrically from 2 pi (column 0) to ~2 pi * 10000 (the last
      //    columns): fast waves tell neighbours apart, slow ones give the coarse position.
      const std::size_t two_i = col - col % 2;
      const double w = std::pow(10000.0, -static_cast<double>(two_i) / static_cast<double>(C));
      // 2. The angle in double, rounded to float once at the end: w and p * w in float would
      //    put the angle off by up to ~3e-5 radians at p = 1000 (w rounded, times 1000).
      const double angle = static_cast<double>(p) * w;
      // 3. sin in the even column, cos in the odd one. Because sin/cos pairs rotate with p,
      //    PE[p + k] is a fixed linear map (a rotation per pair) of PE[p], for every p.
      //    An odd C simply ends with a sine column.
      pe(p, col) = static_cast<float>(col % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  }
  return pe;
}

}  // namespace attn
