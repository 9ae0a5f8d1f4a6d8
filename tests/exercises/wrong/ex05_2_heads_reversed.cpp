// Wrong: the heads concatenated last first: head H - 1 in the first columns.

#include "exercises.hpp"

namespace ex05 {

attn::Tensor<3> merge_heads(const attn::Tensor<4>& x) {
  const std::size_t B = x.shape()[0], H = x.shape()[1], T = x.shape()[2], hs = x.shape()[3];
  attn::Tensor<3> out({B, T, H * hs});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t i = 0; i < hs; ++i) out(b, t, (H - 1 - h) * hs + i) = x(b, h, t, i);
  return out;
}

}  // namespace ex05
