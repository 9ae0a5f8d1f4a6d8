// block.cpp: the transformer block (chapter 06): multi-head attention (chapters 04-05) and the
// feed-forward network, each wrapped in a residual connection and a LayerNorm. Chapter 07
// stacks these blocks into a language model (model.cpp).
#include "attn/model/block.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

#include "attn/core/check.hpp"
#include "attn/fast/attention.hpp"
#include "attn/fast/ffn.hpp"
#include "attn/fast/flash.hpp"
#include "attn/fast/gqa.hpp"
#include "attn/fast/layernorm.hpp"
#include "attn/fast/rmsnorm.hpp"
#include "attn/fast/swiglu.hpp"
#include "attn/ops/dropout.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/core/parallel.hpp"
#include "attn/model/params.hpp"

namespace attn {

NormPlacement parse_norm(std::string_view name) {
  if (name == "pre") return NormPlacement::pre;
  if (name == "post") return NormPlacement::post;
  throw std::invalid_argument("unknown norm placement '" + std::string(name) +
                              "': expected pre or post");
}

std::string_view norm_name(NormPlacement n) {
  switch (n) {
    case NormPlacement::pre:
      return "pre";
    case NormPlacement::post:
      return "post";
  }
  return "unknown";
}

ModelSpec block_spec(std::size_t C, std::size_t n_heads, Activation activation) {
  ModelChoices m;
  m.n_embd = C;
  m.n_heads = n_heads;
  m.activation = activation;
  return resolve_spec(m);
}

GqaConfig gqa_config(const BlockConfig& c) {
  const AttentionOptions o = attention_options(c.spec, 0, c.causal);  // the model's attention
  GqaConfig g;
  g.n_heads = c.spec.n_heads;
  g.n_kv_heads = c.spec.n_kv_heads;
  g.causal = o.causal;
  g.rope = c.spec.rope();
  g.theta = c.spec.rope_theta;
  g.window = o.window;
  g.score = o.score;
  return g;
}

BlockWeights block_init(Rng& rng, std::size_t C, std::size_t F) {
  BlockWeights w;
  // Drawn in this order: w_q, w_k, w_v, w_o, then w1, w2.
  w.attn = mha_init(rng, C);
  // gamma = 1, beta = 0: at initialisation each LayerNorm only normalises.
  w.ln1_gamma = xt::ones<float>({C});
  w.ln1_beta = xt::zeros<float>({C});
  w.ln2_gamma = xt::ones<float>({C});
  w.ln2_beta = xt::zeros<float>({C});
  w.ffn = ffn_init(rng, C, F);
  return w;
}

namespace {

constexpr const char* kFunction = "attn::block_forward";

// Every weight of the block has its row's shape in the parameter table (model/params.hpp), for
// the spec's sizes, or is empty where the model has no such tensor (attn_proj false: w_o; ffn
// false: the FFN; SwiGLU: the MLP's, and the reverse). One line names the first that does not:
// "attn::block_forward: w2 is (256, 32), expected (256, 64)". Two sizes come from elsewhere:
// C from x (checked against the spec first), and F from the FFN's first matrix.
void check_block(const Tensor<3>& x, const BlockWeights& w, const BlockConfig& config) {
  const std::size_t C = x.shape()[2];
  require(C >= 1, kFunction,
          [&] { return "x is " + shape_str(x.shape()) + ", C must be at least 1"; });
  require(C == config.spec.n_embd, kFunction, [&] {
    return "x is " + shape_str(x.shape()) + ", but the spec's n_embd is " +
           std::to_string(config.spec.n_embd);
  });
  ParamDims dims = param_dims(config.spec);
  // A lone block (chapters 06 and 08) runs an FFN of any width F under block_spec's 4 C: F is
  // the columns of w1 (or w_gate), when the block has that matrix at all; the other FFN
  // matrices must agree with it.
  const Matrix& first = dims.swiglu ? w.swiglu.w_gate : w.ffn.w1;
  if ((dims.mlp || dims.swiglu) && first.size() != 0) dims.F = first.shape()[1];
  // A block without LayerNorm (chapter 06's ablation) ignores its norms' weights, and chapter
  // 06 runs it on block_init's: the table's empty gammas and betas, or all four of shape (C,),
  // are both accepted.
  const bool ln_given =
      w.ln1_gamma.size() + w.ln1_beta.size() + w.ln2_gamma.size() + w.ln2_beta.size() != 0;
  if (!dims.norms && ln_given) dims.norms = dims.norm_betas = true;
  visit_block_params(w, w, &dims, -1, [&](const ParamRow& row, const auto& t, const auto&) {
    if (!fits_row(row, t)) require(false, kFunction, [&] { return param_misfit(row, t); });
  });
}

// LayerNorm(x) into `storage`, or x itself when the config switches LayerNorm off (chapter 06's
// experiment: without it, the scale of the activations drifts as blocks are stacked). The trace
// still reports the step, so both variants list the same steps.
const Vector& zeros_vector(std::size_t n, Vector& z);

const Tensor<3>& norm(const Tensor<3>& x, const Vector& gamma, const Vector& beta,
                      const BlockConfig& config, BlockWork& work, Tensor<3>& storage) {
  if (!config.spec.ablations.layer_norm) return x;
  if (config.spec.normalization == Normalization::rmsnorm) {
    fast::rms_norm(x, gamma, static_cast<double>(config.eps), work.rms, storage);
    return storage;
  }
  // Without biases LayerNorm has no beta: it adds zeros.
  storage = fast::layer_norm<3>(
      x, gamma, beta.size() == 0 ? zeros_vector(gamma.size(), work.zeros) : beta, config.eps);
  return storage;
}

// A vector of n zeros, kept in z (a LayerNorm without biases adds these).
const Vector& zeros_vector(std::size_t n, Vector& z) {
  if (z.size() != n) z = xt::zeros<float>({n});
  return z;
}

// t = src, or t = zeros of `shape`, in t's own buffer when it has the size already (a training
// loop allocates nothing).
template <class T>
void assign_into(T& t, const T& src) {
  if (t.shape() != src.shape()) t.resize(src.shape());
  std::copy(src.begin(), src.end(), t.begin());
}
template <class T>
void zeros_into(T& t, const typename T::shape_type& shape) {
  if (t.shape() != shape) t.resize(shape);
  std::fill(t.begin(), t.end(), 0.0f);
}

// The MLP's weights with zero biases in place of the empty ones (no biases), kept in s.
const FfnWeights& mlp_weights(const FfnWeights& w, const BlockConfig& config, FfnWeights& s) {
  if (config.spec.bias) return w;
  assign_into(s.w1, w.w1);
  assign_into(s.w2, w.w2);
  zeros_into(s.b1, {w.w1.shape()[1]});
  zeros_into(s.b2, {w.w2.shape()[1]});
  return s;
}

// The attention step of the evaluation forward: chapter 05's MHA, or grouped-query attention
// (RoPE, window) for the other parts, both on the fast kernels.
MhaResult attention_eval(const Tensor<3>& x, const MhaWeights& w, const BlockConfig& config) {
  if (!config.spec.grouped_attention()) {
    return fast::mha_forward(x, w, config.spec.n_heads, config.causal, config.keep_weights);
  }
  return fast::gqa_forward(x, w, gqa_config(config), config.keep_weights);
}

// The FFN step of the evaluation forward: the MLP or SwiGLU (fast kernels).
Tensor<3> ffn_eval(const Tensor<3>& x, const BlockWeights& w, const BlockConfig& config,
                   BlockWork& work) {
  if (config.spec.ffn == FfnKind::swiglu) return fast::swiglu_forward(x, w.swiglu);
  return fast::ffn_forward(x, mlp_weights(w.ffn, config, work.mlp), config.spec.activation);
}

// out[i] = a[i] + b[i] for i < n; out may be a. Eight at a time, each group read before it is
// written: SIMD instructions.
void add_arrays_serial(float* out, const float* a, const float* b, std::size_t n) {
  const std::size_t n8 = n - n % 8;
  for (std::size_t i = 0; i < n8; i += 8) {
    float sum[8];
    for (std::size_t u = 0; u < 8; ++u) sum[u] = a[i + u] + b[i + u];
    for (std::size_t u = 0; u < 8; ++u) out[i + u] = sum[u];
  }
  for (std::size_t i = n8; i < n; ++i) out[i] = a[i] + b[i];
}

// Element-wise passes over a whole (B, T, C) stream are split over the library's threads in
// pieces of kStreamChunk floats (any split gives the same result: each element is on its own).
// One thread alone would leave the others waiting at every residual add and copy.
constexpr std::size_t kStreamChunk = 16384;

void add_arrays(float* out, const float* a, const float* b, std::size_t n) {
  const std::size_t chunks = (n + kStreamChunk - 1) / kStreamChunk;
  detail::run_parts(chunks, detail::worker_count(chunks),
                    [&](std::size_t first, std::size_t last, std::size_t) {
                      const std::size_t i0 = first * kStreamChunk;
                      const std::size_t i1 = std::min(n, last * kStreamChunk);
                      add_arrays_serial(out + i0, a + i0, b + i0, i1 - i0);
                    });
}

// dst[i] = src[i] for i < n, over the threads like add_arrays.
void copy_floats(float* dst, const float* src, std::size_t n) {
  const std::size_t chunks = (n + kStreamChunk - 1) / kStreamChunk;
  detail::run_parts(chunks, detail::worker_count(chunks),
                    [&](std::size_t first, std::size_t last, std::size_t) {
                      const std::size_t i0 = first * kStreamChunk;
                      std::copy(src + i0, src + std::min(n, last * kStreamChunk), dst + i0);
                    });
}

// acc += other, element by element. Both (B, T, C), contiguous.
void add_in_place(Tensor<3>& acc, const Tensor<3>& other) {
  add_arrays(acc.data(), acc.data(), other.data(), acc.size());
}

void report(const BlockTrace& trace, std::string_view step, const Tensor<3>& value) {
  if (trace) trace(step, value);
}

}  // namespace

BlockResult block_forward(const Tensor<3>& x, const BlockWeights& w, const BlockConfig& config,
                          const BlockTrace& trace) {
  check_block(x, w, config);
  Tensor<3> ln_storage;  // holds the current LayerNorm output, when LayerNorm is on
  BlockWork work;        // zeros for missing biases, what an RMSNorm keeps

  if (config.norm == NormPlacement::pre) {
    // Pre-norm (GPT-2 and most LLMs since): the sub-layers see normalised inputs, while the
    // residual stream x passes from input to output untouched by any LayerNorm. That clean path
    // is why deep pre-norm stacks train without the warm-up tricks post-norm needs.
    // 1. h = ln1(x)                                            (B, T, C)
    const Tensor<3>& h1 = norm(x, w.ln1_gamma, w.ln1_beta, config, work, ln_storage);
    report(trace, "ln1", h1);
    // 2. a = MultiHeadAttention(h): tokens exchange information  (B, T, C), weights (B, H, T, T)
    MhaResult a = attention_eval(h1, w.attn, config);
    report(trace, "attn", a.out);
    // 3. x = x + a: the residual connection                   (B, T, C)
    //    (residual = false, chapter 09's ladder: x = a)
    Tensor<3> stream = std::move(a.out);
    if (config.spec.ablations.residual) add_in_place(stream, x);
    report(trace, "residual1", stream);
    if (!config.spec.ablations.ffn) return {std::move(stream), std::move(a.weights)};
    // 4. h = ln2(x)                                            (B, T, C)
    const Tensor<3>& h2 = norm(stream, w.ln2_gamma, w.ln2_beta, config, work, ln_storage);
    report(trace, "ln2", h2);
    // 5. f = FFN(h): each token on its own                     (B, T, C) -> (B, T, F) -> (B, T, C)
    Tensor<3> f = ffn_eval(h2, w, config, work);
    report(trace, "ffn", f);
    // 6. x = x + f                                             (B, T, C)
    if (config.spec.ablations.residual) {
      add_in_place(stream, f);
    } else {
      stream = std::move(f);
    }
    report(trace, "residual2", stream);
    return {std::move(stream), std::move(a.weights)};
  }

  // Post-norm (the original Transformer): normalise after each residual addition, so the
  // stream itself is renormalised twice per block.
  // 1. a = MultiHeadAttention(x)                               (B, T, C), weights (B, H, T, T)
  MhaResult a = attention_eval(x, w.attn, config);
  report(trace, "attn", a.out);
  // 2. r = x + a                                               (B, T, C)
  Tensor<3> r1 = std::move(a.out);
  if (config.spec.ablations.residual) add_in_place(r1, x);
  report(trace, "residual1", r1);
  // 3. x = ln1(r)                                              (B, T, C)
  const Tensor<3>& x1 = norm(r1, w.ln1_gamma, w.ln1_beta, config, work, ln_storage);
  report(trace, "ln1", x1);
  if (!config.spec.ablations.ffn) return {Tensor<3>(x1), std::move(a.weights)};
  // 4. f = FFN(x)                                              (B, T, C)
  Tensor<3> r2 = ffn_eval(x1, w, config, work);
  report(trace, "ffn", r2);
  // 5. r = x + f                                               (B, T, C)
  if (config.spec.ablations.residual) add_in_place(r2, x1);
  report(trace, "residual2", r2);
  // 6. out = ln2(r)                                            (B, T, C)
  if (config.spec.ablations.layer_norm) {
    Tensor<3> normed;
    (void)norm(r2, w.ln2_gamma, w.ln2_beta, config, work, normed);
    r2 = std::move(normed);
  }
  report(trace, "ln2", r2);
  return {std::move(r2), std::move(a.weights)};
}

// ---------------------------------------------------------------------------------------------
// Backward (chapter 08)

namespace {

// t takes `shape`, reallocating only when it changes (caches are reused between steps).
void ensure_shape(Tensor<3>& t, const std::array<std::size_t, 3>& shape) {
  if (!std::equal(shape.begin(), shape.end(), t.shape().begin())) t.resize(shape);
}
void clear(Tensor<3>& t) {
  if (t.size() != 0) t = Tensor<3>(Tensor<3>::shape_type{0, 0, 0});
}
void clear(LayerNormCache& c) {
  if (c.mean.size() != 0) c.mean = Vector(Vector::shape_type{0});
  if (c.rstd.size() != 0) c.rstd = Vector(Vector::shape_type{0});
}
void copy_into(Tensor<3>& dst, const Tensor<3>& src) {
  ensure_shape(dst, {src.shape()[0], src.shape()[1], src.shape()[2]});
  copy_floats(dst.data(), src.data(), src.size());
}
// t *= mask, element by element (dropout's forward and backward, in place). Same shapes.
void multiply_in_place(Tensor<3>& t, const Tensor<3>& mask) {
  float* d = t.data();
  const float* m = mask.data();
  for (std::size_t i = 0; i < t.size(); ++i) d[i] *= m[i];
}
// out = a * mask (the gradient through a dropout, kept apart from a).
void multiply_into(Tensor<3>& out, const Tensor<3>& a, const Tensor<3>& mask) {
  ensure_shape(out, {a.shape()[0], a.shape()[1], a.shape()[2]});
  for (std::size_t i = 0; i < a.size(); ++i) out.data()[i] = a.data()[i] * mask.data()[i];
}
// The mask of one dropout for a (B, T, C) sub-layer output: drawn from rng, or (no rng: a fixed
// mask) the one already there, which must have that shape. Emptied when dropout is off.
void prepare_mask(Tensor<3>& mask, const std::array<std::size_t, 3>& shape, float p, Rng* rng,
                  const char* which) {
  if (p == 0.0f) {
    clear(mask);
    return;
  }
  if (rng != nullptr) {
    ensure_shape(mask, shape);
    dropout_mask(*rng, p, std::span<float>(mask.data(), mask.size()));
    return;
  }
  if (!std::equal(shape.begin(), shape.end(), mask.shape().begin())) {
    shape_error("attn::block_forward",
                std::string("a generator for dropout, or a fixed ") + which + " of shape " +
                    shape_str(shape),
                std::string(which) + " " + shape_str(mask.shape()));
  }
}
// out = a + b (out may be a).
void add_into(Tensor<3>& out, const Tensor<3>& a, const Tensor<3>& b) {
  ensure_shape(out, {a.shape()[0], a.shape()[1], a.shape()[2]});
  add_arrays(out.data(), a.data(), b.data(), out.size());
}
// acc += g element by element, in acc's own buffer: a gradient tensor keeps its storage (an
// optimizer holds spans into it; xtensor's += may allocate a new one). Same sizes.
template <class T>
void add_into_buffer(T& acc, const T& g) {
  float* a = acc.data();
  const float* b = g.data();
  for (std::size_t i = 0; i < acc.size(); ++i) a[i] += b[i];
}
template <class T>
void clear_any(T& t) {
  if (t.size() != 0) t = T(typename T::shape_type{});
}

// ---- The parts in the training forward and the backward: each step dispatches to the fast
// kernel of its part (chapter 06's for the default parts, fast/rmsnorm, fast/gqa, fast/swiglu
// for the others) and keeps what that part's backward reads (the other part's cache fields are
// emptied).

// out = norm(x) (LayerNorm or RMSNorm), keeping mean and rstd (ln) or rstd (rms).
void norm_forward(const Tensor<3>& x, const Vector& gamma, const Vector& beta, const BlockConfig& c,
                  LayerNormCache& ln, RmsNormCache<float>& rms, BlockWork& work, Tensor<3>& out) {
  if (c.spec.normalization == Normalization::rmsnorm) {
    clear(ln);
    fast::rms_norm(x, gamma, static_cast<double>(c.eps), rms, out);
    return;
  }
  clear_any(rms.rstd);
  fast::layer_norm<3>(x, gamma, beta.size() == 0 ? zeros_vector(gamma.size(), work.zeros) : beta,
                      c.eps, ln, out);
}

// dx from dy through the norm whose input was x; dgamma (and dbeta, when there is one) +=.
// dx may be dy.
void norm_backward(const Tensor<3>& dy, const Tensor<3>& x, const Vector& gamma,
                   const BlockConfig& c, const LayerNormCache& ln, const RmsNormCache<float>& rms,
                   BlockWork& work, Tensor<3>& dx, Vector& dgamma, Vector& dbeta,
                   fast::Workspace& ws) {
  if (c.spec.normalization == Normalization::rmsnorm) {
    fast::rms_norm_backward(dy, x, gamma, rms, dx, dgamma, ws);
    return;
  }
  if (dbeta.size() == 0) {  // no biases: beta's gradient has nowhere to go
    zeros_into(work.zeros_grad, {gamma.size()});
    fast::layer_norm_backward<3>(dy, x, gamma, ln, dx, dgamma, work.zeros_grad, ws);
    return;
  }
  fast::layer_norm_backward<3>(dy, x, gamma, ln, dx, dgamma, dbeta, ws);
}

// out = attention(x): chapter 05's MHA or grouped-query attention (RoPE, window), both keeping
// their input, q | k | v, the weights and the merged heads in cache.attn.
void attention_forward(const Tensor<3>& x, const MhaWeights& w, const BlockConfig& c,
                       BlockCache& cache, Tensor<3>& out, fast::Workspace& ws) {
  if (!c.spec.grouped_attention()) {
    // Without keep_weights, from T = fast::kFlashMinT on, the flash kernel: the cache keeps each
    // query's log-sum-exp (B, H, T) in place of the (B, H, T, T) weights.
    fast::mha_forward(x, w, c.spec.n_heads, c.causal, cache.attn, out, c.keep_weights, ws);
    return;
  }
  // RoPE alone (one K/V head per query head, no window) takes the flash path too.
  fast::gqa_forward(x, w, gqa_config(c), cache.attn, out, c.keep_weights, ws);
}

void attention_backward(const Tensor<3>& dout, const BlockCache& cache, const MhaWeights& w,
                        const BlockConfig& c, Tensor<3>& dx, MhaWeights& grads,
                        fast::Workspace& ws) {
  if (!c.spec.grouped_attention()) {
    fast::mha_backward(dout, cache.attn, w, c.spec.n_heads, c.causal, dx, grads, ws);
    return;
  }
  fast::gqa_backward(dout, cache.attn, w, gqa_config(c), dx, grads, ws);
}

// out = FFN(x): the MLP (cache.ffn) or SwiGLU (cache.swiglu).
void ffn_forward_part(const Tensor<3>& x, const BlockWeights& w, const BlockConfig& c,
                      BlockCache& cache, Tensor<3>& out) {
  if (c.spec.ffn == FfnKind::swiglu) {
    clear(cache.ffn.x);
    clear(cache.ffn.pre);
    clear(cache.ffn.act);
    fast::swiglu_forward(x, w.swiglu, cache.swiglu, out);
    return;
  }
  clear_any(cache.swiglu.x);
  clear_any(cache.swiglu.a);
  clear_any(cache.swiglu.u);
  clear_any(cache.swiglu.h);
  fast::ffn_forward(x, mlp_weights(w.ffn, c, cache.work.mlp), c.spec.activation, cache.ffn, out);
}

void ffn_backward_part(const Tensor<3>& dy, BlockCache& cache, const BlockWeights& w,
                       const BlockConfig& c, Tensor<3>& dx, BlockWeights& grads,
                       fast::Workspace& ws) {
  if (c.spec.ffn == FfnKind::swiglu) {
    fast::swiglu_backward(dy, cache.swiglu, w.swiglu, dx, grads.swiglu, ws);
    return;
  }
  if (c.spec.bias) {
    fast::ffn_backward(dy, cache.ffn, w.ffn, c.spec.activation, dx, grads.ffn, ws);
    return;
  }
  // No biases: the kernel's gradients from zero (its bias gradients dropped), then w1's and
  // w2's added into grads' own buffers.
  FfnWeights& g = cache.work.mlp_grads;
  zeros_into(g.w1, grads.ffn.w1.shape());
  zeros_into(g.w2, grads.ffn.w2.shape());
  zeros_into(g.b1, {g.w1.shape()[1]});
  zeros_into(g.b2, {g.w2.shape()[1]});
  fast::ffn_backward(dy, cache.ffn, mlp_weights(w.ffn, c, cache.work.mlp), c.spec.activation, dx, g,
                     ws);
  add_into_buffer(grads.ffn.w1, g.w1);
  add_into_buffer(grads.ffn.w2, g.w2);
}

}  // namespace

Tensor<3> block_forward(const Tensor<3>& x, const BlockWeights& w, const BlockConfig& config,
                        BlockCache& cache, Rng* dropout_rng) {
  Tensor<3> out;
  block_forward(x, w, config, cache, out, dropout_rng);
  return out;
}

void block_forward(const Tensor<3>& x, const BlockWeights& w, const BlockConfig& config,
                   BlockCache& cache, Tensor<3>& out, Rng* dropout_rng) {
  block_forward(x, w, config, cache, out, cache.work.scratch, dropout_rng);
}

void block_forward(const Tensor<3>& x, const BlockWeights& w, const BlockConfig& config,
                   BlockCache& cache, Tensor<3>& out, fast::Workspace& ws, Rng* dropout_rng) {
  check_block(x, w, config);
  require(&out != &x, "attn::block_forward", "out must not be x");
  const bool ln = config.spec.ablations.layer_norm;
  // Dropout (training only): the masks of the attention's output, then of the FFN's, drawn in
  // that order before anything is computed. Each sub-layer's output is multiplied by its mask
  // before the residual addition, so the stream itself is never dropped.
  const float p = config.spec.dropout;
  const bool drop = p > 0.0f;
  const std::array<std::size_t, 3> btc{x.shape()[0], x.shape()[1], x.shape()[2]};
  prepare_mask(cache.drop_attn, btc, p, dropout_rng, "drop_attn");
  prepare_mask(cache.drop_ffn, btc, config.spec.ablations.ffn ? p : 0.0f, dropout_rng, "drop_ffn");
  // The same operations as block_forward above, in the same order (the same output, bit for
  // bit), each keeping what its backward needs. Only what the backward reads is held: the
  // fields a configuration does not need are emptied, so activation_floats counts exactly what
  // training keeps. (cache.ln1_out / ln2_out are never needed: they live in attn.x / ffn.x.)
  // The stream is built in `out`; a LayerNorm's output and the FFN's go to two scratch tensors
  // of the cache's work, so a training step allocates none of them.
  Tensor<3>& h = cache.work.h;
  Tensor<3>& f = cache.work.f;
  clear(cache.ln1_out);
  clear(cache.ln2_out);
  clear(cache.ln1_in);
  if (config.norm == NormPlacement::pre) {
    clear(cache.ln2_in);
    // 1. h = ln1(x): the backward of ln1 needs x (and mean, rstd). h is written straight into
    //    cache.attn.x, where the attention keeps its input (so it copies nothing).
    Tensor<3>& h1 = cache.attn.x;
    if (ln) {
      copy_into(cache.x, x);
      norm_forward(x, w.ln1_gamma, w.ln1_beta, config, cache.ln1, cache.rms1, cache.work, h1);
    } else {
      clear(cache.x);
      clear(cache.ln1);
      clear_any(cache.rms1.rstd);
    }
    // 2. a = MHA(h): cache.attn keeps h, q|k|v, the weights and the merged heads.
    attention_forward(ln ? h1 : x, w.attn, config, cache, out, ws);
    if (drop) multiply_in_place(out, cache.drop_attn);  // a = dropout(a)
    if (!config.spec.ablations.ffn) {
      // 3. x = x + a
      if (config.spec.ablations.residual) add_in_place(out, x);
      clear(cache.residual1);
      clear(cache.ln2);
      clear_any(cache.rms2.rstd);
      clear(cache.ffn.x);
      clear(cache.ffn.pre);
      clear(cache.ffn.act);
      return;
    }
    // 3. x = x + a, written where ln2's backward will need it (residual1) when there is a
    //    LayerNorm. (a + x, the same sum as out += x.)
    Tensor<3>& stream = ln ? cache.residual1 : out;
    if (config.spec.ablations.residual) {
      add_into(stream, out, x);
    } else if (ln) {
      copy_into(cache.residual1, out);
    }
    if (!ln) clear(cache.residual1);
    // 4. h = ln2(x), straight into where the FFN keeps its input: cache.ffn.x (the MLP) or
    //    cache.swiglu.x.
    Tensor<3>& h2 = config.spec.ffn == FfnKind::swiglu ? cache.swiglu.x : cache.ffn.x;
    if (ln) {
      norm_forward(stream, w.ln2_gamma, w.ln2_beta, config, cache.ln2, cache.rms2, cache.work, h2);
    } else {
      clear(cache.ln2);
      clear_any(cache.rms2.rstd);
    }
    // 5. f = FFN(h): cache.ffn keeps h, the pre-activation and the activation.
    ffn_forward_part(ln ? h2 : out, w, config, cache, f);
    if (drop) multiply_in_place(f, cache.drop_ffn);  // f = dropout(f)
    // 6. x = x + f
    if (!config.spec.ablations.residual) {
      copy_into(out, f);
      return;
    }
    add_into(out, stream, f);
    return;
  }
  // Post-norm.
  clear(cache.x);  // the input lives in cache.attn.x
  // 1. a = MHA(x)
  attention_forward(x, w.attn, config, cache, out, ws);
  if (drop) multiply_in_place(out, cache.drop_attn);  // a = dropout(a)
  // 2. r = x + a
  if (config.spec.ablations.residual) add_in_place(out, x);
  // 3. x = ln1(r): its backward needs r (residual1).
  if (ln) {
    copy_into(cache.residual1, out);
    norm_forward(out, w.ln1_gamma, w.ln1_beta, config, cache.ln1, cache.rms1, cache.work, h);
  } else {
    clear(cache.residual1);
    clear(cache.ln1);
    clear_any(cache.rms1.rstd);
  }
  const Tensor<3>& x1 = ln ? h : out;
  if (!config.spec.ablations.ffn) {
    clear(cache.ln2_in);
    clear(cache.ln2);
    clear_any(cache.rms2.rstd);
    clear(cache.ffn.x);
    clear(cache.ffn.pre);
    clear(cache.ffn.act);
    if (ln) copy_into(out, h);
    return;
  }
  // 4. f = FFN(x)
  ffn_forward_part(x1, w, config, cache, f);
  if (drop) multiply_in_place(f, cache.drop_ffn);  // f = dropout(f)
  // 5. r = x + f
  if (config.spec.ablations.residual) add_in_place(f, x1);
  // 6. out = ln2(r): its backward needs r (ln2_in).
  if (!ln) {
    clear(cache.ln2_in);
    clear(cache.ln2);
    clear_any(cache.rms2.rstd);
    copy_into(out, f);
    return;
  }
  copy_into(cache.ln2_in, f);
  norm_forward(f, w.ln2_gamma, w.ln2_beta, config, cache.ln2, cache.rms2, cache.work, out);
}

void block_backward(const Tensor<3>& dout, BlockCache& cache, const BlockWeights& w,
                    const BlockConfig& config, Tensor<3>& dx, BlockWeights& grads) {
  block_backward(dout, cache, w, config, dx, grads, cache.work.scratch);
}

void block_backward(const Tensor<3>& dout, BlockCache& cache, const BlockWeights& w,
                    const BlockConfig& config, Tensor<3>& dx, BlockWeights& grads,
                    fast::Workspace& ws) {
  constexpr const char* kFn = "attn::block_backward";
  // (B, T, C): the attention's input has the block's shape
  const Tensor<3>& x_in = cache.attn.x;
  if (dout.shape() != x_in.shape()) {
    shape_error(kFn, "dout of shape " + shape_str(x_in.shape()) + " (like the block's output)",
                "dout " + shape_str(dout.shape()));
  }
  check_block(x_in, w, config);
  // The gradients are added into, so they must be shaped like the weights, tensor for tensor.
  require(same_block_shapes(grads, w), kFn,
          "grads must be shaped like the weights, tensor for tensor (zeros shaped like them)");
  const bool ln = config.spec.ablations.layer_norm;
  // Scratch (B, T, C) gradients, the cache's work buffers.
  Tensor<3>& d_stream = cache.work.d_stream;
  Tensor<3>& d_sub = cache.work.d_sub;
  Tensor<3>& d_drop = cache.work.d_drop;
  // Dropout y = a * mask passes dy * mask back to its sub-layer (ops/dropout.hpp); the residual
  // path gets dy unchanged. `through(dy, mask)` is the gradient the sub-layer's backward sees.
  const bool drop = config.spec.dropout > 0.0f;
  if (drop) {
    const bool ok = cache.drop_attn.shape() == x_in.shape() &&
                    (!config.spec.ablations.ffn || cache.drop_ffn.shape() == x_in.shape());
    require(ok, kFn,
            "config.spec.dropout > 0 but the cache holds no dropout masks of the block's shape "
            "(fill it with the training forward under the same config)");
  }
  const auto through = [&](const Tensor<3>& dy, const Tensor<3>& mask) -> const Tensor<3>& {
    if (!drop) return dy;
    multiply_into(d_drop, dy, mask);
    return d_drop;
  };
  if (config.norm == NormPlacement::pre) {
    // Backward through x2 = x1 + f(ln2(x1)), then x1 = x + a(ln1(x)): each residual addition
    // passes its gradient to both branches unchanged, and the branch's gradient is added back.
    const Tensor<3>* g = &dout;  // dL/d(stream after attention), once the FFN step is undone
    if (config.spec.ablations.ffn) {
      // 6-5. f = FFN(h2): dh2 = ffn_backward(df), df = dout.
      ffn_backward_part(through(dout, cache.drop_ffn), cache, w, config, d_sub, grads, ws);
      // 4. h2 = ln2(x1)
      if (ln) {
        norm_backward(d_sub, cache.residual1, w.ln2_gamma, config, cache.ln2, cache.rms2,
                      cache.work, d_sub, grads.ln2_gamma, grads.ln2_beta, ws);
      }
      // 6. x2 = x1 + f: dx1 = dout + (the FFN branch), or the branch alone without residual.
      if (config.spec.ablations.residual) {
        add_into(d_stream, dout, d_sub);
      } else {
        copy_into(d_stream, d_sub);
      }
      g = &d_stream;
    }
    // 2. a = MHA(h1)
    attention_backward(through(*g, cache.drop_attn), cache, w.attn, config, d_sub, grads.attn, ws);
    // 1. h1 = ln1(x)
    if (ln) {
      norm_backward(d_sub, cache.x, w.ln1_gamma, config, cache.ln1, cache.rms1, cache.work, d_sub,
                    grads.ln1_gamma, grads.ln1_beta, ws);
    }
    // 3. x1 = x + a
    if (config.spec.ablations.residual) {
      add_into(dx, *g, d_sub);
    } else {
      copy_into(dx, d_sub);
    }
    return;
  }
  // Post-norm: out = ln2(r2), r2 = x1 + f(x1), x1 = ln1(r1), r1 = x + a(x).
  const Tensor<3>* g = &dout;  // dL/dx1
  if (config.spec.ablations.ffn) {
    // 6. out = ln2(r2)
    const Tensor<3>* d_r2 = &dout;
    if (ln) {
      norm_backward(dout, cache.ln2_in, w.ln2_gamma, config, cache.ln2, cache.rms2, cache.work,
                    d_stream, grads.ln2_gamma, grads.ln2_beta, ws);
      d_r2 = &d_stream;
    }
    // 4. f = FFN(x1)
    ffn_backward_part(through(*d_r2, cache.drop_ffn), cache, w, config, d_sub, grads, ws);
    // 5. r2 = x1 + f
    if (config.spec.ablations.residual) add_into(d_sub, d_sub, *d_r2);
    g = &d_sub;
  }
  // 3. x1 = ln1(r1)
  if (ln) {
    norm_backward(*g, cache.residual1, w.ln1_gamma, config, cache.ln1, cache.rms1, cache.work,
                  d_stream, grads.ln1_gamma, grads.ln1_beta, ws);
    g = &d_stream;
  }
  // 1. a = MHA(x), 2. r1 = x + a
  attention_backward(through(*g, cache.drop_attn), cache, w.attn, config, dx, grads.attn, ws);
  if (config.spec.ablations.residual) add_into(dx, dx, *g);
}

BlockWeights block_zeros_like(const BlockWeights& w) {
  BlockWeights g;
  visit_block_params(g, w, nullptr, -1, [](const ParamRow&, auto& zeros, const auto& like) {
    zeros = xt::zeros<float>(like.shape());
  });
  return g;
}

std::size_t activation_floats(const BlockCache& c) {
  return c.x.size() + c.ln1.mean.size() + c.ln1.rstd.size() + c.ln2.mean.size() +
         c.ln2.rstd.size() + c.ln1_in.size() + c.ln1_out.size() + c.ln2_in.size() +
         c.ln2_out.size() + c.attn.x.size() + c.attn.qkv.size() + c.attn.weights.size() +
         c.attn.lse.size() + c.attn.heads.size() + c.residual1.size() + c.ffn.x.size() +
         c.ffn.pre.size() + c.ffn.act.size() + c.drop_attn.size() + c.drop_ffn.size() +
         c.rms1.rstd.size() + c.rms2.rstd.size() + c.swiglu.x.size() + c.swiglu.a.size() +
         c.swiglu.u.size() + c.swiglu.h.size();
}

std::size_t block_activation_floats(std::size_t B, std::size_t T, std::size_t C, std::size_t F,
                                    std::size_t H, const BlockConfig& config) {
  const std::size_t btc = B * T * C;
  const bool ln = config.spec.ablations.layer_norm, ffn = config.spec.ablations.ffn;
  // Attention: its input, q|k|v, the (B, H, T, T) weights, the merged heads. With KV key/value
  // heads (GQA) k and v hold B T KV hs floats each. Without keep_weights, from
  // T = fast::kFlashMinT on, multi-head attention without a window (RoPE or not) runs the flash
  // kernel: its log-sum-exp (B, H, T) in place of the weights.
  const std::size_t kv = H == 0 ? 0 : B * T * config.spec.n_kv_heads * (C / H);
  const bool flash =
      fast::takes_flash(T, config.keep_weights, H, config.spec.n_kv_heads, config.spec.window);
  std::size_t n = btc + btc + 2 * kv + (flash ? B * H * T : B * H * T * T) + btc;
  // FFN: its input, the pre-activation and the activation (B, T, F) each; SwiGLU keeps three
  // (B, T, F): a, u and h.
  if (ffn) n += btc + (config.spec.ffn == FfnKind::swiglu ? 3 : 2) * B * T * F;
  // Each LayerNorm used: its input (B, T, C) and the per-token mean and rstd (2 B T). Pre-norm:
  // ln1's input is the block input, ln2's the stream after attention; post-norm: ln1's is the
  // stream after attention, ln2's the stream after the FFN. The LayerNorm outputs are not
  // stored again: they are the sub-layers' inputs above (or the block's output).
  // (RMSNorm keeps rstd alone: B T.)
  const std::size_t stats = config.spec.normalization == Normalization::rmsnorm ? B * T : 2 * B * T;
  if (ln) n += btc + stats;         // ln1
  if (ln && ffn) n += btc + stats;  // ln2
  // Dropout: one (B, T, C) mask per sub-layer.
  if (config.spec.dropout > 0.0f) n += ffn ? 2 * btc : btc;
  return n;
}

std::size_t block_param_count(std::size_t C, std::size_t F) {
  // w_q, w_k, w_v, w_o | w1, w2, b1, b2 | ln1 and ln2 gamma, beta
  return 4 * C * C + (2 * C * F + F + C) + 4 * C;
}

namespace {
// hs = C / H, checked.
double head_size(std::size_t C, std::size_t H, const char* function) {
  require(H >= 1 && C % H == 0, function, [&] {
    return "n_heads = " + std::to_string(H) + " does not divide C = " + std::to_string(C);
  });
  return static_cast<double>(C / H);
}
}  // namespace

double mha_forward_flops(std::size_t B, std::size_t T, std::size_t C, std::size_t H) {
  const double hs = head_size(C, H, "attn::mha_forward_flops");
  const double b = static_cast<double>(B), t = static_cast<double>(T), c = static_cast<double>(C);
  const double h = static_cast<double>(H);
  // A (M, K) @ (K, N) product costs 2 M K N flops (one multiply and one add per term).
  // Four (B*T, C) @ (C, C) projections: q, k, v and the output.
  const double projections = 2.0 * b * t * (4.0 * c * c);
  // Per head: scores q @ k^T (T, hs) @ (hs, T) and weights @ v (T, T) @ (T, hs), 2 T^2 hs each.
  const double attention = 4.0 * b * h * t * t * hs;
  return projections + attention;
}

double block_forward_flops(std::size_t B, std::size_t T, std::size_t C, std::size_t F,
                           std::size_t H) {
  (void)head_size(C, H, "attn::block_forward_flops");
  const double b = static_cast<double>(B), t = static_cast<double>(T), c = static_cast<double>(C);
  const double f = static_cast<double>(F);
  // Attention as above, plus the FFN's (B*T, C) @ (C, F) and (B*T, F) @ (F, C). LayerNorm,
  // softmax, GELU and the residual additions are O(B T C) or O(B H T^2): left out.
  return mha_forward_flops(B, T, C, H) + 2.0 * b * t * (2.0 * c * f);
}

std::size_t parameter_count(const BlockWeights& w) {
  return w.attn.w_q.size() + w.attn.w_k.size() + w.attn.w_v.size() + w.attn.w_o.size() +
         w.ln1_gamma.size() + w.ln1_beta.size() + w.ln2_gamma.size() + w.ln2_beta.size() +
         w.ffn.w1.size() + w.ffn.b1.size() + w.ffn.w2.size() + w.ffn.b2.size() +
         w.swiglu.w_gate.size() + w.swiglu.w_up.size() + w.swiglu.w_down.size();
}

}  // namespace attn
