# attn::sanitizers: AddressSanitizer + UndefinedBehaviorSanitizer when ATTN_SANITIZE is ON
# (the `sanitize` preset). UBSan is made fatal so a test that trips it fails instead of printing.
add_library(attn_sanitizers INTERFACE)
add_library(attn::sanitizers ALIAS attn_sanitizers)
option(ATTN_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
if(ATTN_SANITIZE)
  set(_attn_san -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_compile_options(attn_sanitizers INTERFACE ${_attn_san})
  target_link_options(attn_sanitizers INTERFACE ${_attn_san})
endif()
