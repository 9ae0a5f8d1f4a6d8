// reference.cpp: the block, the language model and the KV-cache step as the pages write them,
// composed from the reference ops (attn/model/reference.hpp), in float and in double.
#include "attn/model/reference.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/model/params.hpp"
#include "attn/ops/attention_ref.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/loss.hpp"
#include "attn/ops/rmsnorm.hpp"
#include "attn/ops/rope.hpp"

namespace attn::ref {

namespace {

template <class S>
using T1 = xt::xtensor<S, 1>;
template <class S>
using T2 = xt::xtensor<S, 2>;
template <class S>
using T3 = xt::xtensor<S, 3>;

// ---- The sub-layers, each forward beside its backward -------------------------------------

// t, or zeros (n,) where the parts have none (RMSNorm's beta, bias = false).
template <class S>
T1<S> or_zeros(const T1<S>& t, std::size_t n) {
  return t.size() != 0 ? t : T1<S>(xt::zeros<S>({n}));
}

template <class S>
struct NormCache {
  LayerNormCacheOf<S> ln;
  RmsNormCache<S> rms;
};

// norm(x) = LayerNorm(x; gamma, beta) or RMSNorm(x; gamma); x itself without norms.
template <class S>
T3<S> normalize(const T3<S>& x, const T1<S>& gamma, const T1<S>& beta, const BlockConfig& c,
                NormCache<S>& k) {
  if (!c.spec.ablations.layer_norm) return x;
  if (c.spec.normalization == Normalization::rmsnorm) return rms_norm<S, 3>(x, gamma, c.eps, k.rms);
  return layer_norm<3>(x, gamma, or_zeros(beta, x.shape()[2]), static_cast<S>(c.eps), k.ln);
}

// dy -> dx; dgamma (and dbeta, when the parts have one) accumulate.
template <class S>
T3<S> normalize_backward(const T3<S>& dy, const T3<S>& x, const T1<S>& gamma, const BlockConfig& c,
                         const NormCache<S>& k, T1<S>& dgamma, T1<S>& dbeta) {
  if (!c.spec.ablations.layer_norm) return dy;
  if (c.spec.normalization == Normalization::rmsnorm) {
    RmsNormGrads<S, 3> g = rms_norm_backward<S, 3>(dy, x, gamma, k.rms);
    dgamma += g.dgamma;
    return std::move(g.dx);
  }
  T1<S> db = or_zeros(dbeta, gamma.size());
  T3<S> dx;
  layer_norm_backward<3>(dy, x, gamma, k.ln, dx, dgamma, db);
  if (dbeta.size() != 0) dbeta = std::move(db);
  return dx;
}

// The MLP's weights with zero biases where the parts have none (bias = false).
template <class S>
FfnWeightsOf<S> with_biases(FfnWeightsOf<S> m) {
  if (m.b1.size() == 0) m.b1 = xt::zeros<S>({m.w1.shape()[1]});
  if (m.b2.size() == 0) m.b2 = xt::zeros<S>({m.w2.shape()[1]});
  return m;
}

template <class S>
struct FfnTape {
  FfnCacheOf<S> mlp;
  SwigluCache<S> swiglu;
};

// ffn(x) = act(x w1 + b1) w2 + b2, or SwiGLU: (silu(x w_gate) * (x w_up)) w_down.
template <class S>
T3<S> feed_forward(const T3<S>& x, const BlockWeights<S>& w, const BlockConfig& c, FfnTape<S>& k) {
  if (c.spec.ffn == FfnKind::swiglu) return swiglu_forward<S>(x, w.swiglu, k.swiglu);
  return ffn_forward(x, with_biases(w.ffn), c.spec.activation, k.mlp);
}

template <class S>
T3<S> feed_forward_backward(const T3<S>& dy, const BlockWeights<S>& w, const BlockConfig& c,
                            const FfnTape<S>& k, BlockWeights<S>& g) {
  T3<S> dx;
  if (c.spec.ffn == FfnKind::swiglu) {
    swiglu_backward<S>(dy, k.swiglu, w.swiglu, dx, g.swiglu);
    return dx;
  }
  FfnWeightsOf<S> gm = with_biases(g.ffn);
  ffn_backward(dy, k.mlp, with_biases(w.ffn), c.spec.activation, dx, gm);
  g.ffn.w1 = std::move(gm.w1);
  g.ffn.w2 = std::move(gm.w2);
  if (g.ffn.b1.size() != 0) g.ffn.b1 = std::move(gm.b1);
  if (g.ffn.b2.size() != 0) g.ffn.b2 = std::move(gm.b2);
  return dx;
}

// ---- The block -------------------------------------------------------------------------------

// What the backward needs from one forward.
template <class S>
struct BlockTape {
  NormCache<S> n1, n2;
  GqaCache<S> attn;
  FfnTape<S> ffn;
  T3<S> in1, in2;  // the norms' inputs: pre-norm x and h; post-norm x + attn(x) and h + ffn(h)
};

void check_covered(const BlockConfig& c, const char* fn) {
  require(c.spec.ablations.attn_proj, fn,
          "a block without w_o (attn_proj = false) has no reference");
}

// skip + y with residuals, else y. In the forward, the stream after a sub-layer; in the
// backward, the gradient through the skip plus the branch's.
template <class S>
T3<S> residual(const BlockConfig& c, const T3<S>& skip, T3<S> y) {
  if (c.spec.ablations.residual) y += skip;
  return y;
}

//   pre-norm:  h = x + attn(norm1(x));     out = h + ffn(norm2(h))
//   post-norm: h = norm1(x + attn(x));     out = norm2(h + ffn(h))
template <class S>
T3<S> block_run(const T3<S>& x, const BlockWeights<S>& w, const BlockConfig& c, BlockTape<S>& k) {
  const GqaConfig g = gqa_config(c);
  if (c.norm == NormPlacement::pre) {
    k.in1 = x;
    const T3<S> a = normalize(x, w.ln1_gamma, w.ln1_beta, c, k.n1);
    k.in2 = residual(c, x, gqa_forward<S>(a, w.attn, g, k.attn));  // h
    if (!c.spec.ablations.ffn) return k.in2;
    const T3<S> f = normalize(k.in2, w.ln2_gamma, w.ln2_beta, c, k.n2);
    return residual(c, k.in2, feed_forward(f, w, c, k.ffn));
  }
  k.in1 = residual(c, x, gqa_forward<S>(x, w.attn, g, k.attn));
  const T3<S> h = normalize(k.in1, w.ln1_gamma, w.ln1_beta, c, k.n1);
  if (!c.spec.ablations.ffn) return h;
  k.in2 = residual(c, h, feed_forward(h, w, c, k.ffn));
  return normalize(k.in2, w.ln2_gamma, w.ln2_beta, c, k.n2);
}

}  // namespace

template <class S>
T3<S> block_forward(const T3<S>& x, const BlockWeights<S>& w, const BlockConfig& config) {
  check_covered(config, "attn::ref::block_forward");
  BlockTape<S> k;
  return block_run(x, w, config, k);
}

template <class S>
void block_backward(const T3<S>& dout, const T3<S>& x, const BlockWeights<S>& w,
                    const BlockConfig& c, T3<S>& dx, BlockWeights<S>& g) {
  check_covered(c, "attn::ref::block_backward");
  require(c.spec.dropout == 0.0f, "attn::ref::block_backward",
          "dropout has no reference backward (the reference is the evaluation forward)");
  require(same_block_shapes(w, g), "attn::ref::block_backward",
          "grads must be shaped like the weights, tensor for tensor (make them with zeros_like)");
  BlockTape<S> k;
  (void)block_run(x, w, c, k);
  const GqaConfig gc = gqa_config(c);
  T3<S> da;
  if (c.norm == NormPlacement::pre) {
    // out = h + ffn(norm2(h)):   dh = dout + norm2'(ffn'(dout))
    T3<S> dh = dout;
    if (c.spec.ablations.ffn) {
      const T3<S> df = feed_forward_backward(dout, w, c, k.ffn, g);
      dh = residual(c, dout,
                    normalize_backward(df, k.in2, w.ln2_gamma, c, k.n2, g.ln2_gamma, g.ln2_beta));
    }
    // h = x + attn(norm1(x)):    dx = dh + norm1'(attn'(dh))
    gqa_backward<S>(dh, k.attn, w.attn, gc, da, g.attn);
    dx = residual(c, dh,
                  normalize_backward(da, k.in1, w.ln1_gamma, c, k.n1, g.ln1_gamma, g.ln1_beta));
    return;
  }
  // out = norm2(r2), r2 = h + ffn(h):   dh = dr2 + ffn'(dr2)
  T3<S> dh = dout;
  if (c.spec.ablations.ffn) {
    const T3<S> dr2 =
        normalize_backward(dout, k.in2, w.ln2_gamma, c, k.n2, g.ln2_gamma, g.ln2_beta);
    dh = residual(c, dr2, feed_forward_backward(dr2, w, c, k.ffn, g));
  }
  // h = norm1(r1), r1 = x + attn(x):    dx = dr1 + attn'(dr1)
  const T3<S> dr1 = normalize_backward(dh, k.in1, w.ln1_gamma, c, k.n1, g.ln1_gamma, g.ln1_beta);
  gqa_backward<S>(dr1, k.attn, w.attn, gc, da, g.attn);
  dx = residual(c, dr1, da);
}

// ---- The language model ----------------------------------------------------------------------

namespace {

// The forward, keeping what the backward needs.
template <class S>
struct LmTape {
  std::vector<T3<S>> inputs;  // each block's input, then the last block's output (L + 1)
  NormCache<S> norm_f;
  T3<S> h;       // (B, T, C) norm_f(x)
  T2<S> logits;  // (B*T, V)
};

// logits[v] = h . wte[v]  (tied)  or  h . lm_head[:, v] + b[v], one row h (C,), in double.
template <class S>
void head_row(const S* h, const LmWeights<S>& w, const ModelSpec& config, S* logits) {
  const std::size_t C = config.n_embd;
  for (std::size_t v = 0; v < config.vocab_size; ++v) {
    double z = w.lm_head_bias.size() != 0 ? static_cast<double>(w.lm_head_bias(v)) : 0.0;
    for (std::size_t c = 0; c < C; ++c)
      z += static_cast<double>(h[c]) *
           static_cast<double>(config.ablations.tied_head ? w.wte(v, c) : w.lm_head(c, v));
    logits[v] = static_cast<S>(z);
  }
}

// x = wte[token] (+ wpe[t] with learned positions), one row (C,).
template <class S>
void embed_row(int token, std::size_t t, const LmWeights<S>& w, const ModelSpec& config, S* x) {
  require(token >= 0 && static_cast<std::size_t>(token) < config.vocab_size, "attn::ref::lm",
          [&] { return "token " + std::to_string(token) + " is outside [0, V)"; });
  const bool learned = config.positions == Positions::learned;
  require(!learned || t < w.wpe.shape()[0], "attn::ref::lm",
          "a position past the position table (block_size)");
  const auto id = static_cast<std::size_t>(token);
  for (std::size_t c = 0; c < config.n_embd; ++c)
    x[c] = learned ? static_cast<S>(w.wte(id, c) + w.wpe(t, c)) : w.wte(id, c);
}

template <class S>
LmTape<S> lm_run(const xt::xtensor<int, 2>& tokens, const LmWeights<S>& w,
                 const ModelSpec& config) {
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1], C = config.n_embd;
  const std::size_t V = config.vocab_size;
  LmTape<S> f;
  // 1. x = wte[tokens] (+ wpe[0..T))                                  (B, T, C)
  T3<S> x({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) embed_row(tokens(b, t), t, w, config, &x(b, t, 0));
  // 2. The blocks.
  const BlockConfig bc = lm_block_config(config);
  f.inputs.push_back(std::move(x));
  for (const BlockWeights<S>& block : w.blocks)
    f.inputs.push_back(ref::block_forward<S>(f.inputs.back(), block, bc));
  // 3. logits = norm_f(x) @ wte^T (or @ lm_head + b)                  (B*T, C) -> (B*T, V)
  f.h = normalize(f.inputs.back(), w.ln_f_gamma, w.ln_f_beta, bc, f.norm_f);
  f.logits = T2<S>({B * T, V});
  for (std::size_t n = 0; n < B * T; ++n)
    head_row(f.h.data() + n * C, w, config, f.logits.data() + n * V);
  return f;
}

}  // namespace

template <class S>
T3<S> lm_forward(const xt::xtensor<int, 2>& tokens, const LmWeights<S>& w,
                 const ModelSpec& config) {
  const LmTape<S> f = lm_run(tokens, w, config);
  T3<S> logits({tokens.shape()[0], tokens.shape()[1], config.vocab_size});
  std::copy(f.logits.begin(), f.logits.end(), logits.begin());
  return logits;
}

template <class S>
double lm_loss(const xt::xtensor<int, 2>& tokens, const xt::xtensor<int, 2>& targets,
               const LmWeights<S>& w, const ModelSpec& config) {
  const LmTape<S> f = lm_run(tokens, w, config);
  return cross_entropy(f.logits, std::span<const int>(targets.data(), targets.size()));
}

template <class S>
double lm_forward_backward(const xt::xtensor<int, 2>& tokens, const xt::xtensor<int, 2>& targets,
                           const LmWeights<S>& w, const ModelSpec& config, LmWeights<S>& g) {
  // The gradients are added into at the weights' indices (rows of wte by token, every block's):
  // another model's would be written past.
  require(same_param_shapes(w, g), "attn::ref::lm_forward_backward",
          "grads must be shaped like the weights, tensor for tensor (make them with zeros_like)");
  const LmTape<S> f = lm_run(tokens, w, config);
  const std::span<const int> ys(targets.data(), targets.size());
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1], C = config.n_embd;
  const std::size_t V = config.vocab_size, N = B * T;
  // 3. logits = h @ wte^T:          dh = dlogits @ wte,      dwte += dlogits^T @ h
  //    (untied: h @ lm_head + b:    dh = dlogits @ lm_head^T, dlm_head += h^T @ dlogits, db += ..)
  const T2<S> dlogits = cross_entropy_grad(f.logits, ys);  // (N, V)
  T3<S> dh = xt::zeros<S>({B, T, C});
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t v = 0; v < V; ++v) {
      const S d = dlogits(n, v);
      if (g.lm_head_bias.size() != 0) g.lm_head_bias(v) += d;
      for (std::size_t c = 0; c < C; ++c) {
        const S h = f.h.data()[n * C + c];
        if (config.ablations.tied_head) {
          dh.data()[n * C + c] += d * w.wte(v, c);
          g.wte(v, c) += d * h;
        } else {
          dh.data()[n * C + c] += d * w.lm_head(c, v);
          g.lm_head(c, v) += d * h;
        }
      }
    }
  // 2. norm_f, then the blocks from the top.
  const BlockConfig bc = lm_block_config(config);
  T3<S> dx = normalize_backward(dh, f.inputs.back(), w.ln_f_gamma, bc, f.norm_f, g.ln_f_gamma,
                                g.ln_f_beta);
  for (std::size_t l = w.blocks.size(); l-- > 0;) {
    T3<S> below;
    ref::block_backward<S>(dx, f.inputs[l], w.blocks[l], bc, below, g.blocks[l]);
    dx = std::move(below);
  }
  // 1. x = wte[tokens] + wpe[t]: each row of dx goes to its token's row (and its position's).
  const bool learned = config.positions == Positions::learned;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      const auto id = static_cast<std::size_t>(tokens(b, t));
      for (std::size_t c = 0; c < C; ++c) {
        g.wte(id, c) += dx(b, t, c);
        if (learned) g.wpe(t, c) += dx(b, t, c);
      }
    }
  return cross_entropy(f.logits, ys);
}

// ---- The KV-cache step -----------------------------------------------------------------------

namespace {

// x (1, 1, K) @ w (K, N) (+ b (N,), an attention bias, when not empty) -> (1, 1, N), summed in
// double.
template <class S>
T3<S> project(const T3<S>& x, const T2<S>& w,
              const T1<S>& b = T1<S>(typename T1<S>::shape_type{0})) {
  const std::size_t K = w.shape()[0], N = w.shape()[1];
  require(b.size() == 0 || b.size() == N, "attn::ref::lm_step", [&] {
    return "an attention bias is " + shape_str(b.shape()) + ", expected (" + std::to_string(N) +
           ",) like its matrix's columns";
  });
  T3<S> y({1, 1, N});
  for (std::size_t n = 0; n < N; ++n) {
    double s = b.size() != 0 ? static_cast<double>(b(n)) : 0.0;
    for (std::size_t k = 0; k < K; ++k)
      s += static_cast<double>(x(0, 0, k)) * static_cast<double>(w(k, n));
    y(0, 0, n) = static_cast<S>(s);
  }
  return y;
}

// (1, 1, heads * hs) -> (1, heads, 1, hs): one position, its heads apart (for RoPE).
template <class S>
xt::xtensor<S, 4> heads_of(const T3<S>& row, std::size_t heads) {
  const std::size_t hs = row.shape()[2] / heads;
  xt::xtensor<S, 4> out({1, heads, 1, hs});
  std::copy(row.begin(), row.end(), out.begin());
  return out;
}

// cache (KV, n, hs) with the new position's (1, KV, 1, hs) appended -> (KV, n + 1, hs).
template <class S>
void append(T3<S>& cache, const xt::xtensor<S, 4>& row) {
  const std::size_t KV = row.shape()[1], n = cache.shape()[1], hs = row.shape()[3];
  T3<S> grown({KV, n + 1, hs});
  for (std::size_t g = 0; g < KV; ++g)
    for (std::size_t d = 0; d < hs; ++d) {
      for (std::size_t j = 0; j < n; ++j) grown(g, j, d) = cache(g, j, d);
      grown(g, n, d) = row(0, g, 0, d);
    }
  cache = std::move(grown);
}

// The new position's attention over the cache. q, k, v = a @ w_q, w_k, w_v (rotated by RoPE at
// position pos); k, v appended; then the reference attention of the one query at position pos
// over the pos + 1 cached keys, causal and windowed like the block (query head h reads K/V head
// h / (H / KV)):
//   s_j = q_h . k_{g,j} / sqrt(hs)  for j in [pos - W + 1, pos] (all of [0, pos] without W)
//   p = softmax(s),  o_h = sum_j p_j v_{g,j};      out = o @ w_o  (biases added, GPT-2)
template <class S>
T3<S> attend_step(const T3<S>& a, const GqaWeights<S>& w, const BlockConfig& c, T3<S>& keys,
                  T3<S>& values, std::size_t pos) {
  const std::size_t C = a.shape()[2], H = c.spec.n_heads, KV = c.spec.n_kv_heads;
  xt::xtensor<S, 4> q = heads_of(project(a, w.w_q, w.b_q), H);  // (+ b_q, b_k, b_v: GPT-2)
  xt::xtensor<S, 4> k = heads_of(project(a, w.w_k, w.b_k), KV);
  if (c.spec.rope()) {
    q = rope<S>(q, c.spec.rope_theta, pos);
    k = rope<S>(k, c.spec.rope_theta, pos);
  }
  append(keys, k);
  append(values, heads_of(project(a, w.w_v, w.b_v), KV));
  // The cache's (KV, pos + 1, hs) as a batch of one: (1, KV, pos + 1, hs).
  const auto batch_of_one = [](const T3<S>& t) {
    xt::xtensor<S, 4> out({1, t.shape()[0], t.shape()[1], t.shape()[2]});
    std::copy(t.begin(), t.end(), out.begin());
    return out;
  };
  // The model's attention (causal, its window, its score-level parts) for the one new query at
  // position pos over the pos + 1 cached keys.
  AttentionOptions options = attention_options(c.spec, pos);
  options.need_probs = false;
  const AttentionRefResult<S> r =
      attention_ref<S>(q, batch_of_one(keys), batch_of_one(values), options);
  // (1, H, 1, hs)
  T3<S> o({1, 1, C});
  std::copy(r.out.begin(), r.out.end(), o.begin());  // the heads side by side: (1, 1, H * hs)
  return project(o, w.w_o, w.b_o);
}

// One position through a (pre-norm) block: h = x + attn(norm1(x)); out = h + ffn(norm2(h)).
template <class S>
T3<S> block_step(const T3<S>& x, const BlockWeights<S>& w, const BlockConfig& c, T3<S>& keys,
                 T3<S>& values, std::size_t pos) {
  NormCache<S> unused;
  const T3<S> a = normalize(x, w.ln1_gamma, w.ln1_beta, c, unused);
  const T3<S> h = residual(c, x, attend_step(a, w.attn, c, keys, values, pos));
  if (!c.spec.ablations.ffn) return h;
  FfnTape<S> k;
  return residual(c, h, feed_forward(normalize(h, w.ln2_gamma, w.ln2_beta, c, unused), w, c, k));
}

}  // namespace

template <class S>
T1<S> lm_step(KvCache<S>& cache, int token, const LmWeights<S>& w, const ModelSpec& config) {
  const BlockConfig bc = lm_block_config(config);
  check_covered(bc, "attn::ref::lm_step");
  const std::size_t C = config.n_embd, L = w.blocks.size(), n = cache.length;
  const std::size_t KV = config.n_kv_heads, hs = C / config.n_heads;
  // Every layer's keys and values are read up to position n and grown by one, layer by layer:
  // the cache must be empty (a new sequence) or hold this model's L layers of (KV, n, hs).
  const std::array<std::size_t, 3> kv_shape{KV, n, hs};
  bool fits = cache.keys.size() == L && cache.values.size() == L;
  for (std::size_t l = 0; fits && l < L; ++l)
    fits = cache.keys[l].shape() == kv_shape && cache.values[l].shape() == kv_shape;
  const bool fresh = cache.keys.empty() && cache.values.empty() && n == 0;
  require(fits || fresh, "attn::ref::lm_step", [&] {
    return "the cache must be empty (a new sequence) or hold L = " + std::to_string(L) +
           " layers of keys and values of shape (KV, length, hs) = " + shape_str(kv_shape) +
           " from this model's earlier steps";
  });
  if (cache.keys.empty()) {
    cache.keys.assign(L, T3<S>({KV, 0, hs}));
    cache.values.assign(L, T3<S>({KV, 0, hs}));
  }
  // x = wte[token] (+ wpe[n]), then the blocks, each appending to its layer's cache.
  T3<S> x({1, 1, C});
  embed_row(token, n, w, config, x.data());
  for (std::size_t l = 0; l < L; ++l)
    x = block_step(x, w.blocks[l], bc, cache.keys[l], cache.values[l], n);
  cache.length = n + 1;
  // logits = norm_f(x) @ wte^T (or @ lm_head + b)
  NormCache<S> unused;
  const T3<S> h = normalize(x, w.ln_f_gamma, w.ln_f_beta, bc, unused);
  T1<S> logits = xt::zeros<S>({config.vocab_size});
  head_row(h.data(), w, config, logits.data());
  return logits;
}

// ---- Weights: from the model's, zeros, by name -----------------------------------------------

namespace {

template <class S, std::size_t N>
xt::xtensor<S, N> as(const xt::xtensor<float, N>& t) {
  xt::xtensor<S, N> d = xt::cast<S>(t);
  return d;
}

template <class S, std::size_t N>
xt::xtensor<S, N> zeros_of(const xt::xtensor<S, N>& t) {
  xt::xtensor<S, N> z = xt::zeros<S>(t.shape());
  return z;
}

template <class S>
void add_named(std::vector<Named<S>>& out, const std::string& name, auto& t) {
  if (t.size() != 0) out.push_back({name, std::span<S>(t.data(), t.size())});
}

}  // namespace

// Every tensor of the float model, rounded to S, through the parameter table.
template <class S>
BlockWeights<S> cast(const attn::BlockWeights& w) {
  BlockWeights<S> d;
  visit_block_params(d, w, nullptr, -1,
                     [](const ParamRow&, auto& to, const auto& from) { to = as<S>(from); });
  return d;
}

template <class S>
LmWeights<S> cast(const attn::LmWeights& w) {
  LmWeights<S> d;
  d.blocks.resize(w.blocks.size());
  visit_params(d, w, nullptr,
               [](const ParamRow&, auto& to, const auto& from) { to = as<S>(from); });
  return d;
}

template <class S>
BlockWeights<S> zeros_like(const BlockWeights<S>& w) {
  BlockWeights<S> z;
  visit_block_params(z, w, nullptr, -1, [](const ParamRow&, auto& zeros, const auto& like) {
    zeros = zeros_of(like);
  });
  return z;
}

template <class S>
LmWeights<S> zeros_like(const LmWeights<S>& w) {
  LmWeights<S> z;
  z.blocks.resize(w.blocks.size());
  visit_params(z, w, nullptr,
               [](const ParamRow&, auto& zeros, const auto& like) { zeros = zeros_of(like); });
  return z;
}

template <class S>
std::vector<Named<S>> parameters(BlockWeights<S>& w) {
  std::vector<Named<S>> out;
  visit_block_params(w, w, nullptr, -1, [&](const ParamRow& row, auto& t, auto&) {
    add_named(out, param_name(row), t);
  });
  return out;
}

template <class S>
std::vector<Named<S>> parameters(LmWeights<S>& w) {
  std::vector<Named<S>> out;
  visit_params(w, w, nullptr,
               [&](const ParamRow& row, auto& t, auto&) { add_named(out, param_name(row), t); });
  return out;
}

#define ATTN_REF_INSTANTIATE(S)                                                                    \
  template BlockWeights<S> cast<S>(const attn::BlockWeights&);                                     \
  template LmWeights<S> cast<S>(const attn::LmWeights&);                                           \
  template BlockWeights<S> zeros_like<S>(const BlockWeights<S>&);                                  \
  template LmWeights<S> zeros_like<S>(const LmWeights<S>&);                                        \
  template std::vector<Named<S>> parameters<S>(BlockWeights<S>&);                                  \
  template std::vector<Named<S>> parameters<S>(LmWeights<S>&);                                     \
  template T3<S> block_forward<S>(const T3<S>&, const BlockWeights<S>&, const BlockConfig&);       \
  template void block_backward<S>(const T3<S>&, const T3<S>&, const BlockWeights<S>&,              \
                                  const BlockConfig&, T3<S>&, BlockWeights<S>&);                   \
  template T3<S> lm_forward<S>(const xt::xtensor<int, 2>&, const LmWeights<S>&, const ModelSpec&); \
  template double lm_loss<S>(const xt::xtensor<int, 2>&, const xt::xtensor<int, 2>&,               \
                             const LmWeights<S>&, const ModelSpec&);                               \
  template double lm_forward_backward<S>(const xt::xtensor<int, 2>&, const xt::xtensor<int, 2>&,   \
                                         const LmWeights<S>&, const ModelSpec&, LmWeights<S>&);    \
  template T1<S> lm_step<S>(KvCache<S>&, int, const LmWeights<S>&, const ModelSpec&);
ATTN_REF_INSTANTIATE(float)
ATTN_REF_INSTANTIATE(double)
#undef ATTN_REF_INSTANTIATE

}  // namespace attn::ref
