// Exercise ex03.1: the causal mask, in its two forms (chapter 03, docs/03-masked-softmax.md).
//
// Goal: query t may attend to keys 0..t (the past and itself), never to keys after t.
//   causal_mask(T)           -> (T, T) bool:  mask(t, s) = (s <= t)
//   causal_mask_additive(T)  -> (T, T) float: 0 where s <= t, -inf where s > t
// The additive form is added to the scores before the softmax; exp(-inf) = 0 removes the future.
// Careful: triu(ones(T, T), 1) * -inf looks right but is NaN on and below the diagonal, because
// 0 * inf is NaN in IEEE 754. Choose between 0 and -inf, do not multiply.
//
// Check: build/default/bin/attn-check 03
#include <cstddef>
#include <limits>
#include <stdexcept>

#include "exercises.hpp"

namespace ex03 {

attn::Mask causal_mask(std::size_t T) {
  // TODO(ex03.1): return (T, T) bool, mask(t, s) = (s <= t).
  throw std::logic_error("TODO ex03.1: causal mask (boolean)");
}

attn::Matrix causal_mask_additive(std::size_t T) {
  // TODO(ex03.1): return (T, T) float, 0 where s <= t and -inf where s > t; no NaN.
  throw std::logic_error("TODO ex03.1: causal mask (additive)");
}

}  // namespace ex03
