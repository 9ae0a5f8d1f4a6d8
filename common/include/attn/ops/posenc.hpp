// attn/ops/posenc.hpp: positional encodings (chapter 06).
// Attention treats its input as a set: shuffle the tokens and each output is shuffled the same
// way. Positions must be added to the token vectors. Two ways:
//   - sinusoidal (fixed): PE[p, 2i] = sin(p / 10000^(2i/C)), PE[p, 2i+1] = cos(p / 10000^(2i/C));
//   - learned: a (T_max, C) table trained like any weight (see model.hpp, wpe).
#pragma once

#include <cstddef>

#include "attn/core/xt.hpp"

namespace attn {

// (T_max, C). C may be odd (the last column is then a sine). Computed in double, rounded once.
Matrix sinusoidal_positions(std::size_t T_max, std::size_t C);

}  // namespace attn
