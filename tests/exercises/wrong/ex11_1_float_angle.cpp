// Wrong: the angle (offset + t) * theta^(-2i / hs) computed in float, not double: right near the
// start, off by hundredths of a radian at a position of a million.
#include <cmath>
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

attn::Tensor<4> rope(const attn::Tensor<4>& x, double theta, std::size_t offset) {
  const std::size_t B = x.shape()[0], H = x.shape()[1], T = x.shape()[2], hs = x.shape()[3];
  if (hs == 0 || hs % 2 != 0 || !(theta > 0.0)) throw std::invalid_argument("rope: bad hs or theta");
  attn::Tensor<4> y = x;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t i = 0; i < hs / 2; ++i) {
          const float freq = std::pow(static_cast<float>(theta), -2.0f * static_cast<float>(i) / static_cast<float>(hs));
          const float angle = static_cast<float>(offset + t) * freq;
          const std::size_t lo = 2 * i, hi = 2 * i + 1;
          const float a = x(b, h, t, lo), c = x(b, h, t, hi);
          y(b, h, t, lo) = a * std::cos(angle) - c * std::sin(angle);
          y(b, h, t, hi) = a * std::sin(angle) + c * std::cos(angle);
        }
  return y;
}

}  // namespace ex11
