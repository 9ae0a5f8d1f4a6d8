// Wrong: never checks the weights against x and w_gate: a w_up of the wrong width is read past its rows.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "exercises.hpp"

namespace ex11 {

attn::Tensor<3> swiglu(const attn::Tensor<3>& x, const attn::SwigluWeights<float>& w) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  const std::size_t F = w.w_gate.shape()[1];
  
  attn::Tensor<3> y = xt::zeros<float>({B, T, C});
  std::vector<double> hidden(F);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      for (std::size_t f = 0; f < F; ++f) {
        double a = 0.0, u = 0.0;
        for (std::size_t c = 0; c < C; ++c) {
          a += static_cast<double>(x(b, t, c)) * static_cast<double>(w.w_gate(c, f));
          u += static_cast<double>(x(b, t, c)) * static_cast<double>(w.w_up(c, f));
        }
        hidden[f] = a / (1.0 + std::exp(-a)) * u;
      }
      for (std::size_t c = 0; c < C; ++c) {
        double s = 0.0;
        for (std::size_t f = 0; f < F; ++f) s += hidden[f] * static_cast<double>(w.w_down(f, c));
        y(b, t, c) = static_cast<float>(s);
      }
    }
  return y;
}

}  // namespace ex11
