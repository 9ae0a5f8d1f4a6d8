// tests/test_fixtures.hpp: the inputs several test files share, the same on every machine.
//   wiggle, wiggly1/2/3  fixed numbers with no visible pattern, scale * sin(1.7 i + phase) in
//                        row-major order (the exercise tests of chapters 06 and 08)
//   random_model         a language model whose every part matters (test_model, test_kvcache)
//   random_lm            lm_init's model for any parts, every parameter redrawn (gamma near 1),
//                        for gradient checks (test_model, test_dropout, test_reference)
//   lm_choices, lm_config  the default model's choices from its five sizes, and its spec
//   (attn::with_choices  a spec with some of its choices changed, resolved again)
//   block_config         a block's config: width C, H heads, the parts chosen
//   rechoose             a block's config with some of its spec's choices changed
//   random_ids           (B, T) token ids drawn uniformly from [0, V)
//   small_train_config   a training run of a few steps on a tiny model (test_train,
//                        test_checkpoint)
//   causal_head          one attention head's q, k, v (T, hs), and causal_reference, the
//                        reference attention on it (test_ladder, test_online_softmax)
#pragma once

#include <cmath>
#include <array>
#include <cstddef>
#include <string>

#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"
#include "attn/model/block.hpp"
#include "attn/model/model.hpp"
#include "attn/model/spec.hpp"
#include "attn/ops/attention.hpp"
#include "attn/train/train.hpp"

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
inline LmWeights random_model(Rng& rng, const ModelSpec& config) {
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

// The choices of the default model (chapter 07's parts) with V tokens, T_max positions, width C,
// H heads and L blocks ...
inline ModelChoices lm_choices(std::size_t V, std::size_t T_max, std::size_t C, std::size_t H,
                               std::size_t L) {
  ModelChoices c;
  c.vocab_size = V;
  c.block_size = T_max;
  c.n_embd = C;
  c.n_heads = H;
  c.n_layers = L;
  return c;
}

// ... and that model, resolved.
inline ModelSpec lm_config(std::size_t V, std::size_t T_max, std::size_t C, std::size_t H,
                           std::size_t L) {
  return resolve_spec(lm_choices(V, T_max, C, H, L));
}

// How a block of width C with H heads runs: the default model's parts (block_size 64, room for
// any window a test asks for), then `change` applied to the choices (the parts, ablations,
// activation, dropout); causal, pre-norm, eps 1e-5, weights kept (the BlockConfig's own fields,
// which a test sets directly).
template <class Change>
BlockConfig block_config(std::size_t C, std::size_t H, Change&& change) {
  ModelChoices c;
  c.n_embd = C;
  c.n_heads = H;
  change(c);
  BlockConfig config;
  config.spec = resolve_spec(c);
  return config;
}
inline BlockConfig block_config(std::size_t C, std::size_t H) {
  return block_config(C, H, [](ModelChoices&) {});
}

// The same block with its spec's choices changed by `change`: the BlockConfig's own fields kept.
template <class Change>
BlockConfig rechoose(BlockConfig config, Change&& change) {
  config.spec = with_choices(config.spec, change);
  return config;
}

// lm_init, then every parameter redrawn so that every part of the model matters: gammas
// 1 + N(0, 0.2), everything else N(0, 0.5).
inline LmWeights random_lm(Rng& rng, const ModelSpec& config) {
  LmWeights w = lm_init(rng, config);
  for (const NamedTensor& t : lm_parameters(w)) {
    const bool gamma = t.name.find("gamma") != std::string::npos;
    for (float& v : t.values) v = gamma ? 1.0f + rng.normal(0.0f, 0.2f) : rng.normal(0.0f, 0.5f);
  }
  return w;
}

// (B, T) token ids drawn uniformly from [0, V).
inline xt::xtensor<int, 2> random_ids(Rng& rng, std::size_t B, std::size_t T, std::size_t V) {
  xt::xtensor<int, 2> ids(std::array<std::size_t, 2>{B, T});
  for (int& id : ids) id = static_cast<int>(rng.below(V));
  return ids;
}

// A tiny model (V 7, T_max 6, C 8, H 2, n_layers blocks) trained for 12 steps on batches of 4,
// lr 3e-3, loss estimated on 2 batches, seed 42; no gradient clipping.
inline TrainConfig small_train_config(std::size_t n_layers) {
  TrainConfig c;
  c.model = lm_config(7, 6, 8, 2, n_layers);
  c.batch_size = 4;
  c.steps = 12;
  c.schedule.lr = 3e-3f;
  c.eval_iters = 2;
  c.seed = 42;
  return c;
}

// One causal attention head of chapter 12: q and k drawn N(0, 1.5^2) (scores big enough for the
// online softmax to rescale), v N(0, 1), each (T, hs).
struct Head {
  Matrix q, k, v;
};
inline Head causal_head(Rng& rng, std::size_t T, std::size_t hs) {
  return {randn(rng, T, hs, 1.5f), randn(rng, T, hs, 1.5f), randn(rng, T, hs)};
}

// The reference on it: attn::scaled_dot_product_attention of a (1, 1, T, hs) batch, causal,
// -> (T, hs).
inline Matrix causal_reference(const Head& h) {
  const std::size_t T = h.q.shape()[0], hs = h.q.shape()[1];
  const std::array<std::size_t, 4> shape{1, 1, T, hs};
  const Tensor<4> q = xt::reshape_view(h.q, shape), k = xt::reshape_view(h.k, shape),
                  v = xt::reshape_view(h.v, shape);
  const Tensor<4> out = scaled_dot_product_attention(q, k, v, true).out;
  Matrix m(Matrix::shape_type{T, hs});
  std::copy(out.begin(), out.end(), m.begin());
  return m;
}

}  // namespace attn::testing
