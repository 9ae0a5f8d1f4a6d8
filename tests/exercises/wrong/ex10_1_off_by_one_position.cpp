// Wrong: the new row written one position too far (pos + 1), leaving position pos empty.
#include <stdexcept>

#include "exercises.hpp"

namespace ex10 {

void kv_append(attn::Tensor<4>& cache, const attn::Matrix& rows, std::size_t pos) {
  const std::size_t B = cache.shape()[0], H = cache.shape()[1], T_max = cache.shape()[2];
  const std::size_t hs = cache.shape()[3];
  if (rows.shape()[0] != B || rows.shape()[1] != H * hs || pos >= T_max) {
    throw std::invalid_argument("kv_append: bad shapes or position");
  }
  const std::size_t at = pos + 1 < T_max ? pos + 1 : pos;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t i = 0; i < hs; ++i) cache(b, h, at, i) = rows(b, h * hs + i);
}

}  // namespace ex10
