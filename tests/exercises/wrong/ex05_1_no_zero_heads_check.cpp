// Wrong: split_heads without the n_heads == 0 check: C % 0 divides by zero (SIGFPE).
#include <stdexcept>

#include "exercises.hpp"

namespace ex05 {

attn::Tensor<4> split_heads(const attn::Tensor<3>& x, std::size_t n_heads) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  if (C % n_heads != 0) throw std::invalid_argument("n_heads does not divide C");
  const std::size_t hs = C / n_heads;
  attn::Tensor<4> out({B, n_heads, T, hs});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < n_heads; ++h)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t i = 0; i < hs; ++i) out(b, h, t, i) = x(b, t, h * hs + i);
  return out;
}

}  // namespace ex05
