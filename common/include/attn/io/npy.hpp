// attn/io/npy.hpp: reading and writing NumPy .npy files (chapter 07, golden tests).
// A model exported from PyTorch (`np.save(name, tensor.numpy())`) is a folder of .npy files.
// Format: magic "\x93NUMPY", version, a header dict {'descr': '<f4', 'fortran_order': False,
// 'shape': (3, 4)}, then the raw little-endian data. We read float32 ('<f4'), float64 ('<f8',
// converted), int64 ('<i8') and int32 ('<i4'), C or Fortran order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/xt.hpp"

namespace attn {

struct NpyArray {
  std::string descr;               // e.g. "<f4"
  std::vector<std::size_t> shape;  // () for a scalar
  std::vector<double> values;      // every element, row-major (C order), converted to double
};

// Throws std::runtime_error with one line naming the file and what is wrong: missing file,
// not a regular file (/dev/zero), a file above limits::kMaxNpyBytes (256 MiB), bad magic,
// truncated header or data, unsupported dtype, malformed header, a shape whose element or byte
// count overflows. The sizes the header declares are checked against the file's size before the
// data is read.
NpyArray read_npy(const std::filesystem::path& path);
// The same on bytes already in memory; `name` stands for the file in messages (fuzzing, tests).
NpyArray parse_npy(std::string_view bytes, const std::filesystem::path& name);

// Typed loaders with a rank check: "w_q.npy: expected a rank-2 float array, got shape (3,)".
template <std::size_t N>
Tensor<N> load_npy(const std::filesystem::path& path);
extern template Tensor<1> load_npy<1>(const std::filesystem::path&);
extern template Tensor<2> load_npy<2>(const std::filesystem::path&);
extern template Tensor<3> load_npy<3>(const std::filesystem::path&);
extern template Tensor<4> load_npy<4>(const std::filesystem::path&);
// Integer arrays (token ids), rank 2: (B, T). Rejects non-integral values.
xt::xtensor<int, 2> load_npy_tokens(const std::filesystem::path& path);

// Writes float32 '<f4', C order.
template <std::size_t N>
void save_npy(const std::filesystem::path& path, const Tensor<N>& x);
extern template void save_npy<1>(const std::filesystem::path&, const Tensor<1>&);
extern template void save_npy<2>(const std::filesystem::path&, const Tensor<2>&);
extern template void save_npy<3>(const std::filesystem::path&, const Tensor<3>&);
extern template void save_npy<4>(const std::filesystem::path&, const Tensor<4>&);

}  // namespace attn
