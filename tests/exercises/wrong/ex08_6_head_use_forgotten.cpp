// Wrong: only the lookup is counted; the tied head's dlogits^T @ h never reaches the table.
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

attn::TiedEmbeddingGrads tied_embedding_backward(const attn::Tensor<3>& dx,
                                                 const xt::xtensor<int, 2>& tokens,
                                                 const attn::Matrix& dlogits,
                                                 const attn::Matrix& h, const attn::Matrix& wte) {
  const std::size_t V = wte.shape()[0], C = wte.shape()[1];
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1], N = h.shape()[0];
  if (dx.shape()[0] != B || dx.shape()[1] != T || dx.shape()[2] != C || h.shape()[1] != C ||
      dlogits.shape()[0] != N || dlogits.shape()[1] != V) {
    throw std::invalid_argument("tied_embedding_backward: shapes");
  }
  attn::TiedEmbeddingGrads g{xt::zeros<float>({V, C}), xt::zeros<float>({N, C})};
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      const int id = tokens(b, t);
      if (id < 0 || static_cast<std::size_t>(id) >= V) throw std::invalid_argument("tied_embedding_backward: id");
      for (std::size_t c = 0; c < C; ++c) g.dwte(static_cast<std::size_t>(id), c) += dx(b, t, c);
    }
  for (std::size_t r = 0; r < N; ++r)
    for (std::size_t v = 0; v < V; ++v)
      for (std::size_t c = 0; c < C; ++c) {
        g.dh(r, c) += dlogits(r, v) * wte(v, c);
      }
  return g;
}

}  // namespace ex08
