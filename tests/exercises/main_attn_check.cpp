// tests/exercises/main_attn_check.cpp: entry point of attn-check, the learner's progress table.
// Usage: attn-check [NN | exNN.M] [--help]
#include "exercise_main.hpp"

int main(int argc, char** argv) {
  return attn::exercises::main(argc, argv, attn::exercises::DefaultMode::progress);
}
