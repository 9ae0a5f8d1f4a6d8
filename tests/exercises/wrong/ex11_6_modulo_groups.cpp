// Wrong: groups taken round-robin (query head h to K/V head h % KV), not as neighbours: the
// backward of a different mapping than repeat_kv's.
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

attn::Tensor<4> sum_kv_groups(const attn::Tensor<4>& d, std::size_t n_kv_heads) {
  const std::size_t B = d.shape()[0], H = d.shape()[1], T = d.shape()[2], hs = d.shape()[3];
  if (n_kv_heads == 0 || H % n_kv_heads != 0) throw std::invalid_argument("sum_kv_groups: bad KV");
  attn::Tensor<4> out = xt::zeros<float>({B, n_kv_heads, T, hs});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t j = 0; j < hs; ++j) {
          out(b, h % n_kv_heads, t, j) += d(b, h, t, j);
        }
  return out;
}

}  // namespace ex11
