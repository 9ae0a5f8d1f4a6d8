// ex14.2: one tensor of a safetensors header, checked against the file.
//
// Goal: a .safetensors file is 8 bytes holding N, the header's length, as a little-endian
// uint64; then N bytes of JSON, the header; then the data section, every tensor's raw bytes.
// The JSON gives each tensor a dtype, a shape and data_offsets [begin, end), counted from the
// start of the data section. Before reading a byte of a tensor, check that the file backs what
// its entry says, and return where in the file the tensor's bytes start.
// Input: start, the file's first bytes (at least 8); file_size, the whole file's size in bytes;
// entry, one tensor of the header (exercises.hpp, TensorEntry).
// Output: the position in the file, counted from its first byte, of the tensor's first byte.
// Contract: std::invalid_argument, before anything is read, unless
//   - start holds the 8 length bytes and the file holds them and the N header bytes after them;
//   - dtype is "F32", "F16" or "BF16";
//   - begin <= end, and [begin, end) lies inside the data section;
//   - end - begin is exactly the tensor's byte count, its elements times its dtype's size
//     (a scalar, shape (), is one element; a shape with a 0 has none), and a shape whose byte
//     count does not fit in 64 bits is refused, never wrapped around.
// The page's section "The math" (safetensors, checked) derives the checks; docs/14-gpt2.md,
// exercise ex14.2, has hints.
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "exercises.hpp"

namespace ex14 {

std::uint64_t tensor_offset(std::string_view start, std::uint64_t file_size,
                            const TensorEntry& entry) {
  (void)start;
  (void)file_size;
  (void)entry;
  // TODO(ex14.2): N from start's first 8 bytes, then every check of the contract above
  // (std::invalid_argument naming what failed); return where the tensor's bytes start.
  throw std::logic_error("TODO ex14.2: check one safetensors entry against the file");
}

}  // namespace ex14
