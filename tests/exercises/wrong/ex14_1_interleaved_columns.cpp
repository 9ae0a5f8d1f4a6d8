// Wrong: reads q, k, v as interleaved columns (column 3c + j) instead of three blocks of C.
#include <array>
#include <stdexcept>

#include "exercises.hpp"

namespace ex14 {

std::array<attn::Matrix, 3> split_qkv(const attn::Matrix& fused) {
  const std::size_t C = fused.shape()[0];
  if (C == 0 || fused.shape()[1] != 3 * C) throw std::invalid_argument("fused must be (C, 3C)");
  std::array<attn::Matrix, 3> out;
  for (std::size_t j = 0; j < 3; ++j) {
    out[j] = attn::Matrix(std::array<std::size_t, 2>{C, C});
    for (std::size_t r = 0; r < C; ++r)
      for (std::size_t c = 0; c < C; ++c) out[j](r, c) = fused(r, 3 * c + j);
  }
  return out;
}

}  // namespace ex14
