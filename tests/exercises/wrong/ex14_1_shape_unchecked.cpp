// Wrong: never checks the shape, so a (C, 3C + 1) or (3C, C) matrix is cut anyway.
#include <array>

#include "exercises.hpp"

namespace ex14 {

std::array<attn::Matrix, 3> split_qkv(const attn::Matrix& fused) {
  const std::size_t C = fused.shape()[1] / 3;
  std::array<attn::Matrix, 3> out;
  for (std::size_t j = 0; j < 3; ++j) {
    out[j] = attn::Matrix(std::array<std::size_t, 2>{fused.shape()[0], C});
    for (std::size_t r = 0; r < fused.shape()[0]; ++r)
      for (std::size_t c = 0; c < C; ++c) out[j](r, c) = fused(r, j * C + c);
  }
  return out;
}

}  // namespace ex14
