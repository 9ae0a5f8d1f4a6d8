# attn::sanitizers: AddressSanitizer + UndefinedBehaviorSanitizer when ATTN_SANITIZE is ON
# (the `sanitize` preset). UBSan is made fatal so a test that trips it fails instead of printing.
add_library(attn_sanitizers INTERFACE)
add_library(attn::sanitizers ALIAS attn_sanitizers)
option(ATTN_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
# ATTN_FUZZ (the `fuzz` preset, clang only): the same sanitizers plus libFuzzer's coverage
# instrumentation in every object; tests/fuzz links each target with -fsanitize=fuzzer.
option(ATTN_FUZZ "Build the libFuzzer targets of tests/fuzz (clang)" OFF)
if(ATTN_SANITIZE OR ATTN_FUZZ)
  set(_attn_san -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  if(ATTN_FUZZ)
    list(APPEND _attn_san -fsanitize=fuzzer-no-link)
  endif()
  target_compile_options(attn_sanitizers INTERFACE ${_attn_san})
  target_link_options(attn_sanitizers INTERFACE ${_attn_san})
endif()
