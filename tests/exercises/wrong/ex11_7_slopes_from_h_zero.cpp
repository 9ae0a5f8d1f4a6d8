// Wrong: the slopes 2^(-8 h / H) from h = 0: head 0 gets slope 1, every slope is one step
// too steep.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "exercises.hpp"

namespace ex11 {

attn::Tensor<3> alibi_bias(std::size_t n_heads, std::size_t T) {
  if (n_heads == 0) throw std::invalid_argument("alibi_bias: n_heads must be at least 1");
  const auto power_of_two = [](std::size_t n) {
    std::vector<double> m(n);
    for (std::size_t h = 0; h < n; ++h) m[h] = std::exp2(-8.0 * static_cast<double>(h) / static_cast<double>(n));
    return m;
  };
  std::size_t n = 1;
  while (2 * n <= n_heads) n *= 2;
  std::vector<double> m = power_of_two(n);
  const std::vector<double> finer = power_of_two(2 * n);
  for (std::size_t k = 0; m.size() < n_heads; ++k) m.push_back(finer[2 * k]);
  attn::Tensor<3> bias(std::array<std::size_t, 3>{n_heads, T, T});
  for (std::size_t h = 0; h < n_heads; ++h)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t s = 0; s < T; ++s)
        bias(h, t, s) = static_cast<float>(-m[h] * (static_cast<double>(t) - static_cast<double>(s)));
  return bias;
}

}  // namespace ex11
