// tests/exercises/main_doctest.cpp: entry point of chNN_solution, chNN_mine and catalogue_*.
// Plain doctest (every doctest flag works) plus the modes of exercise_main.cpp.
#include "exercise_main.hpp"

int main(int argc, char** argv) { return attn::exercises::main(argc, argv); }
