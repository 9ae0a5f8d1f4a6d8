// tests/exercises/ch07_solution.cpp: chapter 07's exercises answered by the reference library.
// Linked in place of the learner's stubs (ctest solution.ch07) to prove that every test in
// ch07_test.cpp passes against attn::. The embedding and the tied projection are steps inside
// attn::lm_forward with no function of their own, so they are written here as the shortest
// compositions of attn:: pieces (a row lookup, attn::linear).
#include <cstddef>
#include <stdexcept>
#include <string>

#include "attn/core/check.hpp"
#include "attn/ops/linear.hpp"
#include "attn/model/model.hpp"
#include "attn/model/sample.hpp"
#include "exercises.hpp"
#include "reference.hpp"

namespace ex07 {

ATTN_REFERENCE attn::Tensor<3> embed(const xt::xtensor<int, 2>& tokens, const attn::Matrix& wte,
                                     const attn::Matrix& wpe) {
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1];
  const std::size_t V = wte.shape()[0], C = wte.shape()[1];
  if (wpe.shape()[1] != C) {
    attn::shape_error("ex07::embed", "wpe (T_max, " + std::to_string(C) + ")",
                      attn::shape_str(wpe.shape()));
  }
  attn::require(T <= wpe.shape()[0], "ex07::embed", "T is longer than the position table");
  attn::Tensor<3> x({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      const int id = tokens(b, t);
      attn::require(id >= 0 && static_cast<std::size_t>(id) < V, "ex07::embed",
                    "token id outside [0, V)");
      xt::view(x, b, t, xt::all()) =
          xt::row(wte, id) + xt::row(wpe, static_cast<std::ptrdiff_t>(t));  // (C,)
    }
  return x;
}

ATTN_REFERENCE attn::Tensor<3> tied_logits(const attn::Tensor<3>& x, const attn::Matrix& wte) {
  if (x.shape()[2] != wte.shape()[1]) {
    attn::shape_error("ex07::tied_logits", "x (B, T, C) and wte (V, C)",
                      attn::shape_str(x.shape()) + " and " + attn::shape_str(wte.shape()));
  }
  const attn::Matrix wte_t = xt::transpose(wte);  // (C, V)
  return attn::linear(x, wte_t);                  // (B, T, C) @ (C, V) -> (B, T, V)
}

ATTN_REFERENCE attn::Tensor<3> lm_forward(const xt::xtensor<int, 2>& tokens,
                                          const attn::LmWeights& w, const attn::ModelSpec& config) {
  return attn::lm_forward(tokens, w, config);
}

ATTN_REFERENCE int sample_top_k(std::span<const float> logits, float temperature, std::size_t top_k,
                                attn::Rng& rng) {
  return attn::sample_top_k(logits, temperature, top_k, rng);
}

}  // namespace ex07
