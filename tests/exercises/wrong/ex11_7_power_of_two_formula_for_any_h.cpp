// Wrong: 2^(-8 (h + 1) / H) for every H: right for a power of two, but H = 6 gets slopes the
// paper never uses (its rule: the largest power of two below H, then every other finer slope).
#include <cmath>
#include <stdexcept>
#include <vector>

#include "exercises.hpp"

namespace ex11 {

attn::Tensor<3> alibi_bias(std::size_t n_heads, std::size_t T) {
  if (n_heads == 0) throw std::invalid_argument("alibi_bias: n_heads must be at least 1");
  std::vector<double> m(n_heads);
  for (std::size_t h = 0; h < n_heads; ++h)
    m[h] = std::exp2(-8.0 * static_cast<double>(h + 1) / static_cast<double>(n_heads));
  attn::Tensor<3> bias(std::array<std::size_t, 3>{n_heads, T, T});
  for (std::size_t h = 0; h < n_heads; ++h)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t s = 0; s < T; ++s)
        bias(h, t, s) = static_cast<float>(-m[h] * (static_cast<double>(t) - static_cast<double>(s)));
  return bias;
}

}  // namespace ex11
