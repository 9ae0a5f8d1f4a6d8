// chapters/14_gpt2/exercises/exercises.hpp: the exercises of chapter 14, GPT-2 on the course's
// attention. Each function mirrors a piece of attn/model/gpt2.hpp, attn/io/safetensors.hpp or
// the KV-cache step (attn/model/kvcache.hpp) and is written in its own file beside this one.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/xt.hpp"

namespace ex14 {

// ex14.1, ex14_1_split_qkv.cpp: GPT-2's c_attn weight (C, 3C), x @ it = [q | k | v], cut into
// w_q, w_k, w_v (C, C) each, like attn::split_qkv. Throws std::invalid_argument unless the
// matrix is (C, 3C) with C >= 1.
std::array<attn::Matrix, 3> split_qkv(const attn::Matrix& fused);

// One tensor's entry of a safetensors header, as the JSON gives it:
//   "wpe.weight": {"dtype": "F32", "shape": [64, 32], "data_offsets": [0, 8192]}
struct TensorEntry {
  std::string dtype;                 // "F32" (4 bytes an element), "F16" or "BF16" (2)
  std::vector<std::uint64_t> shape;  // () for a scalar: one element
  std::uint64_t begin = 0;           // data_offsets [begin, end): counted from the start of
  std::uint64_t end = 0;             // the data section, which follows the header
};

// ex14.2, ex14_2_tensor_offset.cpp: where in a safetensors file of file_size bytes, whose first
// bytes are `start` (at least its 8-byte header length N), the tensor of `entry` starts, after
// checking the entry against the file, as attn::parse_safetensors_header does. Throws
// std::invalid_argument unless the file holds the length and N header bytes, the dtype is one of
// the three, and the offsets hold exactly the tensor's bytes inside the data section.
std::uint64_t tensor_offset(std::string_view start, std::uint64_t file_size,
                            const TensorEntry& entry);

// ex14.3, ex14_3_step_qkv.cpp: one new token's q, k, v (C,) each in a KV-cache step of GPT-2,
// from its normed row h (C,) and the block's c_attn weight (C, 3C) and bias (3C,): the same three
// rows the full forward computes for that position. Throws std::invalid_argument unless the
// shapes agree with C >= 1.
std::array<attn::Vector, 3> step_qkv(const attn::Vector& h, const attn::Matrix& c_attn_w,
                                     const attn::Vector& c_attn_b);

}  // namespace ex14
