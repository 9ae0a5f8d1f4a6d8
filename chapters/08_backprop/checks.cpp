// chapters/08_backprop/checks.cpp: the run around the lesson of chapter 08. The reference
// kernels behind the --mine switch, and the setup of the gradient check of every op (section 3):
// for each op, its inputs, its forward, and the tensors its backward computes gradients for.
#include "checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "attn/model/block.hpp"
#include "attn/model/model.hpp"
#include "attn/ops/attention.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/ops/loss.hpp"
#include "attn/ops/mask.hpp"
#include "attn/ops/softmax.hpp"
#include "attn/train/gradcheck.hpp"

namespace ch08 {

using attn::BlockConfig;
using attn::BlockWeights;
using attn::GradTensor;

namespace {

Matrix reference_softmax_backward(const Matrix& y, const Matrix& dy) {
  return attn::softmax_backward<2>(y, dy);
}

Matrix reference_masked_softmax_backward(const Matrix& y, const Matrix& dy) {
  return attn::masked_softmax_backward<2>(y, dy);
}

attn::LinearGrads reference_linear_backward(const Tensor<3>& dy, const Tensor<3>& x,
                                            const Matrix& w) {
  return attn::linear_backward(dy, x, w);
}

attn::LayerNormGrads<3> reference_layer_norm_backward(const Tensor<3>& dy, const Tensor<3>& x,
                                                      const Vector& gamma, float eps) {
  return attn::layer_norm_backward<3>(dy, x, gamma, eps);
}

// One head (T, hs) is the library's attention with B = H = 1.
Tensor<4> as_heads(const Matrix& m) {  // (T, hs) -> (1, 1, T, hs)
  Tensor<4> t({1, 1, m.shape()[0], m.shape()[1]});
  std::copy(m.begin(), m.end(), t.begin());
  return t;
}

Matrix as_matrix(const Tensor<4>& t) {  // (1, 1, T, hs) -> (T, hs)
  Matrix m({t.shape()[2], t.shape()[3]});
  std::copy(t.begin(), t.end(), m.begin());
  return m;
}

ex08::AttentionGrads reference_attention_backward(const Matrix& dout, const Matrix& q,
                                                  const Matrix& k, const Matrix& v, bool causal) {
  const Tensor<4> q4 = as_heads(q), k4 = as_heads(k), v4 = as_heads(v);
  const attn::AttentionResult f = attn::scaled_dot_product_attention(q4, k4, v4, causal);
  const attn::AttentionGrads g =
      attn::scaled_dot_product_attention_backward(as_heads(dout), q4, k4, v4, f.weights, causal);
  return {as_matrix(g.dq), as_matrix(g.dk), as_matrix(g.dv)};
}

// ---------------------------------------------------------------------------------------------
// 3. The gradient check of every op.

// One op's check: L = sum(forward() * R) for a fixed random R, so R is the upstream gradient
// dL/dout. backward(R) runs the backward under test and returns the tensors to nudge, each
// with the gradient it computed; grad_check compares them with central differences of L.
template <class Forward, class Backward>
std::vector<attn::GradCheckResult> check_op(attn::Rng& rng, const Forward& forward,
                                            const Backward& backward,
                                            const attn::GradCheckOptions& options = {}) {
  auto R = forward();  // the output's shape
  for (float& v : R) v = rng.normal();
  const std::vector<GradTensor> tensors = backward(R);
  return attn::grad_check([&] { return attn::weighted_sum(values_of(forward()), values_of(R)); },
                          tensors, options);
}

// The block (pre and post-norm) and the whole model: one row each, the largest errors of all
// its tensors, the sizes added up.
CheckRow worst_of(const std::string& op, const std::vector<attn::GradCheckResult>& rs) {
  CheckRow row{op, {}};
  row.r.name = "all " + std::to_string(rs.size()) + " tensors";
  for (const attn::GradCheckResult& r : rs) {
    row.r.count += r.count;
    row.r.max_abs = std::max(row.r.max_abs, r.max_abs);
    row.r.max_rel = std::max(row.r.max_rel, r.max_rel);
  }
  row.r.pass = attn::all_pass(rs);
  return row;
}

// Random gammas and betas, and weights big enough that every path matters.
BlockWeights check_block_weights(attn::Rng& rng) {
  BlockWeights w;
  w.attn = attn::mha_init(rng, kC, 0.25f);
  w.ffn = attn::ffn_init(rng, kC, kF, 0.2f);
  w.ffn.b1 = attn::randn<1>(rng, {kF}, 0.1f);
  w.ffn.b2 = attn::randn<1>(rng, {kC}, 0.1f);
  w.ln1_gamma = attn::randn<1>(rng, {kC}, 0.2f) + 1.0f;
  w.ln1_beta = attn::randn<1>(rng, {kC}, 0.2f);
  w.ln2_gamma = attn::randn<1>(rng, {kC}, 0.2f) + 1.0f;
  w.ln2_beta = attn::randn<1>(rng, {kC}, 0.2f);
  return w;
}

}  // namespace

Kernels reference_kernels() {
  return {&reference_softmax_backward, &reference_masked_softmax_backward,
          &reference_linear_backward, &reference_layer_norm_backward,
          &reference_attention_backward};
}

Kernels learner_kernels() {
  return {&ex08::softmax_backward, &ex08::softmax_backward, &ex08::linear_backward,
          &ex08::layer_norm_backward, &ex08::attention_backward};
}
GradientChecks gradient_checks(const Kernels& k, attn::Rng& rng) {
  GradientChecks checks;
  const auto add = [&](const std::string& op, const std::vector<attn::GradCheckResult>& rs) {
    for (const attn::GradCheckResult& r : rs) checks.correct.push_back({op, r});
  };
  {  // softmax and masked softmax, rows of 7
    Matrix x = attn::randn(rng, 3, 7, 2.0f), dx;
    const auto forward = [&] { return Matrix(attn::softmax<2>(x)); };
    const auto backward = [&](const Matrix& R) -> std::vector<GradTensor> {
      dx = k.softmax_backward(forward(), R);
      return {{"x", values_of(x), values_of(dx)}};
    };
    add("softmax", check_op(rng, forward, backward));
  }
  {
    Matrix s = attn::randn(rng, kT, kT, 2.0f), ds;
    const attn::Mask mask = attn::causal_mask(kT);
    const auto forward = [&] { return Matrix(attn::masked_softmax<2>(s, mask)); };
    const auto backward = [&](const Matrix& R) -> std::vector<GradTensor> {
      ds = k.masked_softmax_backward(forward(), R);
      return {{"scores", values_of(s), values_of(ds)}};
    };
    add("masked softmax", check_op(rng, forward, backward));
  }
  {  // cross-entropy: the loss itself is the scalar
    Matrix logits = attn::randn(rng, kB * kT, 7, 2.0f);
    std::vector<int> targets(kB * kT);
    for (int& t : targets) t = static_cast<int>(rng.below(7));
    const Matrix grad = attn::cross_entropy_grad(logits, targets);
    add("cross-entropy", attn::grad_check([&] { return attn::cross_entropy(logits, targets); },
                                          {{"logits", values_of(logits), values_of(grad)}}));
  }
  {  // linear
    Tensor<3> x = attn::randn<3>(rng, {kB, kT, kC});
    Matrix w = attn::randn(rng, kC, 3, 0.5f);
    Vector b = attn::randn<1>(rng, {3});
    attn::LinearGrads g;
    const auto forward = [&] { return Tensor<3>(attn::linear(x, w, b)); };
    const auto backward = [&](const Tensor<3>& R) -> std::vector<GradTensor> {
      g = k.linear_backward(R, x, w);
      return {{"x", values_of(x), values_of(g.dx)},
              {"w", values_of(w), values_of(g.dw)},
              {"b", values_of(b), values_of(g.db)}};
    };
    add("linear", check_op(rng, forward, backward));
  }
  // activations, away from ReLU's kink at 0
  for (const attn::Activation a :
       {attn::Activation::relu, attn::Activation::gelu, attn::Activation::gelu_tanh}) {
    Tensor<3> x = attn::randn<3>(rng, {1, kT, kC}, 2.0f), dx;
    for (float& v : x) v += v >= 0.0f ? 0.1f : -0.1f;
    const auto forward = [&] { return Tensor<3>(attn::activate<3>(x, a)); };
    const auto backward = [&](const Tensor<3>& R) -> std::vector<GradTensor> {
      dx = attn::activate_backward<3>(x, R, a);
      return {{"x", values_of(x), values_of(dx)}};
    };
    add(std::string(attn::activation_name(a)), check_op(rng, forward, backward));
  }
  {  // FFN (exact GELU)
    Tensor<3> x = attn::randn<3>(rng, {kB, kT, kC}), dx;
    attn::FfnWeights w = attn::ffn_init(rng, kC, kF, 0.3f);
    w.b1 = attn::randn<1>(rng, {kF}, 0.1f);
    attn::FfnWeights g = w;
    const auto forward = [&] { return attn::ffn_forward(x, w); };
    const auto backward = [&](const Tensor<3>& R) -> std::vector<GradTensor> {
      attn::FfnCache cache;
      attn::ffn_forward(x, w, attn::Activation::gelu, cache);
      for (Tensor<2>* m : {&g.w1, &g.w2}) m->fill(0.0f);
      g.b1.fill(0.0f);
      g.b2.fill(0.0f);
      attn::ffn_backward(R, cache, w, attn::Activation::gelu, dx, g);
      return {{"x", values_of(x), values_of(dx)},
              {"w1", values_of(w.w1), values_of(g.w1)},
              {"b1", values_of(w.b1), values_of(g.b1)},
              {"w2", values_of(w.w2), values_of(g.w2)},
              {"b2", values_of(w.b2), values_of(g.b2)}};
    };
    add("ffn", check_op(rng, forward, backward));
  }
  {  // LayerNorm
    Tensor<3> x = attn::randn<3>(rng, {kB, kT, kC}, 2.0f);
    Vector gamma = attn::randn<1>(rng, {kC}, 0.3f) + 1.0f;
    Vector beta = attn::randn<1>(rng, {kC}, 0.3f);
    attn::LayerNormGrads<3> g;
    const auto forward = [&] { return attn::layer_norm<3>(x, gamma, beta); };
    const auto backward = [&](const Tensor<3>& R) -> std::vector<GradTensor> {
      g = k.layer_norm_backward(R, x, gamma, 1e-5f);
      return {{"x", values_of(x), values_of(g.dx)},
              {"gamma", values_of(gamma), values_of(g.dgamma)},
              {"beta", values_of(beta), values_of(g.dbeta)}};
    };
    add("layer_norm", check_op(rng, forward, backward));
  }
  // One attention head, causal and cross (S != T).
  for (const bool causal : {true, false}) {
    const std::size_t T = kT, S = causal ? kT : kT + 2, hs = 3;
    Matrix q = attn::randn(rng, T, hs), kk = attn::randn(rng, S, hs), v = attn::randn(rng, S, hs);
    ex08::AttentionGrads g;
    const auto forward = [&] {
      const Tensor<4> out =
          attn::scaled_dot_product_attention(as_heads(q), as_heads(kk), as_heads(v), causal, false)
              .out;
      return as_matrix(out);  // (T, hs)
    };
    const auto backward = [&](const Matrix& R) -> std::vector<GradTensor> {
      g = k.attention_backward(R, q, kk, v, causal);
      return {{"q", values_of(q), values_of(g.dq)},
              {"k", values_of(kk), values_of(g.dk)},
              {"v", values_of(v), values_of(g.dv)}};
    };
    add(causal ? "attention causal" : "attention S != T", check_op(rng, forward, backward));
  }
  {  // Multi-head attention
    Tensor<3> x = attn::randn<3>(rng, {kB, kT, kC}), dx;
    attn::MhaWeights w = attn::mha_init(rng, kC, 0.5f);
    attn::MhaWeights g = w;
    const auto forward = [&] { return attn::mha_forward(x, w, kH, true).out; };
    const auto backward = [&](const Tensor<3>& R) -> std::vector<GradTensor> {
      attn::MhaCache cache;
      attn::mha_forward(x, w, kH, true, cache);
      for (Matrix* m : {&g.w_q, &g.w_k, &g.w_v, &g.w_o}) m->fill(0.0f);
      attn::mha_backward(R, cache, w, kH, true, dx, g);
      return {{"x", values_of(x), values_of(dx)},
              {"w_q", values_of(w.w_q), values_of(g.w_q)},
              {"w_k", values_of(w.w_k), values_of(g.w_k)},
              {"w_v", values_of(w.w_v), values_of(g.w_v)},
              {"w_o", values_of(w.w_o), values_of(g.w_o)}};
    };
    add("mha causal *", check_op(rng, forward, backward, deep_options()));
  }
  // The block, pre- and post-norm: its input and its 12 parameter tensors.
  for (const attn::NormPlacement norm : {attn::NormPlacement::pre, attn::NormPlacement::post}) {
    BlockConfig config;
    config.n_heads = kH;
    config.norm = norm;
    BlockWeights w = check_block_weights(rng);
    Tensor<3> x = attn::randn<3>(rng, {1, 4, kC}), dx;
    BlockWeights g = attn::block_zeros_like(w);
    const auto forward = [&] { return attn::block_forward(x, w, config).out; };
    const auto backward = [&](const Tensor<3>& R) -> std::vector<GradTensor> {
      attn::BlockCache cache;
      attn::block_forward(x, w, config, cache);
      attn::block_backward(R, cache, w, config, dx, g);
      return {{"x", values_of(x), values_of(dx)},
              {"ln1_gamma", values_of(w.ln1_gamma), values_of(g.ln1_gamma)},
              {"ln1_beta", values_of(w.ln1_beta), values_of(g.ln1_beta)},
              {"w_q", values_of(w.attn.w_q), values_of(g.attn.w_q)},
              {"w_k", values_of(w.attn.w_k), values_of(g.attn.w_k)},
              {"w_v", values_of(w.attn.w_v), values_of(g.attn.w_v)},
              {"w_o", values_of(w.attn.w_o), values_of(g.attn.w_o)},
              {"ln2_gamma", values_of(w.ln2_gamma), values_of(g.ln2_gamma)},
              {"ln2_beta", values_of(w.ln2_beta), values_of(g.ln2_beta)},
              {"w1", values_of(w.ffn.w1), values_of(g.ffn.w1)},
              {"b1", values_of(w.ffn.b1), values_of(g.ffn.b1)},
              {"w2", values_of(w.ffn.w2), values_of(g.ffn.w2)},
              {"b2", values_of(w.ffn.b2), values_of(g.ffn.b2)}};
    };
    const std::string op =
        norm == attn::NormPlacement::pre ? "block pre-norm *" : "block post-norm *";
    checks.correct.push_back(worst_of(op, check_op(rng, forward, backward, deep_options())));
  }
  {  // The language model: every parameter, through the loss itself.
    attn::LmConfig lc;
    lc.vocab_size = 11;
    lc.block_size = 6;
    lc.n_embd = kC;
    lc.n_heads = kH;
    lc.n_layers = 2;
    attn::LmWeights w = attn::lm_init(rng, lc);
    // lm_init's 0.02 weights give nearly uniform logits and tiny gradients: redraw every tensor
    // (gammas near 1) so that every part of the model matters to the loss.
    for (const attn::NamedTensor& t : attn::lm_parameters(w)) {
      const bool gamma = t.name.find("gamma") != std::string::npos;
      for (float& v : t.values) v = gamma ? 1.0f + rng.normal(0.0f, 0.2f) : rng.normal(0.0f, 0.5f);
    }
    xt::xtensor<int, 2> tokens({kB, 5}), targets({kB, 5});
    for (int& t : tokens) t = static_cast<int>(rng.below(lc.vocab_size));
    for (int& t : targets) t = static_cast<int>(rng.below(lc.vocab_size));
    attn::LmWeights g = attn::lm_zeros_like(w);
    attn::LmCache cache;
    attn::lm_forward_backward(tokens, targets, w, lc, g, cache);
    const std::vector<attn::NamedTensor> params = attn::lm_parameters(w);
    const std::vector<attn::NamedTensor> grads = attn::lm_parameters(g);
    std::vector<GradTensor> tensors;
    for (std::size_t i = 0; i < params.size(); ++i)
      tensors.push_back({params[i].name, params[i].values, grads[i].values});
    // Two blocks deep the loss curves more than one op does: a smaller step keeps the central
    // difference's truncation error (h^2) below the rounding noise.
    attn::GradCheckOptions options;
    options.h = 1e-3;
    checks.correct.push_back(worst_of(
        "language model (h 1e-3)",
        attn::grad_check([&] { return attn::lm_loss(tokens, targets, w, lc); }, tensors, options)));
  }

  // Two wrong gradients on purpose, against the same loss, to show that the check catches them.
  const std::size_t T = kT, hs = 4;
  Matrix q = attn::randn(rng, T, hs), kk = attn::randn(rng, T, hs), v = attn::randn(rng, T, hs);
  const auto forward = [&](bool causal) {
    return attn::scaled_dot_product_attention(as_heads(q), as_heads(kk), as_heads(v), causal);
  };
  const attn::AttentionResult f = forward(true);
  Tensor<4> R = f.out;  // L = sum(out * R)
  for (float& x : R) x = rng.normal();
  const auto loss = [&] { return attn::weighted_sum(values_of(forward(true).out), values_of(R)); };
  // (a) dq and dk without the 1/sqrt(hs) of the scores.
  const attn::AttentionGrads g = attn::scaled_dot_product_attention_backward(
      R, as_heads(q), as_heads(kk), as_heads(v), f.weights, true);
  const Tensor<4> dq = g.dq * std::sqrt(static_cast<float>(hs));
  checks.wrong.push_back({"wrong: no 1/sqrt(hs)",
                          attn::grad_check(loss, {{"q", values_of(q), values_of(dq)}}).front()});
  // (b) the backward run without the mask: P recomputed over every key.
  const attn::AttentionGrads h = attn::scaled_dot_product_attention_backward(
      R, as_heads(q), as_heads(kk), as_heads(v), forward(false).weights, false);
  checks.wrong.push_back({"wrong: mask ignored",
                          attn::grad_check(loss, {{"k", values_of(kk), values_of(h.dk)}}).front()});
  return checks;
}

}  // namespace ch08
