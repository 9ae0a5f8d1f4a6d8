// Exercise ex03.2: a numerically stable softmax over the rows of a matrix (chapter 03,
// docs/03-masked-softmax.md).
//
// Goal: turn every row of scores into probabilities that sum to 1.
//   x (T, S) -> softmax(x) (T, S)
//   softmax(z)_i = exp(z_i - m) / sum_j exp(z_j - m),  m = max_j z_j   (one row z at a time)
// Subtracting m changes nothing mathematically but keeps every exponent <= 0, so exp never
// overflows: [1000, 1001, 1002] must give [0.0900, 0.2447, 0.6652], not NaN.
// -inf entries get weight exactly 0. A row that is entirely -inf (every key masked) must give a
// row of zeros, not NaN.
//
// Check: build/default/bin/attn-check 03
#include <stdexcept>

#include "exercises.hpp"

namespace ex03 {

attn::Matrix softmax(const attn::Matrix& x) {
  // TODO(ex03.2): return (T, S), row t = softmax(x[t]); finite for [1000, 1001, 1002], exactly 0
  // for -inf, a row of zeros for a row that is all -inf.
  throw std::logic_error("TODO ex03.2: stable softmax");
}

}  // namespace ex03
