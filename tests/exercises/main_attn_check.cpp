// tests/exercises/main_attn_check.cpp: entry point of attn-check, the learner's progress table.
// Usage: attn-check [NN | exNN.M] [--help]
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "exercise_main.hpp"

int main(int argc, char** argv) {
  const int code = attn::exercises::main(argc, argv, attn::exercises::DefaultMode::progress);
  // The input contract: output that cannot be written (> /dev/full) is an error, exit code 1.
  std::cout.flush();
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0 || !std::cout) {
    std::fprintf(stderr, "attn-check: error: cannot write the output (stdout): %s\n",
                 errno != 0 ? std::strerror(errno) : "write error");
    return 1;
  }
  return code;
}
