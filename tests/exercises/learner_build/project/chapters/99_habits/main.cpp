// The walkthrough of the test course: project code, built with the strict flags.
#include <cstdio>

#include "exercises.hpp"

int main() {
  std::printf("%.2f\n", static_cast<double>(ex99::mean_of({1.0f, 2.0f, 3.0f})));
  return 0;
}
