// Wrong: the id check off by one: id > V instead of id >= V lets id V through.
#include <stdexcept>

#include "exercises.hpp"

namespace ex07 {

attn::Tensor<3> embed(const xt::xtensor<int, 2>& tokens, const attn::Matrix& wte,
                      const attn::Matrix& wpe) {
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1];
  const std::size_t V = wte.shape()[0], C = wte.shape()[1];
  if (wpe.shape()[1] != C || T > wpe.shape()[0]) throw std::invalid_argument("bad sizes");
  attn::Tensor<3> x({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      const int id = tokens(b, t);
      if (id < 0 || static_cast<std::size_t>(id) > V)
        throw std::invalid_argument("token id outside [0, V)");
      for (std::size_t c = 0; c < C; ++c)
        x(b, t, c) = wte.data()[(static_cast<std::size_t>(id) * C + c) % wte.size()] + wpe(t, c);
    }
  return x;
}

}  // namespace ex07
