// tests/exercises/main_doctest.cpp: entry point of chNN_solution and chNN_mine.
// Plain doctest (every doctest flag works); chNN_mine adds --stub-check in ctest.
#include "exercise_main.hpp"

int main(int argc, char** argv) {
  return attn::exercises::main(argc, argv, attn::exercises::DefaultMode::doctest);
}
