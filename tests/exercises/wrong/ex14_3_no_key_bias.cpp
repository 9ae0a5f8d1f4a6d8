// Wrong: adds b_q and b_v but forgets b_k (harmless to the scores, wrong for the cache).
#include <array>
#include <stdexcept>

#include "exercises.hpp"

namespace ex14 {

std::array<attn::Vector, 3> step_qkv(const attn::Vector& h, const attn::Matrix& c_attn_w,
                                     const attn::Vector& c_attn_b) {
  const std::size_t C = c_attn_w.shape()[0];
  if (C == 0 || c_attn_w.shape()[1] != 3 * C || h.size() != C || c_attn_b.size() != 3 * C) {
    throw std::invalid_argument("h (C,), c_attn_w (C, 3C), c_attn_b (3C,)");
  }
  std::array<attn::Vector, 3> out;
  for (std::size_t j = 0; j < 3; ++j) {
    out[j] = attn::Vector::from_shape({C});
    for (std::size_t c = 0; c < C; ++c) {
      float sum = j == 1 ? 0.0f : c_attn_b(j * C + c);
      for (std::size_t i = 0; i < C; ++i) sum += h(i) * c_attn_w(i, j * C + c);
      out[j](c) = sum;
    }
  }
  return out;
}

}  // namespace ex14
