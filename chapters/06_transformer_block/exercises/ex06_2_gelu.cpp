// Exercise ex06.2: the exact GELU activation (chapter 06, docs/06-transformer-block.md).
//
// Goal: the activation between the two linear layers of the feed-forward network, elementwise.
//   x (B, T, F) -> y (B, T, F)
//   gelu(x) = x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2)))
// Phi is the cumulative distribution of the standard normal: GELU lets x through in proportion
// to how likely a standard normal is to be below it, so gelu(3) ~ 3, gelu(-3) ~ -0.004.
// This is the exact form (PyTorch's nn.GELU()), not the tanh approximation: the two differ by up
// to 5e-4, and the tests can tell them apart. std::erf is in <cmath>.
//
// Check: build/default/bin/attn-check 06
#include <stdexcept>

#include "exercises.hpp"

namespace ex06 {

attn::Tensor<3> gelu(const attn::Tensor<3>& x) {
  // TODO(ex06.2): return the same shape, every element v -> 0.5 * v * (1 + erf(v / sqrt(2))).
  throw std::logic_error("TODO ex06.2: exact GELU");
}

}  // namespace ex06
