// attn/io/safetensors.hpp: reading Hugging Face's .safetensors files (chapter 14).
// The format, whole: 8 bytes, a little-endian uint64 N; N bytes of JSON, the header,
//   {"wte.weight": {"dtype": "F32", "shape": [50257, 768], "data_offsets": [0, 154389504]}, ...,
//    "__metadata__": {"format": "pt"}}
// then the data section: every tensor's raw little-endian bytes, row-major, at its offsets
// (counted from the start of the data section). Nothing else: no compression, no pickle (the
// format exists because PyTorch's .bin files are pickles that can run code when loaded).
//
// Every number of the header is checked against the file before anything is read or
// allocated: N against the file's size, each tensor's byte count against its dtype and shape
// (no overflow), the offsets in order, without overlaps or holes, ending at the file's end.
// F32 is read as it is; F16 and BF16 are converted to float on load (exactly: every half and
// bfloat16 value is a float); every other dtype is refused by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// One line naming the file and what was wrong in it:
//   "gpt2/model.safetensors: tensor 'h.0.attn.c_attn.weight': data_offsets [0, 12] hold 12
//    bytes, but F32 of shape (768, 2304) needs 7077888"
class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class StDtype { f32, f16, bf16 };
std::string_view st_dtype_name(StDtype d);  // "F32", "F16", "BF16"
std::size_t st_dtype_bytes(StDtype d);      // 4, 2, 2

// One tensor of the header.
struct StTensor {
  std::string name;  // as the file spells it, e.g. "h.0.attn.c_attn.weight"
  StDtype dtype;
  std::vector<std::size_t> shape;  // () for a scalar
  std::size_t begin, end;          // [begin, end) in the data section, end - begin = its bytes
  std::size_t elements() const;    // the product of the shape (1 for a scalar)
};

// A header, checked: its tensors in the order of their offsets, and the metadata.
struct SafetensorsHeader {
  std::filesystem::path path;                   // the file (or the name given for bytes)
  std::vector<StTensor> tensors;                // by data_offsets
  std::map<std::string, std::string> metadata;  // "__metadata__", strings only
  std::size_t data_start = 0;                   // 8 + N: where the data section starts
  // The tensor of that name, or null.
  const StTensor* find(std::string_view name) const;
};

// Limits: a file of at most 2 GiB (GPT-2 124M in float32: 548 MB); a header of at most
// 100 MiB (the format's own bound; GPT-2's is 15 KB).
inline constexpr std::uint64_t kMaxSafetensorsBytes = std::uint64_t{2} << 30;
inline constexpr std::uint64_t kMaxSafetensorsHeader = std::uint64_t{100} << 20;

// The header of a file whose first bytes are `prefix` and whose size is `file_size`. `prefix`
// must hold at least 8 bytes and, once N is known, the N bytes of JSON (when it holds fewer,
// the file is called truncated). Throws SafetensorsError.
SafetensorsHeader parse_safetensors_header(std::string_view prefix, std::uint64_t file_size,
                                           const std::filesystem::path& name);

// Reads and checks the header of a file on disk: a regular file of at most
// kMaxSafetensorsBytes. Reads only the 8 + N header bytes.
SafetensorsHeader read_safetensors_header(const std::filesystem::path& path);

// One tensor's values as floats (F16 and BF16 converted), out.size() == t.elements(): from the
// file of the header, or from the file's bytes already in memory (fuzzing, tests).
void read_tensor(const SafetensorsHeader& header, const StTensor& t, std::span<float> out);
void decode_tensor(std::string_view file_bytes, const SafetensorsHeader& header, const StTensor& t,
                   std::span<float> out);

// IEEE half and bfloat16 to float, exactly (subnormals, infinities and NaNs kept).
float half_to_float(std::uint16_t h);
float bfloat16_to_float(std::uint16_t b);

}  // namespace attn
