# attn::warnings: strict warnings for project code only. Third-party headers are included as
# SYSTEM (imported targets), so their warnings never break our build.
# attn::learner_warnings: the same warnings for the learner's exercise stubs, never as errors: a
# half-written stub (an unused variable, a double accumulator, an int loop index, a C-style cast)
# must still build, so the learner sees the warning *and* runs the tests. It has no -Werror at all
# (a -Wno-error earlier on the command line loses to a -Werror that comes later, see issue 11), and
# ends with -Wno-error so that even a -Werror in CMAKE_CXX_FLAGS (which comes first) is undone.
# Tested by ctest exercise.warnings_never_block (tests/exercises/learner_build/).
# ATTN_WARNINGS_AS_ERRORS adds -Werror to attn::warnings. A configure without a preset gets ON; the
# presets choose: OFF for `default` (what learners build: a new compiler's new warning must not
# stop them), ON for `sanitize` and `catalogue` (what CI builds: .ci/run), OFF for `fuzz`.
option(ATTN_WARNINGS_AS_ERRORS "Treat warnings in project code as errors" ON)
set(ATTN_WARNING_FLAGS
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wunused -Woverloaded-virtual -Wnull-dereference -Wdouble-promotion -Wimplicit-fallthrough)

add_library(attn_warnings INTERFACE)
add_library(attn::warnings ALIAS attn_warnings)
target_compile_options(attn_warnings INTERFACE ${ATTN_WARNING_FLAGS}
  $<$<BOOL:${ATTN_WARNINGS_AS_ERRORS}>:-Werror>)

# A stub that has not used its parameters yet is not worth a warning either.
add_library(attn_learner_warnings INTERFACE)
add_library(attn::learner_warnings ALIAS attn_learner_warnings)
target_compile_options(attn_learner_warnings INTERFACE ${ATTN_WARNING_FLAGS}
  -Wno-unused-parameter -Wno-error)
