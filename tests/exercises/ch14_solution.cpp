// tests/exercises/ch14_solution.cpp: chapter 14's exercises answered by the reference library.
// Linked in place of the learner's stubs (ctest solution.ch14) to prove that every test in
// ch14_test.cpp passes against attn/model/gpt2.hpp (ex14.1, ex14.3) and the checks of
// attn::parse_safetensors_header written out for one entry (ex14.2).
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "attn/model/gpt2.hpp"
#include "exercises.hpp"
#include "reference.hpp"

namespace ex14 {

ATTN_REFERENCE std::array<attn::Matrix, 3> split_qkv(const attn::Matrix& fused) {
  return attn::split_qkv(fused);
}

ATTN_REFERENCE std::uint64_t tensor_offset(std::string_view start, std::uint64_t file_size,
                                           const TensorEntry& entry) {
  if (start.size() < 8 || file_size < 8) {
    throw std::invalid_argument("the file is shorter than its 8-byte header length");
  }
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    n |= std::uint64_t{static_cast<unsigned char>(start[i])} << (8 * i);
  }
  if (n > file_size - 8) throw std::invalid_argument("the header runs past the end of the file");
  const std::uint64_t data_size = file_size - 8 - n;
  std::uint64_t bytes = 0;
  if (entry.dtype == "F32") {
    bytes = 4;
  } else if (entry.dtype == "F16" || entry.dtype == "BF16") {
    bytes = 2;
  } else {
    throw std::invalid_argument("dtype '" + entry.dtype + "' is not F32, F16 or BF16");
  }
  for (const std::uint64_t d : entry.shape) {
    if (d != 0 && bytes > std::numeric_limits<std::uint64_t>::max() / d) {
      throw std::invalid_argument("the shape's byte count overflows");
    }
    bytes *= d;
  }
  if (entry.begin > entry.end || entry.end > data_size) {
    throw std::invalid_argument("data_offsets run past the data section");
  }
  if (entry.end - entry.begin != bytes) {
    throw std::invalid_argument("data_offsets disagree with the dtype and shape");
  }
  return 8 + n + entry.begin;
}

ATTN_REFERENCE std::array<attn::Vector, 3> step_qkv(const attn::Vector& h,
                                                    const attn::Matrix& c_attn_w,
                                                    const attn::Vector& c_attn_b) {
  const std::size_t C = c_attn_w.shape()[0];
  if (h.size() != C || c_attn_b.size() != 3 * C) {
    throw std::invalid_argument("h must be (C,) and c_attn_b (3C,)");
  }
  const std::array<attn::Matrix, 3> w = attn::split_qkv(c_attn_w);  // checks (C, 3C), C >= 1
  const std::array<attn::Vector, 3> b = attn::split_qkv_bias(c_attn_b);
  std::array<attn::Vector, 3> out;
  for (std::size_t j = 0; j < 3; ++j) {
    out[j] = b[j];
    for (std::size_t i = 0; i < C; ++i)
      for (std::size_t c = 0; c < C; ++c) out[j](c) += h(i) * w[j](i, c);
  }
  return out;
}

}  // namespace ex14
