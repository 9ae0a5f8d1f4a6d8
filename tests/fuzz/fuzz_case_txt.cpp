// tests/fuzz/fuzz_case_txt.cpp: libFuzzer target for attn-golden's case.txt parser. The tool is
// not a library, so this file compiles tools/golden.cpp itself (its main renamed) and calls
// Case::parse_text, then run_case, which reads every key the op needs with its typed getter
// (the .npy files do not exist, so a case that parses stops at its first file). Every failure
// must be a std::exception; nothing may crash.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string_view>

#define main attn_golden_main
#include "golden.cpp"
#undef main

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Case c(fs::path("/nonexistent/fuzz_case"));
  try {
    c.parse_text(text);
    Comparison cmp;
    run_case(c, cmp);
  } catch (const std::exception&) {
    // CaseError, a missing .npy, a library argument check: all reported on the case's line.
  }
  return 0;
}
