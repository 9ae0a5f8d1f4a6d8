// Wrong: checks the offsets against the whole file, not the data section after the header.
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "exercises.hpp"

namespace ex14 {

std::uint64_t tensor_offset(std::string_view start, std::uint64_t file_size,
                            const TensorEntry& entry) {
  if (start.size() < 8 || file_size < 8) throw std::invalid_argument("no header length");
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < 8; ++i)
    n |= std::uint64_t{static_cast<unsigned char>(start[i])} << (8 * i);
  if (n > file_size - 8) throw std::invalid_argument("header past the end");
  const std::uint64_t data_size = file_size;
  std::uint64_t bytes = 0;
  if (entry.dtype == "F32") bytes = 4;
  if (entry.dtype == "F16" || entry.dtype == "BF16") bytes = 2;
  if (bytes == 0) throw std::invalid_argument("bad dtype");
  for (const std::uint64_t d : entry.shape) {
    if (d != 0 && bytes > std::numeric_limits<std::uint64_t>::max() / d) {
      throw std::invalid_argument("overflow");
    }
    bytes *= d;
  }
  if (entry.begin > entry.end || entry.end > data_size) throw std::invalid_argument("past data");
  if (entry.end - entry.begin != bytes) throw std::invalid_argument("wrong byte count");
  return 8 + n + entry.begin;
}

}  // namespace ex14
