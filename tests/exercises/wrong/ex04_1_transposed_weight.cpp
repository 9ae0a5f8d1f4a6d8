// Wrong: w read as if it were stored (hs, C): w[j * C + c] instead of w(c, j).
#include <stdexcept>

#include "exercises.hpp"

namespace ex04 {

attn::Matrix project(const attn::Matrix& x, const attn::Matrix& w) {
  if (x.shape()[1] != w.shape()[0]) throw std::invalid_argument("x and w do not fit");
  const std::size_t T = x.shape()[0], C = x.shape()[1], hs = w.shape()[1];
  attn::Matrix y = xt::zeros<float>({T, hs});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t j = 0; j < hs; ++j)
      for (std::size_t c = 0; c < C; ++c) y(t, j) += x(t, c) * w.data()[j * C + c];
  return y;
}

}  // namespace ex04
