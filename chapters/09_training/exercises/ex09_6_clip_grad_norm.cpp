// Exercise ex09.6: gradient clipping by the global norm (chapter 09, docs/09-training.md).
//
// Goal: like attn::clip_grad_norm (torch.nn.utils.clip_grad_norm_): one rare huge gradient must
// not throw the model far (docs/09-training.md, "The math", clipping: the rule, and when it
// changes an AdamW step).
//   in/out: grads, the gradient tensors of the model (any number, any lengths), scaled in place
//   in:     max_norm >= 0 (0: clipping off)
//   out:    the global norm of all the gradients together *before* clipping
// The contract:
//   - one norm for all the tensors together (the square root of the sum of every element's
//     square), accumulated so that float gradients as large as 1e20 still give a finite norm;
//   - when that norm is above max_norm, every gradient is scaled by the same factor
//     max_norm / (norm + 1e-6) (torch's rule); otherwise, or with max_norm = 0, nothing changes.
//
// Check: build/default/bin/attn-check 09
#include <stdexcept>

#include "exercises.hpp"

namespace ex09 {

double clip_grad_norm(std::span<const std::span<float>> grads, float max_norm) {
  // TODO(ex09.6): return the global norm before clipping; scale every gradient when it is above
  // max_norm (and max_norm > 0).
  throw std::logic_error("TODO ex09.6: clip the gradients");
}

}  // namespace ex09
