// chapters/08_backprop/checks.cpp: the run around the lesson of chapter 08. The reference
// kernels behind the --mine switch, and the setup of the gradient check of every op (section 3):
// for each op, its inputs, its forward, and the tensors its backward computes gradients for.
#include "checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attn/model/block.hpp"
#include "attn/model/model.hpp"
#include "attn/ops/attention.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/linear.hpp"
#include "attn/ops/loss.hpp"
#include "attn/ops/mask.hpp"
#include "attn/ops/softmax.hpp"
#include "attn/train/gradcheck.hpp"
#include "attn/model/reference.hpp"
#include "attn/ops/embedding_backward.hpp"
#include "attn/train/central_difference.hpp"

namespace ch08 {

using attn::BlockConfig;
using attn::BlockWeights;
using attn::GradTensor64;
using attn::Tensor64;
using Named64 = attn::ref::Named<double>;  // a float64 tensor of the reference, by name

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
// 3. The gradient check of every op, in float64.
//
// Every tensor is drawn in float (the values are exactly representable in both precisions),
// then checked in double: the forward is the op's float64 twin, the gradient the twin's
// backward, or with --mine the learner's float backward (ex08::) on the same numbers. The block
// and the model have no float64 twin: their rows check the library's float backward (the one
// training runs) against the double forward composed below from the float64 twins of its ops.

template <std::size_t N>
Tensor64<N> to64(const Tensor<N>& t) {
  Tensor64<N> d = xt::cast<double>(t);
  return d;
}
template <std::size_t N>
Tensor<N> to32(const Tensor64<N>& t) {
  Tensor<N> f = xt::cast<float>(t);
  return f;
}

// One head (T, hs) as the library's (1, 1, T, hs), in double.
Tensor64<4> as_heads64(const Tensor64<2>& m) {
  Tensor64<4> t({1, 1, m.shape()[0], m.shape()[1]});
  std::copy(m.begin(), m.end(), t.begin());
  return t;
}
Tensor64<2> as_matrix64(const Tensor64<4>& t) {
  Tensor64<2> m({t.shape()[2], t.shape()[3]});
  std::copy(t.begin(), t.end(), m.begin());
  return m;
}

attn::MhaWeights64 to64(const attn::MhaWeights& w) {
  return {to64(w.w_q), to64(w.w_k), to64(w.w_v), to64(w.w_o)};
}
attn::FfnWeights64 to64(const attn::FfnWeights& w) {
  return {to64(w.w1), to64(w.b1), to64(w.w2), to64(w.b2)};
}

// One op's check: L = sum(forward() * R) for a fixed random R, so R is the upstream gradient
// dL/dout. backward(R) runs the backward under test and returns the tensors to nudge, each
// with the gradient it computed; check_gradients compares them with central differences of L.
template <class Forward, class Backward>
std::vector<attn::GradCheckResult> check_op(attn::Rng& rng, const Forward& forward,
                                            const Backward& backward,
                                            const attn::GradCheckOptions64& options = {}) {
  auto R = forward();  // the output's shape
  for (double& v : R) v = rng.normal();
  const std::vector<GradTensor64> tensors = backward(R);
  return attn::check_gradients(
      [&] { return attn::weighted_sum(values_of(forward()), values_of(R)); }, tensors, options);
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

// The largest difference between the float gradients and the float64 ones, relative to each
// tensor's largest float64 gradient: the float backward's rounding.
double compare_float(const std::vector<attn::NamedTensor>& f, const std::vector<Named64>& d) {
  if (f.size() != d.size()) throw std::logic_error("ch08: the float and float64 models differ");
  double worst = 0.0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    double scale = 0.0, diff = 0.0;
    for (std::size_t j = 0; j < d[i].values.size(); ++j) {
      scale = std::max(scale, std::abs(d[i].values[j]));
      diff = std::max(diff, std::abs(static_cast<double>(f[i].values[j]) - d[i].values[j]));
    }
    if (scale > 0.0) worst = std::max(worst, diff / scale);
  }
  return worst;
}

}  // namespace

Kernels reference_kernels() {
  return {&reference_softmax_backward,   &reference_masked_softmax_backward,
          &reference_linear_backward,    &reference_layer_norm_backward,
          &reference_attention_backward, &attn::central_differences,
          &attn::tied_embedding_backward};
}

Kernels learner_kernels() {
  return {&ex08::softmax_backward,       &ex08::softmax_backward,   &ex08::linear_backward,
          &ex08::layer_norm_backward,    &ex08::attention_backward, &ex08::central_differences,
          &ex08::tied_embedding_backward};
}

CentralDifferenceDemo central_difference_demo(const Kernels& k) {
  const std::vector<double> x = {0.3, -1.2, 0.8, 2.0, -0.5};
  const std::size_t n = x.size();
  const auto next = [n](std::size_t i) { return (i + 1) % n; };
  const auto f = [&](std::span<const double> v) {  // sum_i exp(v_i / 2) v_(i+1)^2
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) sum += std::exp(0.5 * v[i]) * v[next(i)] * v[next(i)];
    return sum;
  };
  CentralDifferenceDemo r{n, 1e-4, 0.0, 0.0};
  const std::vector<double> central = k.central_differences(f, x, r.h);
  if (central.size() != n) throw std::runtime_error("central_differences returned a wrong size");
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t before = (j + n - 1) % n;  // the term whose square reads x_j
    const double exact = 0.5 * std::exp(0.5 * x[j]) * x[next(j)] * x[next(j)] +
                         std::exp(0.5 * x[before]) * 2.0 * x[j];
    std::vector<double> up = x;
    up[j] += r.h;
    const double forward = (f(up) - f(x)) / r.h;
    r.central_err = std::max(r.central_err, std::abs(central[j] - exact));
    r.forward_err = std::max(r.forward_err, std::abs(forward - exact));
  }
  return r;
}

std::vector<CheckRow> tied_embedding_check(const Kernels& k, attn::Rng& rng) {
  const std::size_t V = 11, C = kC, B = 2, T = 3, N = B * T;
  xt::xtensor<int, 2> tokens({B, T});
  const int ids[] = {3, 1, 4, 1, 5, 9};  // id 1 read twice: its two rows of dx add up
  std::copy(std::begin(ids), std::end(ids), tokens.begin());
  const Matrix wte = attn::randn(rng, V, C, 0.5f), h = attn::randn(rng, N, C);
  const Tensor<3> rx = attn::randn<3>(rng, {B, T, C});  // dL/dx at the lookup
  const Matrix rl = attn::randn(rng, N, V);             // dL/dlogits
  const attn::TiedEmbeddingGrads g = k.tied_embedding_backward(rx, tokens, rl, h, wte);
  if (g.dwte.shape() != wte.shape() || g.dh.shape() != h.shape())
    throw std::runtime_error("tied_embedding_backward returned gradients of the wrong shapes");
  // L = sum(wte[tokens] * rx) + sum(h wte^T * rl), in double.
  Tensor64<2> wte64 = to64<2>(wte), h64 = to64<2>(h);
  const Tensor64<2> dwte64 = to64<2>(g.dwte), dh64 = to64<2>(g.dh);
  const auto loss = [&] {
    double sum = 0.0;
    for (std::size_t i = 0; i < N; ++i) {
      const auto id = static_cast<std::size_t>(ids[i]);
      for (std::size_t c = 0; c < C; ++c)
        sum += wte64(id, c) * static_cast<double>(rx.data()[i * C + c]);
      for (std::size_t v = 0; v < V; ++v) {
        double logit = 0.0;
        for (std::size_t c = 0; c < C; ++c) logit += h64(i, c) * wte64(v, c);
        sum += logit * static_cast<double>(rl(i, v));
      }
    }
    return sum;
  };
  const std::vector<attn::GradCheckResult> rs = attn::check_gradients(
      loss, {{"wte", values_of(wte64), values_of(dwte64)}, {"h", values_of(h64), values_of(dh64)}},
      float_options());
  std::vector<CheckRow> rows;
  for (const attn::GradCheckResult& r : rs) rows.push_back({"tied embedding", r});
  return rows;
}
GradientChecks gradient_checks(const Kernels& k, bool mine, attn::Rng& rng) {
  GradientChecks checks;
  // The learner's float gradients (--mine) are judged like the library's float ones.
  const attn::GradCheckOptions64 kernel_options =
      mine ? float_options() : attn::GradCheckOptions64{};
  const auto add = [&](const std::string& op, const std::vector<attn::GradCheckResult>& rs) {
    for (const attn::GradCheckResult& r : rs) checks.correct.push_back({op, r});
  };
  {  // softmax and masked softmax, rows of 7
    Tensor64<2> x = to64<2>(attn::randn(rng, 3, 7, 2.0f)), dx;
    const auto forward = [&] { return attn::softmax<2>(x); };
    const auto backward = [&](const Tensor64<2>& R) -> std::vector<GradTensor64> {
      dx = mine ? to64<2>(k.softmax_backward(to32(forward()), to32(R)))
                : attn::softmax_backward<2>(forward(), R);
      return {{"x", values_of(x), values_of(dx)}};
    };
    add("softmax", check_op(rng, forward, backward, kernel_options));
  }
  {
    Tensor64<2> s = to64<2>(attn::randn(rng, kT, kT, 2.0f)), ds;
    const attn::Mask mask = attn::causal_mask(kT);
    const auto forward = [&] { return attn::masked_softmax<2>(s, mask); };
    const auto backward = [&](const Tensor64<2>& R) -> std::vector<GradTensor64> {
      ds = mine ? to64<2>(k.masked_softmax_backward(to32(forward()), to32(R)))
                : attn::masked_softmax_backward<2>(forward(), R);
      return {{"scores", values_of(s), values_of(ds)}};
    };
    add("masked softmax", check_op(rng, forward, backward, kernel_options));
  }
  {  // cross-entropy: the loss itself is the scalar
    Tensor64<2> logits = to64<2>(attn::randn(rng, kB * kT, 7, 2.0f));
    std::vector<int> targets(kB * kT);
    for (int& t : targets) t = static_cast<int>(rng.below(7));
    const Tensor64<2> grad = attn::cross_entropy_grad(logits, targets);
    add("cross-entropy", attn::check_gradients([&] { return attn::cross_entropy(logits, targets); },
                                               {{"logits", values_of(logits), values_of(grad)}}));
  }
  {  // linear
    Tensor64<3> x = to64<3>(attn::randn<3>(rng, {kB, kT, kC}));
    Tensor64<2> w = to64<2>(attn::randn(rng, kC, 3, 0.5f));
    Tensor64<1> b = to64<1>(attn::randn<1>(rng, {3}));
    attn::LinearGrads64 g;
    const auto forward = [&] { return attn::linear(x, w, b); };
    const auto backward = [&](const Tensor64<3>& R) -> std::vector<GradTensor64> {
      if (mine) {
        const attn::LinearGrads f = k.linear_backward(to32(R), to32(x), to32(w));
        g = {to64(f.dx), to64(f.dw), to64(f.db)};
      } else {
        g = attn::linear_backward(R, x, w);
      }
      return {{"x", values_of(x), values_of(g.dx)},
              {"w", values_of(w), values_of(g.dw)},
              {"b", values_of(b), values_of(g.db)}};
    };
    add("linear", check_op(rng, forward, backward, kernel_options));
  }
  // activations, away from ReLU's kink at 0
  for (const attn::Activation a :
       {attn::Activation::relu, attn::Activation::gelu, attn::Activation::gelu_tanh}) {
    Tensor<3> xf = attn::randn<3>(rng, {1, kT, kC}, 2.0f);
    for (float& v : xf) v += v >= 0.0f ? 0.1f : -0.1f;
    Tensor64<3> x = to64(xf), dx;
    const auto forward = [&] { return attn::activate<3>(x, a); };
    const auto backward = [&](const Tensor64<3>& R) -> std::vector<GradTensor64> {
      dx = attn::activate_backward<3>(x, R, a);
      return {{"x", values_of(x), values_of(dx)}};
    };
    add(std::string(attn::activation_name(a)), check_op(rng, forward, backward));
  }
  {  // FFN (exact GELU)
    Tensor64<3> x = to64<3>(attn::randn<3>(rng, {kB, kT, kC})), dx;
    attn::FfnWeights wf = attn::ffn_init(rng, kC, kF, 0.3f);
    wf.b1 = attn::randn<1>(rng, {kF}, 0.1f);
    attn::FfnWeights64 w = to64(wf), g = w;
    const auto forward = [&] { return attn::ffn_forward(x, w); };
    const auto backward = [&](const Tensor64<3>& R) -> std::vector<GradTensor64> {
      attn::FfnCache64 cache;
      attn::ffn_forward(x, w, attn::Activation::gelu, cache);
      for (Tensor64<2>* m : {&g.w1, &g.w2}) m->fill(0.0);
      g.b1.fill(0.0);
      g.b2.fill(0.0);
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
    Tensor64<3> x = to64<3>(attn::randn<3>(rng, {kB, kT, kC}, 2.0f));
    Tensor64<1> gamma = to64<1>(attn::randn<1>(rng, {kC}, 0.3f) + 1.0f);
    Tensor64<1> beta = to64<1>(attn::randn<1>(rng, {kC}, 0.3f));
    attn::LayerNormGrads<3, double> g;
    const auto forward = [&] { return attn::layer_norm<3>(x, gamma, beta); };
    const auto backward = [&](const Tensor64<3>& R) -> std::vector<GradTensor64> {
      if (mine) {
        const attn::LayerNormGrads<3> f =
            k.layer_norm_backward(to32(R), to32(x), to32(gamma), 1e-5f);
        g = {to64(f.dx), to64(f.dgamma), to64(f.dbeta)};
      } else {
        g = attn::layer_norm_backward<3>(R, x, gamma);
      }
      return {{"x", values_of(x), values_of(g.dx)},
              {"gamma", values_of(gamma), values_of(g.dgamma)},
              {"beta", values_of(beta), values_of(g.dbeta)}};
    };
    add("layer_norm", check_op(rng, forward, backward, kernel_options));
  }
  // One attention head, causal and cross (S != T).
  for (const bool causal : {true, false}) {
    const std::size_t T = kT, S = causal ? kT : kT + 2, hs = 3;
    Tensor64<2> q = to64<2>(attn::randn(rng, T, hs)), kk = to64<2>(attn::randn(rng, S, hs)),
                v = to64<2>(attn::randn(rng, S, hs));
    Tensor64<2> dq, dk, dv;
    const auto forward = [&] {
      return as_matrix64(
          attn::scaled_dot_product_attention(as_heads64(q), as_heads64(kk), as_heads64(v), causal)
              .out);  // (T, hs)
    };
    const auto backward = [&](const Tensor64<2>& R) -> std::vector<GradTensor64> {
      if (mine) {
        const ex08::AttentionGrads f =
            k.attention_backward(to32(R), to32(q), to32(kk), to32(v), causal);
        dq = to64(f.dq);
        dk = to64(f.dk);
        dv = to64(f.dv);
      } else {
        const attn::AttentionResult64 f = attn::scaled_dot_product_attention(
            as_heads64(q), as_heads64(kk), as_heads64(v), causal);
        const attn::AttentionGrads64 g = attn::scaled_dot_product_attention_backward(
            as_heads64(R), as_heads64(q), as_heads64(kk), as_heads64(v), f.weights, causal);
        dq = as_matrix64(g.dq);
        dk = as_matrix64(g.dk);
        dv = as_matrix64(g.dv);
      }
      return {{"q", values_of(q), values_of(dq)},
              {"k", values_of(kk), values_of(dk)},
              {"v", values_of(v), values_of(dv)}};
    };
    add(causal ? "attention causal" : "attention S != T",
        check_op(rng, forward, backward, kernel_options));
  }
  {  // Multi-head attention
    Tensor64<3> x = to64<3>(attn::randn<3>(rng, {kB, kT, kC})), dx;
    attn::MhaWeights64 w = to64(attn::mha_init(rng, kC, 0.5f)), g = w;
    const auto forward = [&] { return attn::mha_forward(x, w, kH, true).out; };
    const auto backward = [&](const Tensor64<3>& R) -> std::vector<GradTensor64> {
      attn::MhaCache64 cache;
      attn::mha_forward(x, w, kH, true, cache);
      for (Tensor64<2>* m : {&g.w_q, &g.w_k, &g.w_v, &g.w_o}) m->fill(0.0);
      attn::mha_backward(R, cache, w, kH, true, dx, g);
      return {{"x", values_of(x), values_of(dx)},
              {"w_q", values_of(w.w_q), values_of(g.w_q)},
              {"w_k", values_of(w.w_k), values_of(g.w_k)},
              {"w_v", values_of(w.w_v), values_of(g.w_v)},
              {"w_o", values_of(w.w_o), values_of(g.w_o)}};
    };
    add("mha causal", check_op(rng, forward, backward));
  }
  // The block, pre- and post-norm: its input and its 12 parameter tensors, in float64
  // (attn/model/reference.hpp: the reference block, built from the reference ops, in double).
  for (const attn::NormPlacement norm : {attn::NormPlacement::pre, attn::NormPlacement::post}) {
    BlockConfig config{.spec = attn::block_spec(kC, kH)};
    config.norm = norm;
    attn::ref::BlockWeights<double> w = attn::ref::cast<double>(check_block_weights(rng));
    Tensor64<3> x = to64<3>(attn::randn<3>(rng, {1, 4, kC})), dx;
    attn::ref::BlockWeights<double> g = attn::ref::zeros_like(w);
    const auto forward = [&] { return attn::ref::block_forward(x, w, config); };
    const auto backward = [&](const Tensor64<3>& R) -> std::vector<GradTensor64> {
      g = attn::ref::zeros_like(w);
      attn::ref::block_backward(R, x, w, config, dx, g);
      std::vector<GradTensor64> t = {{"x", values_of(x), values_of(dx)}};
      const std::vector<Named64> ws = attn::ref::parameters(w);
      const std::vector<Named64> gs = attn::ref::parameters(g);
      for (std::size_t i = 0; i < ws.size(); ++i)
        t.push_back({ws[i].name, ws[i].values, gs[i].values});
      return t;
    };
    const std::string op = norm == attn::NormPlacement::pre ? "block pre-norm" : "block post-norm";
    checks.correct.push_back(worst_of(op, check_op(rng, forward, backward)));
  }
  {  // The language model: every parameter, through the loss itself.
    attn::ModelChoices choices;
    choices.vocab_size = 11;
    choices.block_size = 6;
    choices.n_embd = kC;
    choices.n_heads = kH;
    choices.n_layers = 2;
    const attn::ModelSpec lc = attn::resolve_spec(choices);
    attn::LmWeights wf = attn::lm_init(rng, lc);
    // lm_init's 0.02 weights give nearly uniform logits and tiny gradients: redraw every tensor
    // (gammas near 1) so that every part of the model matters to the loss.
    for (const attn::NamedTensor& t : attn::lm_parameters(wf)) {
      const bool gamma = t.name.find("gamma") != std::string::npos;
      for (float& v : t.values) v = gamma ? 1.0f + rng.normal(0.0f, 0.2f) : rng.normal(0.0f, 0.5f);
    }
    xt::xtensor<int, 2> tokens({kB, 5}), targets({kB, 5});
    for (int& t : tokens) t = static_cast<int>(rng.below(lc.vocab_size));
    for (int& t : targets) t = static_cast<int>(rng.below(lc.vocab_size));
    attn::ref::LmWeights<double> w = attn::ref::cast<double>(wf), g = attn::ref::zeros_like(w);
    attn::ref::lm_forward_backward(tokens, targets, w, lc, g);
    const std::vector<Named64> ws = attn::ref::parameters(w), gs = attn::ref::parameters(g);
    std::vector<GradTensor64> tensors;
    for (std::size_t i = 0; i < ws.size(); ++i)
      tensors.push_back({ws[i].name, ws[i].values, gs[i].values});
    checks.correct.push_back(
        worst_of("language model",
                 attn::check_gradients([&] { return attn::ref::lm_loss(tokens, targets, w, lc); },
                                       tensors)));
    // The library's float backward, the one training runs, against the float64 one.
    attn::LmWeights gf = attn::lm_zeros_like(wf);
    attn::LmCache cache;
    attn::lm_forward_backward(tokens, targets, wf, lc, gf, cache);
    checks.float_model = compare_float(attn::lm_parameters(gf), gs);

    // Why float64: the same check through the float forward (attn::grad_check), with the float
    // gradients as they are and scaled by 1.001.
    const auto loss32 = [&] { return attn::lm_loss(tokens, targets, wf, lc); };
    checks.float_rounding = std::abs(loss32() - attn::ref::lm_loss(tokens, targets, w, lc));
    attn::GradCheckOptions fo;
    fo.h = 1e-3;  // the step the float check of this model needs (h^2 truncation, two blocks)
    checks.float_h = fo.h;
    const std::vector<attn::NamedTensor> params = attn::lm_parameters(wf);
    const std::vector<attn::NamedTensor> grads = attn::lm_parameters(gf);
    std::vector<std::vector<float>> scaled;
    std::vector<attn::GradTensor> right, wrong;
    for (std::size_t i = 0; i < params.size(); ++i) {
      scaled.emplace_back(grads[i].values.begin(), grads[i].values.end());
      for (float& v : scaled.back()) v *= 1.001f;
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      right.push_back({params[i].name, params[i].values, grads[i].values});
      wrong.push_back({params[i].name, params[i].values, scaled[i]});
    }
    checks.float_right = worst_of("", attn::grad_check(loss32, right, fo)).r;
    checks.float_wrong = worst_of("", attn::grad_check(loss32, wrong, fo)).r;
    // Divided by 2h, the rounding is more than 0.1% of every gradient element below
    // 1000 * rounding / 2h.
    const double below = 1e3 * checks.float_rounding / (2.0 * fo.h);
    for (const Named64& t : gs)
      for (const double v : t.values) {
        ++checks.grad_count;
        checks.grad_drowned += std::abs(v) < below ? 1 : 0;
      }
  }

  // Wrong gradients on purpose, against the same loss, to show that the check catches them:
  // two classic bugs, and a correct gradient scaled by 1.001 (0.1% off).
  const std::size_t T = kT, hs = 4;
  Tensor64<2> q = to64<2>(attn::randn(rng, T, hs)), kk = to64<2>(attn::randn(rng, T, hs)),
              v = to64<2>(attn::randn(rng, T, hs));
  const auto forward = [&](bool causal) {
    return attn::scaled_dot_product_attention(as_heads64(q), as_heads64(kk), as_heads64(v), causal);
  };
  const attn::AttentionResult64 f = forward(true);
  Tensor64<4> R = f.out;  // L = sum(out * R)
  for (double& x : R) x = rng.normal();
  const auto loss = [&] { return attn::weighted_sum(values_of(forward(true).out), values_of(R)); };
  const attn::AttentionGrads64 g = attn::scaled_dot_product_attention_backward(
      R, as_heads64(q), as_heads64(kk), as_heads64(v), f.weights, true);
  // (a) dq and dk without the 1/sqrt(hs) of the scores.
  const Tensor64<4> dq = g.dq * std::sqrt(static_cast<double>(hs));
  checks.wrong.push_back(
      {"wrong: no 1/sqrt(hs)",
       attn::check_gradients(loss, {{"q", values_of(q), values_of(dq)}}).front()});
  // (b) the backward run without the mask: P recomputed over every key.
  const attn::AttentionGrads64 h = attn::scaled_dot_product_attention_backward(
      R, as_heads64(q), as_heads64(kk), as_heads64(v), forward(false).weights, false);
  checks.wrong.push_back(
      {"wrong: mask ignored",
       attn::check_gradients(loss, {{"k", values_of(kk), values_of(h.dk)}}).front()});
  // (c) the correct dv, 0.1% too large: the smallest error the check must see.
  const Tensor64<4> dv = g.dv * 1.001;
  checks.wrong.push_back(
      {"wrong: dv x 1.001",
       attn::check_gradients(loss, {{"v", values_of(v), values_of(dv)}}).front()});
  return checks;
}

}  // namespace ch08
