// chapters/08_backprop/main.cpp: chapter 08, backpropagation by hand.
// The chain rule on a scalar expression, then the backward of every op of the course with its
// shapes (softmax's Jacobian-vector form, LayerNorm's three terms, attention's five lines, the
// tied embedding's two gradients), the gradient check of every op, the depth experiment (why
// stacked blocks need residuals and LayerNorm), and the memory a backward needs.
// This file is the lesson: one function per section computes what it teaches and returns a
// struct (show.hpp); show.cpp prints it. The backward passes themselves live beside their
// forwards in common/src/ops/ and common/src/model/, the checker in common/src/train/gradcheck.cpp.
// In the order of the page:
//   1. chain_rule              a scalar expression, forward and backward one op per line
//   2. softmax_jacobian        J^T dy against the O(S) backward; the causal mask's zeros
//      cross_entropy_grads, linear_grads, activation_derivatives
//      layer_norm_terms        LayerNorm's dx as its three terms, written out
//      attention_grads         the five lines, one head against the batch
//      model_gradients         block_backward's BlockWeights of gradients; the tied wte's parts
//   3. gradient_checks         every backward against central differences (checks.cpp: the
//                              per-op setup, and the --mine switch between attn:: and ex08::)
//   4. depth_experiment        the gradient through stacks of 1 to --max-depth blocks
//   5. backward_memory         what a block's forward keeps for its backward
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/term/narrate.hpp"
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
#include "checks.hpp"
#include "exercises.hpp"
#include "show.hpp"

namespace {

using namespace ch08;
using attn::BlockConfig;
using attn::BlockWeights;

// Limits of the depth experiment: at all four maxima it takes about three seconds.
constexpr std::size_t kMaxDepth = 64;
constexpr std::size_t kMaxBlockSize = 64;
constexpr std::size_t kMaxEmbd = 128;

double norm_of(std::span<const float> v) {
  double s = 0.0;
  for (const float x : v) s += static_cast<double>(x) * static_cast<double>(x);
  return std::sqrt(s);
}

// ---------------------------------------------------------------------------------------------
// 1. The chain rule on L = (a * b + c) * a.
ChainRule chain_rule() {
  ChainRule r;
  const double a = r.a, b = r.b, c = r.c;
  // Forward, one operation per line, keeping what the backward needs.
  r.u = a * b;
  r.v = r.u + c;
  r.L = r.v * a;
  // Backward, from the end: each gradient is the upstream one times a local derivative.
  const double dL = 1.0;
  r.dv = dL * a;                     // L = v * a: dL/dv = a
  r.da_from_L = dL * r.v;            //            dL/da = v   (a's first use)
  r.du = r.dv * 1.0;                 // v = u + c: dv/du = 1
  r.dc = r.dv * 1.0;                 //            dv/dc = 1
  r.da_from_u = r.du * b;            // u = a * b: du/da = b   (a's second use)
  r.db = r.du * a;                   //            du/db = a
  r.da = r.da_from_L + r.da_from_u;  // a used twice collects both
  // Checked by central differences (L(p + h) - L(p - h)) / 2h.
  const auto loss = [](double a_, double b_, double c_) { return (a_ * b_ + c_) * a_; };
  const double h = r.h;
  r.numeric_da = (loss(a + h, b, c) - loss(a - h, b, c)) / (2 * h);
  r.numeric_db = (loss(a, b + h, c) - loss(a, b - h, c)) / (2 * h);
  r.numeric_dc = (loss(a, b, c + h) - loss(a, b, c - h)) / (2 * h);
  return r;
}

// ---------------------------------------------------------------------------------------------
// 2. The backward of every op, with its shapes.

// softmax: dx = y * (dy - sum(dy * y)), against J^T dy with the full Jacobian.
SoftmaxBackward softmax_jacobian(const Kernels& k, attn::Rng& rng) {
  SoftmaxBackward r;
  const std::size_t S = 4;
  const Matrix x = attn::randn(rng, 1, S);
  r.y = attn::softmax<2>(x);
  r.dy = attn::randn(rng, 1, S);
  // The full Jacobian J[i][j] = dy_i/dx_j = y_i ([i == j] - y_j), and dx = J^T dy.
  r.jt_dy = xt::zeros<float>({std::size_t{1}, S});
  for (std::size_t j = 0; j < S; ++j) {
    double s = 0.0;
    for (std::size_t i = 0; i < S; ++i) {
      const double jij =
          static_cast<double>(r.y(0, i)) * ((i == j ? 1.0 : 0.0) - static_cast<double>(r.y(0, j)));
      s += jij * static_cast<double>(r.dy(0, i));
    }
    r.jt_dy(0, j) = static_cast<float>(s);
  }
  r.dx = k.softmax_backward(r.y, r.dy);
  // Masked (causal) softmax: the masked entries have y = 0, so their gradient is 0.
  const Matrix scores = attn::randn(rng, kT, kT);
  const Matrix p = attn::masked_softmax<2>(scores, attn::causal_mask(kT));
  const Matrix dp = attn::randn(rng, kT, kT);
  r.causal_dx = k.masked_softmax_backward(p, dp);
  return r;
}

// cross-entropy: dlogits = (softmax(logits) - onehot(target)) / N, checked in double.
CrossEntropyBackward cross_entropy_grads(attn::Rng& rng) {
  CrossEntropyBackward r;
  const std::size_t N = kB * kT, V = 6;
  r.logits = attn::randn(rng, N, V);
  std::vector<int> targets(N);
  for (int& t : targets) t = static_cast<int>(rng.below(V));
  r.lg = attn::cross_entropy_with_grad(r.logits, targets);
  for (std::size_t n = 0; n < N; ++n) {
    double sum = 0.0, top = -1e300, z = 0.0;
    for (std::size_t c = 0; c < V; ++c) {
      sum += static_cast<double>(r.lg.grad(n, c));
      top = std::max(top, static_cast<double>(r.logits(n, c)));
    }
    for (std::size_t c = 0; c < V; ++c) z += std::exp(static_cast<double>(r.logits(n, c)) - top);
    for (std::size_t c = 0; c < V; ++c) {
      const double p = std::exp(static_cast<double>(r.logits(n, c)) - top) / z;
      const double onehot = static_cast<int>(c) == targets[n] ? 1.0 : 0.0;
      r.worst_entry = std::max(r.worst_entry, std::abs(static_cast<double>(r.lg.grad(n, c)) -
                                                       (p - onehot) / static_cast<double>(N)));
    }
    r.worst_row_sum = std::max(r.worst_row_sum, std::abs(sum));
  }
  return r;
}

// linear: dx = dy @ W^T, dW = x^T @ dy, db = sum of dy.
LinearBackward linear_grads(const Kernels& k, attn::Rng& rng) {
  LinearBackward r;
  r.x = attn::randn<3>(rng, {kB, kT, kC});
  r.w = attn::randn(rng, kC, kF, 0.3f);
  r.dy = attn::randn<3>(rng, {kB, kT, kF});
  r.g = k.linear_backward(r.dy, r.x, r.w);
  return r;
}

// activations: dx = dy * act'(x); with dy = 1 the backward returns act'(x) itself.
ActivationBackward activation_derivatives() {
  ActivationBackward r;
  r.x = {-2.0f, -1.0f, -0.5f, 0.5f, 1.0f, 2.0f};
  Tensor<1> x = xt::zeros<float>(std::array<std::size_t, 1>{r.x.size()});
  std::copy(r.x.begin(), r.x.end(), x.begin());
  const Tensor<1> ones = xt::ones<float>(std::array<std::size_t, 1>{r.x.size()});
  for (const attn::Activation a :
       {attn::Activation::relu, attn::Activation::gelu, attn::Activation::gelu_tanh}) {
    r.activations.push_back(a);
    r.derivative.push_back(attn::activate_backward<1>(x, ones, a));
  }
  return r;
}

// LayerNorm's dx as its three terms, one token written out in double, against the kernel:
//   dx = rstd * g  -  rstd * mean(g)  -  rstd * xhat * mean(g xhat),   g = gamma * dy
LayerNormTerms layer_norm_terms(const Kernels& k, attn::Rng& rng) {
  LayerNormTerms r;
  const std::size_t C = 5;
  const Tensor<3> x = attn::randn<3>(rng, {1, 1, C}, 2.0f) + 1.0f;  // one token
  const Tensor<3> dy = attn::randn<3>(rng, {1, 1, C});
  const Vector gamma = attn::randn<1>(rng, {C}, 0.2f) + 1.0f;
  // 1. The forward's statistics.
  double mean = 0.0, var = 0.0;
  for (const float v : x) mean += static_cast<double>(v);
  mean /= static_cast<double>(C);
  for (const float v : x) var += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean);
  var /= static_cast<double>(C);
  r.rstd = 1.0 / std::sqrt(var + r.eps);
  // 2. xhat, g = gamma * dy, and the two means the terms need.
  std::vector<float> g(C);
  r.xhat.resize(C);
  double mean_g = 0.0, mean_gx = 0.0;
  for (std::size_t c = 0; c < C; ++c) {
    r.xhat[c] = static_cast<float>((static_cast<double>(x(0, 0, c)) - mean) * r.rstd);
    g[c] = gamma(c) * dy(0, 0, c);
    mean_g += static_cast<double>(g[c]) / static_cast<double>(C);
    mean_gx += static_cast<double>(g[c]) * static_cast<double>(r.xhat[c]) / static_cast<double>(C);
  }
  r.mean_gx = mean_gx;
  // 3. The three terms: through xhat directly, through the mean, through the variance.
  for (std::size_t c = 0; c < C; ++c) {
    r.direct.push_back(static_cast<float>(r.rstd * static_cast<double>(g[c])));
    r.through_mean.push_back(static_cast<float>(-r.rstd * mean_g));
    r.through_var.push_back(static_cast<float>(-r.rstd * static_cast<double>(r.xhat[c]) * mean_gx));
    r.sum.push_back(r.direct[c] + r.through_mean[c] + r.through_var[c]);
  }
  r.lg = k.layer_norm_backward(dy, x, gamma, static_cast<float>(r.eps));
  return r;
}

// attention, per (batch, head): dV = P^T dO, dP = dO V^T, dS = softmax backward, dQ, dK.
AttentionBackward attention_grads(const Kernels& k, attn::Rng& rng) {
  AttentionBackward r;
  const std::size_t hs = kC / kH;
  const Tensor<4> q = attn::randn<4>(rng, {kB, kH, kT, hs});
  const Tensor<4> kk = attn::randn<4>(rng, {kB, kH, kT, hs});
  const Tensor<4> v = attn::randn<4>(rng, {kB, kH, kT, hs});
  r.f = attn::scaled_dot_product_attention(q, kk, v, true);
  const Tensor<4> dout = attn::randn<4>(rng, r.f.out.shape());
  r.g = attn::scaled_dot_product_attention_backward(dout, q, kk, v, r.f.weights, true);
  // The learner's single head (or the reference one) against head (0, 0) of the batched kernel.
  const auto head = [](const Tensor<4>& t) {
    return Matrix(xt::view(t, 0, 0, xt::all(), xt::all()));
  };
  r.one = k.attention_backward(head(dout), head(q), head(kk), head(v), true);
  r.one_vs_batch = std::max({attn::max_abs_diff(r.one.dq, head(r.g.dq)),
                             attn::max_abs_diff(r.one.dk, head(r.g.dk)),
                             attn::max_abs_diff(r.one.dv, head(r.g.dv))});
  return r;
}

// The block's backward into a BlockWeights of gradients, and the tied embedding's two parts.
ModelGradients model_gradients(attn::Rng& rng) {
  ModelGradients r;
  const BlockConfig config{.spec = attn::block_spec(kC, kH)};
  const BlockWeights w = attn::block_init(rng, kC, kF);
  const Tensor<3> x = attn::randn<3>(rng, {kB, kT, kC});
  attn::BlockCache cache;
  const Tensor<3> out = attn::block_forward(x, w, config, cache);
  r.dout = attn::randn<3>(rng, out.shape());
  r.grads = attn::block_zeros_like(w);
  attn::block_backward(r.dout, cache, w, config, r.dx, r.grads);

  // The tied embedding: wte is read twice, so its gradient has two parts.
  attn::ModelChoices lc_choices;
  lc_choices.vocab_size = 11;
  lc_choices.block_size = 8;
  lc_choices.n_embd = kC;
  lc_choices.n_heads = kH;
  lc_choices.n_layers = 2;
  const attn::ModelSpec lc = attn::resolve_spec(lc_choices);
  const attn::LmWeights lw = attn::lm_init(rng, lc);
  xt::xtensor<int, 2> tokens({1, 6}), targets({1, 6});
  const int ids[] = {3, 1, 4, 1, 5, 9, 2};  // 7 ids of 11: 0, 6, 7, 8 and 10 never appear
  for (std::size_t t = 0; t < 6; ++t) {
    tokens(0, t) = ids[t];
    targets(0, t) = ids[t + 1];
  }
  attn::LmWeights lg = attn::lm_zeros_like(lw);
  attn::LmCache lcache;
  r.loss = attn::lm_forward_backward(tokens, targets, lw, lc, lg, lcache);
  // The output projection's part: logits = h @ wte^T, so dwte_out = dlogits^T @ h (V, C).
  // After the backward, lcache.logits holds dloss/dlogits (B*T, V) and lcache.h is h (B, T, C).
  r.V = lc.vocab_size, r.C = lc.n_embd, r.N = 6;
  const std::size_t V = r.V, C = r.C, N = r.N;
  Matrix out_part = xt::zeros<float>({V, C});
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t id = 0; id < V; ++id)
      for (std::size_t c = 0; c < C; ++c)
        out_part(id, c) += lcache.logits(n, id) * lcache.h.data()[n * C + c];
  // The embedding's part: what is left, dx scattered to the rows that were read.
  const Matrix embed_part = lg.wte - out_part;
  for (std::size_t id = 0; id < V; ++id) {
    r.rows_with_embed += norm_of(std::span<const float>(&embed_part(id, 0), C)) > 1e-6 ? 1 : 0;
    r.rows_with_out += norm_of(std::span<const float>(&out_part(id, 0), C)) > 1e-6 ? 1 : 0;
  }
  std::vector<int> read(ids, ids + N);
  std::sort(read.begin(), read.end());
  r.distinct_inputs =
      static_cast<std::size_t>(std::unique(read.begin(), read.end()) - read.begin());
  r.out_part_norm = norm_of(values_of(out_part));
  r.embed_part_norm = norm_of(values_of(embed_part));
  r.dwte_norm = norm_of(values_of(lg.wte));
  return r;
}

// ---------------------------------------------------------------------------------------------
// 3. The gradient check of every op: gradient_checks, in checks.cpp, runs each backward above
// (and the FFN's, MHA's, the block's and the model's) in float64 against central differences of
// L = sum(out * R) for a random R, then three wrong gradients on purpose (one only 0.1% off),
// and the model's check through a float forward, to show why float64.

// ---------------------------------------------------------------------------------------------
// 4. The depth experiment: how much gradient reaches the bottom of a stack of blocks?
DepthResult depth_experiment(const DepthSetup& s, attn::Rng& rng) {
  DepthResult result;
  for (std::size_t d = 1; d <= s.max_depth; d *= 2) result.depths.push_back(d);
  if (result.depths.back() != s.max_depth) result.depths.push_back(s.max_depth);
  const std::size_t F = 4 * s.C;
  const float std = s.weight_std();
  std::vector<BlockWeights> blocks;
  for (std::size_t l = 0; l < s.max_depth; ++l) {
    BlockWeights w;
    w.attn = attn::mha_init(rng, s.C, std);
    w.ffn = attn::ffn_init(rng, s.C, F, std);
    // w2 has F = 4C inputs: by default its std is 1/sqrt(F), the scale at which h w2 keeps the
    // size of h (a flat --weight-std applies to every matrix, w2 included).
    w.ffn.w2 *= s.w2_std() / std;
    w.ln1_gamma = xt::ones<float>({s.C});
    w.ln1_beta = xt::zeros<float>({s.C});
    w.ln2_gamma = w.ln1_gamma;
    w.ln2_beta = w.ln1_beta;
    blocks.push_back(std::move(w));
  }
  const Tensor<3> x = attn::randn<3>(rng, {1, s.T, s.C});  // (1, T, C)
  Tensor<3> dtop = attn::randn<3>(rng, {1, s.T, s.C});     // the upstream gradient, norm 1
  dtop /= static_cast<float>(norm_of(values_of(dtop)));
  for (const Variant& v : kVariants) {
    BlockConfig config{
        .spec = attn::with_choices(attn::block_spec(s.C, s.H), [&](attn::ModelChoices& m) {
          m.ablations.residual = v.residual;
          m.ablations.layer_norm = v.layer_norm;
        })};
    config.keep_weights = false;
    std::vector<double> norms, tops;
    for (const std::size_t depth : result.depths) {
      // Forward through `depth` blocks, each keeping its cache.
      std::vector<attn::BlockCache> caches(depth);
      Tensor<3> h = x;
      for (std::size_t l = 0; l < depth; ++l)
        h = attn::block_forward(h, blocks[l], config, caches[l]);
      double sq = 0.0;
      for (const float f : h) sq += static_cast<double>(f) * static_cast<double>(f);
      tops.push_back(std::sqrt(sq / static_cast<double>(h.size())));
      // Backward from the top: each block's dx is the next one down's dout.
      Tensor<3> g = dtop;
      Tensor<3> dx;
      for (std::size_t l = depth; l-- > 0;) {
        BlockWeights grads = attn::block_zeros_like(blocks[l]);
        attn::block_backward(g, caches[l], blocks[l], config, dx, grads);
        g = dx;
      }
      norms.push_back(norm_of(values_of(g)));
      if (depth == 1 && &v == &kVariants[0]) {
        // The step: small enough for LayerNorm's sharp curvature at C = 2 (a token whose two
        // features nearly agree), large enough for the float forward's rounding (measured on
        // seeds 1 to 20 over the flags: at most 0.25% off, against the claim's 1%).
        const double n = norms.back(), step_size = 3e-4;
        const auto loss_at = [&](double step) {
          Tensor<3> moved = x;
          for (std::size_t i = 0; i < moved.size(); ++i)
            moved.data()[i] += static_cast<float>(step * static_cast<double>(g.data()[i]) / n);
          return attn::weighted_sum(values_of(attn::block_forward(moved, blocks[0], config).out),
                                    values_of(dtop));
        };
        result.one_block_numeric = (loss_at(step_size) - loss_at(-step_size)) / (2.0 * step_size);
      }
    }
    result.norm.push_back(std::move(norms));
    result.top.push_back(std::move(tops));
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// 5. What the backward must keep: one block's cache, counted, and whole stacks by formula.
BackwardMemory backward_memory(attn::Rng& rng) {
  BackwardMemory r;
  r.model = {32, 64, 64, 4, 4, "chapter 09's CPU model"};
  const Shapes& m = r.model;
  r.F = 4 * m.C;
  const BlockConfig config{.spec = attn::block_spec(m.C, m.H)};
  const BlockWeights w = attn::block_init(rng, m.C, r.F);
  const Tensor<3> x = attn::randn<3>(rng, {m.B, m.T, m.C});
  attn::BlockCache cache;
  const Tensor<3> out = attn::block_forward(x, w, config, cache);
  r.out_shape.assign(out.shape().begin(), out.shape().end());
  const auto keep = [&](const std::string& name, const auto& t) {
    if (t.size() == 0) return;  // a field this configuration's backward does not read
    r.kept.push_back(
        {name, std::vector<std::size_t>(t.shape().begin(), t.shape().end()), t.size()});
  };
  keep("x", cache.x);
  keep("ln1.mean", cache.ln1.mean);
  keep("ln1.rstd", cache.ln1.rstd);
  keep("ln1_in", cache.ln1_in);
  keep("ln1_out", cache.ln1_out);
  keep("attn.x", cache.attn.x);
  keep("attn.qkv", cache.attn.qkv);
  keep("attn.weights", cache.attn.weights);
  keep("attn.heads", cache.attn.heads);
  keep("residual1", cache.residual1);
  keep("ln2.mean", cache.ln2.mean);
  keep("ln2.rstd", cache.ln2.rstd);
  keep("ln2_in", cache.ln2_in);
  keep("ln2_out", cache.ln2_out);
  keep("ffn.x", cache.ffn.x);
  keep("ffn.pre", cache.ffn.pre);
  keep("ffn.act", cache.ffn.act);
  r.held = attn::activation_floats(cache);
  r.formula = attn::block_activation_floats(m.B, m.T, m.C, r.F, m.H, config);
  // The attention weights' share, at T and at 2T.
  const auto share = [&](std::size_t T) {
    return static_cast<double>(m.B * m.H * T * T) /
           static_cast<double>(attn::block_activation_floats(m.B, T, m.C, r.F, m.H, config));
  };
  r.weights_share = share(m.T);
  r.weights_share_2T = share(2 * m.T);
  for (const Shapes& z : {Shapes{16, 32, 64, 4, 2, "chapter 09's default run"}, m,
                          Shapes{64, 256, 384, 6, 6, "the lecture's full model"}}) {
    const BlockConfig c{.spec = attn::block_spec(z.C, z.H)};
    const std::size_t per = attn::block_activation_floats(z.B, z.T, z.C, 4 * z.C, z.H, c);
    // A block's weights: 4 C^2 (attention) + 2 C F + F + C (FFN) + 4 C (the two LayerNorms).
    const std::size_t weights = 4 * z.C * z.C + 8 * z.C * z.C + 4 * z.C + z.C + 4 * z.C;
    r.stacks.push_back({z, per, weights});
  }
  return r;
}

}  // namespace

// Whose functions run, with --mine: the exercises the sections printed call (0: all of them).
std::string mine_text(std::size_t only) {
  if (only == 1 || only == 4 || only == 5) return "yours (--mine), though this section calls none";
  return only == 2 ? "yours (ex08.1 to ex08.4, --mine)" : "yours (ex08.1 to ex08.6, --mine)";
}

int main(int argc, char** argv) {
  attn::Cli cli("08_backprop",
                "Chapter 08: backpropagation by hand. The chain rule, the backward of every op "
                "with its shapes, the gradient check of every op, the gradient through stacks of "
                "blocks with and without residuals and LayerNorm, and the memory a backward "
                "needs.");
  DepthSetup depth;
  std::size_t only = 0;
  cli.add_size("--section", only, "print only this section, 1 to 5 (default 0: all of them)", 0, 5);
  cli.add_size("--max-depth", depth.max_depth, "deepest stack of the depth experiment, in blocks",
               1, kMaxDepth);
  cli.add_size("--block-size", depth.T, "sequence length T of the depth experiment", 1,
               kMaxBlockSize);
  cli.add_size("--n-embd", depth.C, "model width C of the depth experiment", 1, kMaxEmbd);
  cli.add_size("--n-heads", depth.H, "heads H of the depth experiment, must divide C", 1, kMaxEmbd);
  cli.add_float("--weight-std", depth.std,
                "std of all the depth experiment's weights (default 1/sqrt(fan-in): 1/sqrt(C), and "
                "1/sqrt(4C) for w2; at most 1)",
                0.0f);
  cli.add_alias("time-steps", "block-size");  // the names of earlier versions
  cli.add_alias("channels", "n-embd");
  cli.add_alias("heads", "n-heads");

  return cli.run(argc, argv, [&](const attn::CommonOptions& options) {
    if (depth.C % depth.H != 0) {
      throw attn::UsageError(
          fmt::format("--n-heads must divide --n-embd, got {} heads for {} "
                      "channels",
                      depth.H, depth.C));
    }
    if (depth.std > 1.0f) {
      throw attn::UsageError(
          fmt::format("--weight-std must be at most 1, got {}", attn::num(depth.std)));
    }
    const Kernels k = options.mine ? learner_kernels() : reference_kernels();
    // Random tensors only: no text is needed, but a bad --data is still an error.
    const std::string corpus_origin = options.data ? attn::load_corpus(options.data).origin : "";
    fmt::print("Chapter 08: backpropagation by hand\n");
    if (!corpus_origin.empty()) {
      fmt::print("{}",
                 "corpus: " + corpus_origin + ", read but not used (the tensors are random)\n");
    }
    fmt::print("seed {}, functions: {}\n", options.seed,
               options.mine ? mine_text(only) : "the reference (attn::)");
    // Each section draws from its own stream of the seed, so --section N prints the same
    // numbers as the full run.
    const auto stream = [&](std::uint64_t n) { return attn::Rng(options.seed, 100 + n); };
    const auto wanted = [&](std::size_t n) { return only == 0 || only == n; };
    if (wanted(1)) show_chain_rule(chain_rule());
    if (wanted(2)) {
      attn::Rng rng = stream(2);
      show_op_sizes();
      show_softmax(softmax_jacobian(k, rng));
      show_cross_entropy(cross_entropy_grads(rng));
      show_linear(linear_grads(k, rng));
      show_activations(activation_derivatives());
      show_layer_norm(layer_norm_terms(k, rng));
      show_attention(attention_grads(k, rng));
      show_model_gradients(model_gradients(rng));
    }
    if (wanted(3)) {
      attn::Rng rng = stream(3), tied_rng = stream(7);
      const CentralDifferenceDemo cd = central_difference_demo(k);
      GradientChecks checks = gradient_checks(k, options.mine, rng);
      for (CheckRow& row : tied_embedding_check(k, tied_rng)) checks.correct.push_back(row);
      show_gradient_checks(checks, cd, options.mine);
    }
    if (wanted(4) || options.svg_dir) {
      attn::Rng rng = stream(4);
      const DepthResult r = depth_experiment(depth, rng);
      if (wanted(4)) show_depth(depth, r);
      if (options.svg_dir)
        write_depth_svg(*options.svg_dir / "gradient_depth.svg", depth, r, options.seed);
    }
    if (wanted(5)) {
      attn::Rng rng = stream(5);
      show_memory(backward_memory(rng));
    }
    attn::Rng rng = stream(6);
    if (options.timing) show_timing(rng);
  });
}
