// tests/exercises/exercise_main.hpp: the shared main of the exercise-test binaries.
// chNN_solution and chNN_mine start in plain doctest mode; attn-check starts in progress mode
// (the learner's table). See exercise_main.cpp for the modes.
#pragma once

namespace attn::exercises {

enum class DefaultMode { doctest, progress };

// Parses the mode flags (--stub-check, --verify-shipped), then runs the linked exercise tests.
int main(int argc, char** argv, DefaultMode mode);

}  // namespace attn::exercises
