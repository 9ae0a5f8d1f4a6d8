// The exercise of the one-chapter test course (tests/exercises/learner_build).
#pragma once

#include <vector>

namespace ex99 {

float mean_of(const std::vector<float>& x);  // (n,) -> the mean

}  // namespace ex99
