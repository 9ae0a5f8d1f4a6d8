// tests/exercises/exercise_main.hpp: the shared main of the exercise-test binaries chNN_solution,
// chNN_mine and catalogue_* (exercise_main.cpp lists its modes). attn-check is a separate
// program (tools/attn_check.cpp) that builds the learner's chNN_mine and runs each in its own
// process.
#pragma once

namespace attn::exercises {

// Parses the mode flags (--stub-check, --expect-rejected, --attn-records), then runs the linked
// exercise tests.
int main(int argc, char** argv);

}  // namespace attn::exercises
