// ex02.2 Lower-triangular averaging weights: the matrix that turns the loop into one matmul.
//
// Goal:    a (T, T) matrix W such that W @ x is the running mean of x (T, C).
// Shapes:  T -> W (T, T)
// Formula: W[t, i] = 1 / (t + 1)  for i <= t   (row t averages tokens 0..t)
//          W[t, i] = 0            for i >  t   (no token sees the future: the causal mask)
//          Same as tril(ones(T, T)) with each row divided by its sum. Every row sums to 1.
// Check:   build/default/bin/attn-check 02
//          build/default/bin/02_averaging --mine
#include <stdexcept>

#include "exercises.hpp"

namespace ex02 {

attn::Matrix averaging_weights_tril(std::size_t T) {
  attn::Matrix weights = xt::zeros<float>({T, T});  // (T, T)
  // TODO(ex02.2): weights(t, i) = 1 / (t + 1) for i <= t, 0 for i > t; (T, T), rows sum to 1.
  throw std::logic_error("TODO ex02.2: lower-triangular averaging weights");
  return weights;
}

}  // namespace ex02
