// tests/test_fixtures.hpp: the inputs several test files share, the same on every machine.
//   wiggle, wiggly1/2/3  fixed numbers with no visible pattern, scale * sin(1.7 i + phase) in
//                        row-major order (the exercise tests of chapters 06 and 08)
//   random_model         a language model whose every part matters (test_model, test_kvcache)
#pragma once

#include <cmath>
#include <cstddef>

#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"
#include "attn/model/model.hpp"

namespace attn::testing {

inline double wiggle(std::size_t i, double phase, double scale) {
  return scale * std::sin(1.7 * static_cast<double>(i) + phase);
}

inline Tensor<3> wiggly3(std::size_t B, std::size_t T, std::size_t C, double phase, double scale) {
  Tensor<3> x({B, T, C});
  for (std::size_t i = 0; i < x.size(); ++i)
    x.data()[i] = static_cast<float>(wiggle(i, phase, scale));
  return x;
}

inline Matrix wiggly2(std::size_t rows, std::size_t cols, double phase, double scale) {
  Matrix m({rows, cols});
  for (std::size_t i = 0; i < m.size(); ++i)
    m.data()[i] = static_cast<float>(wiggle(i, phase, scale));
  return m;
}

inline Vector wiggly1(std::size_t n, double phase, double scale, double offset = 0.0) {
  Vector v = xt::zeros<float>({n});
  for (std::size_t i = 0; i < n; ++i) v(i) = static_cast<float>(offset + wiggle(i, phase, scale));
  return v;
}

// lm_init's 0.02 weights make nearly uniform logits; these scales make every part matter and
// give peaked, varied distributions.
inline LmWeights random_model(Rng& rng, const LmConfig& config) {
  LmWeights w = lm_init(rng, config);
  const std::size_t C = config.n_embd;
  const float s = 1.0f / std::sqrt(static_cast<float>(C));
  w.wte = randn(rng, config.vocab_size, C, 0.5f);
  w.wpe = randn(rng, config.block_size, C, 0.5f);
  for (BlockWeights& b : w.blocks) {
    b.attn = mha_init(rng, C, s);
    b.ffn = ffn_init(rng, C, 4 * C, s);
    b.ffn.b1 = randn<1>(rng, {4 * C}, 0.1f);
    b.ffn.b2 = randn<1>(rng, {C}, 0.1f);
    b.ln1_gamma = 1.0f + randn<1>(rng, {C}, 0.1f);
    b.ln1_beta = randn<1>(rng, {C}, 0.1f);
    b.ln2_gamma = 1.0f + randn<1>(rng, {C}, 0.1f);
    b.ln2_beta = randn<1>(rng, {C}, 0.1f);
  }
  w.ln_f_gamma = 1.0f + randn<1>(rng, {C}, 0.1f);
  w.ln_f_beta = randn<1>(rng, {C}, 0.1f);
  return w;
}

}  // namespace attn::testing
