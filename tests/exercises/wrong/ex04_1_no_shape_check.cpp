// Wrong: no check that x's columns match w's rows: a mismatch reads the wrong numbers.
#include <algorithm>

#include "exercises.hpp"

namespace ex04 {

attn::Matrix project(const attn::Matrix& x, const attn::Matrix& w) {
  const std::size_t T = x.shape()[0], C = std::min(x.shape()[1], w.shape()[0]), hs = w.shape()[1];
  attn::Matrix y = xt::zeros<float>({T, hs});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t j = 0; j < hs; ++j)
      for (std::size_t c = 0; c < C; ++c) y(t, j) += x(t, c) * w(c, j);
  return y;
}

}  // namespace ex04
