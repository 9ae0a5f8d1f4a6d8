// Exercise ex08.6: the embedding table's gradient when the output head is tied to it (chapter
// 08, docs/08-backprop.md).
//
// Goal: like attn::tied_embedding_backward. Chapter 07's model reads the table wte twice: a
// lookup at the bottom (row tokens[b, t] starts position (b, t)) and, tied, the output head at
// the top (logits = h @ wte^T). Its gradient collects both uses (docs/08-backprop.md, "ex08.6").
//   in:  dx (B, T, C) = dL/dx at the lookup; tokens (B, T), ids in [0, V);
//        dlogits (N, V) = dL/dlogits; h (N, C), the hidden states under the head; wte (V, C)
//   out: dwte (V, C), the whole gradient of the table; dh (N, C) = dL/dh
// The contract:
//   - a token that appears at several positions collects the gradient of every one of them;
//     a row never looked up gets only the head's part;
//   - fresh results (not added to anything passed in);
//   - throw std::invalid_argument for shapes that do not fit together or an id outside [0, V).
//
// Check: build/default/bin/attn-check 08
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

attn::TiedEmbeddingGrads tied_embedding_backward(const attn::Tensor<3>& dx,
                                                 const xt::xtensor<int, 2>& tokens,
                                                 const attn::Matrix& dlogits, const attn::Matrix& h,
                                                 const attn::Matrix& wte) {
  // TODO(ex08.6): dwte (V, C) from both uses of the table, and dh (N, C); throw on bad shapes or
  // ids.
  throw std::logic_error("TODO ex08.6: tied embedding backward");
}

}  // namespace ex08
