// Wrong: the targets are the inputs themselves, y = data[i : i+T], not shifted by one.
#include <algorithm>
#include <stdexcept>

#include "exercises.hpp"

namespace ex09 {

attn::Batch get_batch(std::span<const int> data, std::size_t batch_size, std::size_t block_size,
                      attn::Rng& rng) {
  const std::size_t B = batch_size, T = block_size, n = data.size();
  if (B == 0 || T == 0 || n < T + 1) throw std::invalid_argument("get_batch: bad sizes");
  attn::Batch out{xt::xtensor<int, 2>::from_shape({B, T}), xt::xtensor<int, 2>::from_shape({B, T})};
  for (std::size_t b = 0; b < B; ++b) {
    const std::size_t i = rng.below(n - T);
    std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(i), T, out.x.data() + b * T);
    std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(i), T, out.y.data() + b * T);
  }
  return out;
}

}  // namespace ex09
