// tests/exercises/reference.hpp: marks the reference answers of chNN_solution.cpp.
// They are weak definitions, so a catalogue build (tests/exercises/wrong/, CONTRIBUTING.md) links
// the reference of a whole chapter plus one wrong solution file, whose ordinary (strong)
// definitions replace exactly the functions of the exercise it gets wrong. In every other build
// nothing replaces them and they behave like any other function.
#pragma once

#define ATTN_REFERENCE [[gnu::weak]]
