// Wrong: query head h reads K/V head h % KV (round-robin) instead of h / (H / KV).
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

attn::Tensor<4> repeat_kv(const attn::Tensor<4>& kv, std::size_t n_heads) {
  const std::size_t B = kv.shape()[0], KV = kv.shape()[1], T = kv.shape()[2], hs = kv.shape()[3];
  if (KV == 0 || n_heads % KV != 0) throw std::invalid_argument("repeat_kv: KV must divide H");
  attn::Tensor<4> out(std::array<std::size_t, 4>{B, n_heads, T, hs});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < n_heads; ++h)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t j = 0; j < hs; ++j) out(b, h, t, j) = kv(b, h % KV, t, j);
  return out;
}

}  // namespace ex11
