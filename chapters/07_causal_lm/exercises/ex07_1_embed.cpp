// Exercise ex07.1: the input of the decoder, token embedding plus learned position (chapter 07,
// docs/07-causal-lm.md).
//
// Goal: turn token ids into vectors the blocks can work on.
//   tokens (B, T) ids in [0, V), wte (V, C), wpe (T_max, C) -> x (B, T, C)
//   x[b, t, :] = wte[tokens[b, t], :] + wpe[t, :]
// Row `id` of wte is what the token means; row t of wpe is where it stands. Without wpe, the
// same character at two positions would get the same vector and attention could not tell them
// apart.
// Throw std::invalid_argument for a token outside [0, V), for T > T_max (the position table has
// no row for it), and when wte and wpe do not have the same number of columns C.
//
// Check: build/default/bin/attn-check 07
#include <stdexcept>

#include "exercises.hpp"

namespace ex07 {

attn::Tensor<3> embed(const xt::xtensor<int, 2>& tokens, const attn::Matrix& wte,
                      const attn::Matrix& wpe) {
  // TODO(ex07.1): return (B, T, C), x[b, t] = wte[tokens[b, t]] + wpe[t]; std::invalid_argument for
  // an id outside [0, V), T > T_max, or wte and wpe of different widths.
  throw std::logic_error("TODO ex07.1: token + position embedding");
}

}  // namespace ex07
