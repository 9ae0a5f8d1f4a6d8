// tests/fuzz/fuzz_safetensors.cpp: libFuzzer target for the safetensors reader (chapter 14:
// attn::parse_safetensors_header and attn::decode_tensor, the code read_safetensors_header and
// read_tensor run on a file). Any input must either give tensors whose bytes lie inside the input,
// in order and without overlap, or throw attn::SafetensorsError naming the file: never crash,
// overflow, or allocate more than the input's size justifies.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "attn/io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const attn::SafetensorsHeader h = attn::parse_safetensors_header(bytes, size, "fuzz.st");
    std::size_t at = 0;
    for (const attn::StTensor& t : h.tensors) {
      if (t.begin < at || t.end < t.begin) std::abort();  // in order, no overlap
      if (h.data_start + t.end > size) std::abort();      // inside the input
      if (t.elements() * attn::st_dtype_bytes(t.dtype) != t.end - t.begin) std::abort();
      at = t.end;
      std::vector<float> values(t.elements());  // at most the input's size in floats
      attn::decode_tensor(bytes, h, t, values);
    }
  } catch (const attn::SafetensorsError& e) {
    if (std::string_view(e.what()).substr(0, 9) != "fuzz.st: ") std::abort();  // names the file
  }
  return 0;
}
