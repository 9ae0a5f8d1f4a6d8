// Wrong: dw and db are averaged over the B * T rows instead of summed.
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

attn::LinearGrads linear_backward(const attn::Tensor<3>& dy, const attn::Tensor<3>& x,
                                  const attn::Matrix& w) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], in = x.shape()[2], out = w.shape()[1];
  if (w.shape()[0] != in || dy.shape()[0] != B || dy.shape()[1] != T || dy.shape()[2] != out)
    throw std::invalid_argument("linear_backward: shapes do not fit");
  attn::LinearGrads g;
  g.dx = xt::zeros<float>({B, T, in});
  g.dw = xt::zeros<float>({in, out});
  g.db = xt::zeros<float>({out});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t o = 0; o < out; ++o) {
        g.db(o) += dy(b, t, o);
        for (std::size_t i = 0; i < in; ++i) {
          g.dx(b, t, i) += dy(b, t, o) * w(i, o);
          g.dw(i, o) += x(b, t, i) * dy(b, t, o);
        }
      }
  const float rows = static_cast<float>(B * T);
  g.dw /= rows;
  g.db /= rows;
  return g;
}

}  // namespace ex08
