// chapters/03_masked_softmax/exercises/exercises.hpp: the exercises of chapter 03.
// Each function mirrors its reference in attn:: (mask.hpp, softmax.hpp) and is written in its
// own file beside this one. Check them with `build/default/bin/attn-check 03`.
#pragma once

#include <cstddef>

#include "attn/core/xt.hpp"

namespace ex03 {

// ex03.1, ex03_1_causal_mask.cpp: the causal mask in its two forms.
attn::Mask causal_mask(std::size_t T);             // (T, T), true on and below the diagonal
attn::Matrix causal_mask_additive(std::size_t T);  // (T, T), 0 on and below, -inf above

// ex03.2, ex03_2_stable_softmax.cpp: softmax of every row, stable for any finite logits.
// A row that is entirely -inf gives a row of zeros.
attn::Matrix softmax(const attn::Matrix& x);  // (T, S) -> (T, S)

// ex03.3, ex03_3_masked_softmax.cpp: softmax of every row over the allowed keys only.
attn::Matrix masked_softmax(const attn::Matrix& scores,
                            const attn::Mask& allowed);  // (T, S), (T, S) -> (T, S)

}  // namespace ex03
