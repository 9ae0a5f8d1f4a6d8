// Wrong: takes the blocks in the order q, v, k.
#include <array>
#include <stdexcept>

#include "exercises.hpp"

namespace ex14 {

std::array<attn::Matrix, 3> split_qkv(const attn::Matrix& fused) {
  const std::size_t C = fused.shape()[0];
  if (C == 0 || fused.shape()[1] != 3 * C) throw std::invalid_argument("fused must be (C, 3C)");
  std::array<attn::Matrix, 3> out;
  const std::size_t block[3] = {0, 2, 1};
  for (std::size_t j = 0; j < 3; ++j) {
    out[j] = attn::Matrix(std::array<std::size_t, 2>{C, C});
    for (std::size_t r = 0; r < C; ++r)
      for (std::size_t c = 0; c < C; ++c) out[j](r, c) = fused(r, block[j] * C + c);
  }
  return out;
}

}  // namespace ex14
