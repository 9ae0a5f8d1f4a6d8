// The doctest main for the library tests (tests/common/): the library's thread setup first, as
// every program of the project does (attn/core/threads.hpp: BLAS pinned to one thread before any
// kernel runs), then doctest with every flag it takes.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "attn/core/threads.hpp"

int main(int argc, char** argv) {
  attn::setup_threads();
  return doctest::Context(argc, argv).run();
}
