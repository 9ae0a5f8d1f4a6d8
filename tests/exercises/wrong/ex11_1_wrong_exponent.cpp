// Wrong: the angle step theta^(-i/hs) instead of theta^(-2i/hs).
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
          const double angle = static_cast<double>(offset + t) * std::pow(theta, -static_cast<double>(i) / static_cast<double>(hs));
          const std::size_t lo = 2 * i, hi = 2 * i + 1;
          const double a = x(b, h, t, lo), c = x(b, h, t, hi);
          y(b, h, t, lo) = static_cast<float>(a * std::cos(angle) - c * std::sin(angle));
          y(b, h, t, hi) = static_cast<float>(a * std::sin(angle) + c * std::cos(angle));
        }
  return y;
}

}  // namespace ex11
