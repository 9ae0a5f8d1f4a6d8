// attn/ops/embedding_backward.hpp: the backward of the token embedding table when the output
// head is tied to it (chapter 08). The table wte (V, C) is used twice by the model:
//   x[b, t, :]  = wte[tokens[b, t], :] + ...     the lookup at the bottom        (B, T, C)
//   logits[r, :] = h[r, :] @ wte^T               the tied head at the top        (N, V)
// so its gradient is the sum of both uses:
//   dwte[v, :] = sum of dx[b, t, :] over every (b, t) with tokens[b, t] = v      (scatter-add)
//              + (dlogits^T @ h)[v, :]                                           (V, N) @ (N, C)
// and the head also sends dh = dlogits @ wte (N, C) down to the last LayerNorm.
// The reference, plain loops in the order of the formulas (lm_forward_backward does the same
// inside the model). Chapter 08's exercise ex08.6 writes it.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "attn/core/check.hpp"
#include "attn/core/xt.hpp"

namespace attn {

struct TiedEmbeddingGrads {
  Matrix dwte;  // (V, C), both uses of the table
  Matrix dh;    // (N, C), into the hidden states under the head
};

// dx (B, T, C) = dL/dx at the lookup, tokens (B, T) ids in [0, V), dlogits (N, V), h (N, C),
// wte (V, C). Throws std::invalid_argument for shapes that do not fit together or an id outside
// [0, V).
inline TiedEmbeddingGrads tied_embedding_backward(const Tensor<3>& dx,
                                                  const xt::xtensor<int, 2>& tokens,
                                                  const Matrix& dlogits, const Matrix& h,
                                                  const Matrix& wte) {
  const std::size_t V = wte.shape()[0], C = wte.shape()[1];
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1], N = h.shape()[0];
  if (dx.shape()[0] != B || dx.shape()[1] != T || dx.shape()[2] != C || h.shape()[1] != C ||
      dlogits.shape()[0] != N || dlogits.shape()[1] != V) {
    throw std::invalid_argument(
        "attn::tied_embedding_backward: expected dx (B, T, C) with tokens (B, T), dlogits (N, V) "
        "and h (N, C) with wte (V, C); got dx " +
        shape_str(dx.shape()) + ", tokens " + shape_str(tokens.shape()) + ", dlogits " +
        shape_str(dlogits.shape()) + ", h " + shape_str(h.shape()) + ", wte " +
        shape_str(wte.shape()));
  }
  TiedEmbeddingGrads g{xt::zeros<float>({V, C}), xt::zeros<float>({N, C})};
  // 1. The lookup: each position adds its gradient to the row it read (a token that appears
  //    twice collects both).
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      const int id = tokens(b, t);
      if (id < 0 || static_cast<std::size_t>(id) >= V) {
        throw std::invalid_argument("attn::tied_embedding_backward: token id " +
                                    std::to_string(id) + " outside [0, " + std::to_string(V) + ")");
      }
      for (std::size_t c = 0; c < C; ++c) g.dwte(static_cast<std::size_t>(id), c) += dx(b, t, c);
    }
  // 2. The head: logits = h @ wte^T, so dwte += dlogits^T @ h and dh = dlogits @ wte.
  for (std::size_t r = 0; r < N; ++r)
    for (std::size_t v = 0; v < V; ++v) {
      const float d = dlogits(r, v);
      for (std::size_t c = 0; c < C; ++c) {
        g.dwte(v, c) += d * h(r, c);
        g.dh(r, c) += d * wte(v, c);
      }
    }
  return g;
}

}  // namespace attn
