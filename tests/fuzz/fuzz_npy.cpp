// tests/fuzz/fuzz_npy.cpp: libFuzzer target for the .npy reader (attn::parse_npy, the same code
// read_npy runs on a file). Any input must either parse into an array whose element count
// matches its shape, or throw std::runtime_error naming the file: never crash, overflow, or ask
// for more memory than the bytes it was given justify.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "attn/io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const attn::NpyArray a = attn::parse_npy(bytes, "fuzz.npy");
    std::size_t count = 1;
    for (const std::size_t d : a.shape) count *= d;  // parse_npy checked that this fits
    if (count != a.values.size()) std::abort();      // the shape must describe the values
    if (a.values.size() > size) std::abort();        // no element without its bytes
  } catch (const std::runtime_error& e) {
    if (std::string_view(e.what()).substr(0, 10) != "fuzz.npy: ") std::abort();  // names the file
  }
  return 0;
}
