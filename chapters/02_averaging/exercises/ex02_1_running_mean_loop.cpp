// ex02.1 Running mean by loop: the formula of chapter 02, written as it reads.
//
// Goal:    for every time step t, the mean of the tokens seen so far.
// Shapes:  x (T, C) -> xbar (T, C)
// Formula: xbar[t, c] = (x[0, c] + x[1, c] + ... + x[t, c]) / (t + 1)
//          so xbar[0] == x[0], and the last row is the mean of all of x.
// Check:   build/default/bin/attn-check 02
//          build/default/bin/02_averaging --mine
#include <stdexcept>

#include "exercises.hpp"

namespace ex02 {

attn::Matrix running_mean_loop(const attn::Matrix& x) {
  const std::size_t T = x.shape()[0];
  const std::size_t C = x.shape()[1];
  attn::Matrix xbar = xt::zeros<float>({T, C});  // (T, C)
  // TODO(ex02.1): xbar(t, c) = mean of x(0..t, c); xbar (T, C), xbar[0] == x[0] exactly.
  throw std::logic_error("TODO ex02.1: running mean by loop");
  return xbar;
}

}  // namespace ex02
