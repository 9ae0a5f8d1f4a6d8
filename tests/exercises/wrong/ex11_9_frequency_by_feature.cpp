// Wrong: Hugging Face's formula y = x cos + rotate_half(x) sin with one angle per feature j,
// p * theta^(-2j/hs), instead of the pair's (cos and sin are cat(freqs, freqs)): the second half
// turns at the wrong speed, and no pair turns as one.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "exercises.hpp"

namespace ex11 {

attn::Tensor<4> rope_rotate_half(const attn::Tensor<4>& x, double theta, std::size_t offset) {
  const std::size_t B = x.shape()[0], H = x.shape()[1], T = x.shape()[2], hs = x.shape()[3];
  if (hs == 0 || hs % 2 != 0 || !(theta > 0.0) || !std::isfinite(theta))
    throw std::invalid_argument("rope_rotate_half: bad hs or theta");
  attn::Tensor<4> y = x;
  const std::size_t half = hs / 2;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t j = 0; j < hs; ++j) {
          const double angle = static_cast<double>(offset + t) *
                               std::pow(theta, -2.0 * static_cast<double>(j) / static_cast<double>(hs));
          // rotate_half(x) = cat(-x2, x1)
          const double rh = j < half ? -static_cast<double>(x(b, h, t, j + half))
                                     : static_cast<double>(x(b, h, t, j - half));
          y(b, h, t, j) = static_cast<float>(x(b, h, t, j) * std::cos(angle) + rh * std::sin(angle));
        }
  return y;
}

}  // namespace ex11
