// tests/parts64.hpp: the float64 twin of a pre-norm block with chapter 11's parts, and of a
// language model of such blocks, composed from the double ops (rms_norm, gqa_forward,
// swiglu_forward; layer_norm, ffn_forward). The float block and model (attn/model/) are
// gradient-checked against them with attn::check_gradients (test_block, test_model).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "attn/core/xt.hpp"
#include "attn/model/block.hpp"
#include "attn/model/model.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/ops/gqa.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/rmsnorm.hpp"
#include "attn/ops/swiglu.hpp"

namespace attn::testing {

// The float64 twin of a pre-norm block with parts, composed from the double ops: chapter 11's
// (rms_norm, gqa_forward, swiglu_forward) and chapter 06's (layer_norm, ffn_forward). Zero
// betas and biases where the parts have none; gqa_forward with KV = H, no RoPE and no window is
// chapter 05's attention.
struct Block64 {
  attn::GqaWeights<double> a;
  attn::Tensor64<1> g1, b1, g2, b2;
  attn::FfnWeights64 mlp;
  attn::SwigluWeights<double> sw;
};

inline attn::Tensor64<3> block64_forward(const attn::Tensor64<3>& x, const Block64& w,
                                         const attn::BlockConfig& cfg) {
  const std::size_t C = x.shape()[2];
  const double eps = static_cast<double>(cfg.eps);
  const auto norm = [&](const attn::Tensor64<3>& v, const attn::Tensor64<1>& g,
                        const attn::Tensor64<1>& b) -> attn::Tensor64<3> {
    if (cfg.normalization == attn::Normalization::rmsnorm)
      return attn::rms_norm<double, 3>(v, g, eps);
    const attn::Tensor64<1> beta = b.size() != 0 ? b : attn::Tensor64<1>(xt::zeros<double>({C}));
    return attn::layer_norm<3, double>(v, g, beta, eps);
  };
  attn::GqaConfig gc;
  gc.n_heads = cfg.n_heads;
  gc.n_kv_heads = attn::kv_heads(cfg);
  gc.rope = cfg.rope;
  gc.theta = cfg.rope_theta;
  gc.window = cfg.window;
  const attn::Tensor64<3> x1 = x + attn::gqa_forward<double>(norm(x, w.g1, w.b1), w.a, gc).out;
  const attn::Tensor64<3> h = norm(x1, w.g2, w.b2);
  if (cfg.ffn == attn::FfnKind::swiglu) return x1 + attn::swiglu_forward<double>(h, w.sw);
  attn::FfnWeights64 m = w.mlp;
  if (m.b1.size() == 0) m.b1 = xt::zeros<double>({m.w1.shape()[1]});
  if (m.b2.size() == 0) m.b2 = xt::zeros<double>({C});
  return x1 + attn::ffn_forward<double>(h, m, cfg.activation);
}

// The language model of such blocks in float64 (tied or untied head, learned or rope
// positions), as lm_loss computes it: the mean cross-entropy of the next-token predictions.
struct Lm64 {
  attn::Tensor64<2> wte, wpe;
  std::vector<Block64> blocks;
  attn::Tensor64<1> gf, bf;
  attn::Tensor64<2> head;
  attn::Tensor64<1> head_b;
};

inline Lm64 to_lm64(const attn::LmWeights& w) {
  const auto d = [](const auto& t) { return xt::eval(xt::cast<double>(t)); };
  Lm64 m{d(w.wte), d(w.wpe), {}, d(w.ln_f_gamma), d(w.ln_f_beta), d(w.lm_head), d(w.lm_head_bias)};
  for (const attn::BlockWeights& b : w.blocks) {
    m.blocks.push_back({{d(b.attn.w_q), d(b.attn.w_k), d(b.attn.w_v), d(b.attn.w_o)},
                        d(b.ln1_gamma),
                        d(b.ln1_beta),
                        d(b.ln2_gamma),
                        d(b.ln2_beta),
                        {d(b.ffn.w1), d(b.ffn.b1), d(b.ffn.w2), d(b.ffn.b2)},
                        {d(b.swiglu.w_gate), d(b.swiglu.w_up), d(b.swiglu.w_down)}});
  }
  return m;
}

// Every non-empty tensor of m, in lm_parameters' order (so they pair with the float grads).
inline std::vector<std::span<double>> lm64_tensors(Lm64& m) {
  std::vector<std::span<double>> out;
  const auto add = [&](auto& t) {
    if (t.size() != 0) out.emplace_back(t.data(), t.size());
  };
  add(m.wte);
  add(m.wpe);
  for (Block64& b : m.blocks) {
    add(b.a.w_q);
    add(b.a.w_k);
    add(b.a.w_v);
    add(b.a.w_o);
    add(b.g1);
    add(b.b1);
    add(b.g2);
    add(b.b2);
    add(b.mlp.w1);
    add(b.mlp.b1);
    add(b.mlp.w2);
    add(b.mlp.b2);
    add(b.sw.w_gate);
    add(b.sw.w_up);
    add(b.sw.w_down);
  }
  add(m.gf);
  add(m.bf);
  add(m.head);
  add(m.head_b);
  return out;
}

inline double lm64_loss(const xt::xtensor<int, 2>& tokens, const xt::xtensor<int, 2>& targets,
                        const Lm64& m, const attn::LmConfig& config) {
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1], C = config.n_embd;
  const std::size_t V = config.vocab_size;
  attn::Tensor64<3> x = xt::zeros<double>({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t c = 0; c < C; ++c)
        x(b, t, c) = m.wte(static_cast<std::size_t>(tokens(b, t)), c) +
                     (config.positions == attn::Positions::learned ? m.wpe(t, c) : 0.0);
  const attn::BlockConfig bc = attn::lm_block_config(config);
  for (const Block64& blk : m.blocks) x = block64_forward(x, blk, bc);
  const double eps = 1e-5f;  // the model's float eps, as a double
  attn::Tensor64<3> h;
  if (config.normalization == attn::Normalization::rmsnorm) {
    h = attn::rms_norm<double, 3>(x, m.gf, eps);
  } else {
    const attn::Tensor64<1> beta =
        m.bf.size() != 0 ? m.bf : attn::Tensor64<1>(xt::zeros<double>({C}));
    h = attn::layer_norm<3, double>(x, m.gf, beta, eps);
  }
  double loss = 0.0;
  std::vector<double> logits(V);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      double mx = -1e300;
      for (std::size_t v = 0; v < V; ++v) {
        double z = config.tied_head ? 0.0 : (m.head_b.size() != 0 ? m.head_b(v) : 0.0);
        for (std::size_t c = 0; c < C; ++c)
          z += h(b, t, c) * (config.tied_head ? m.wte(v, c) : m.head(c, v));
        logits[v] = z;
        mx = std::max(mx, z);
      }
      double sum = 0.0;
      for (double z : logits) sum += std::exp(z - mx);
      loss += mx + std::log(sum) - logits[static_cast<std::size_t>(targets(b, t))];
    }
  return loss / static_cast<double>(B * T);
}

}  // namespace attn::testing
