# attn::warnings: strict warnings for project code only. Third-party headers are included as
# SYSTEM (imported targets), so their warnings never break our build.
add_library(attn_warnings INTERFACE)
add_library(attn::warnings ALIAS attn_warnings)
option(ATTN_WARNINGS_AS_ERRORS "Treat warnings in project code as errors" ON)
target_compile_options(attn_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wunused -Woverloaded-virtual -Wnull-dereference -Wdouble-promotion -Wimplicit-fallthrough
  $<$<BOOL:${ATTN_WARNINGS_AS_ERRORS}>:-Werror>)
