// kvcache.cpp: generation with a KV cache (chapter 10). The model of chapter 07 (model.cpp),
// computed row by row: a prefill runs the prompt's positions through the layers in one batched
// pass and keeps every layer's keys and values; a step then runs one new position per sequence
// and attends over what is kept. The same kernels as lm_forward (BLAS GEMMs, the LayerNorm and
// GELU kernels, the attention kernel), on buffers allocated once.
#include "attn/model/kvcache.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attn/fast/attention.hpp"
#include "attn/fast/layernorm.hpp"
#include "attn/fast/rmsnorm.hpp"
#include "attn/fast/rope.hpp"
#include "attn/fast/swiglu.hpp"
#include "attn/ops/attention.hpp"
#include "attn/core/check.hpp"
#include "attn/fast/ffn.hpp"
#include "attn/fast/gemm.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/linear.hpp"
#include "attn/model/sample.hpp"
#include "attn/model/params.hpp"
#include "model_internal.hpp"

namespace attn {

namespace {

constexpr float kEps = 1e-5f;  // every LayerNorm of the model (model.cpp)

// a * b, or std::invalid_argument when the product does not fit in size_t.
std::size_t checked_mul(std::size_t a, std::size_t b, const char* function) {
  if (a != 0 && b > std::numeric_limits<std::size_t>::max() / a) {
    require(false, function, [&] { return fmt::format("{} x {} is too large", a, b); });
  }
  return a * b;
}

template <std::size_t N>
bool has_shape(const Tensor<N>& t, const std::array<std::size_t, N>& want) {
  return std::equal(want.begin(), want.end(), t.shape().begin());
}

// Both caches run pre-norm blocks with any activation, FFN width and output head; the ladder's
// variants without LayerNorm, residuals, FFN or projection are not supported.
void check_variant(const ModelSpec& config, const char* function) {
  const Ablations& a = config.ablations;  // the head may be tied or not
  if (!(a.layer_norm && a.residual && a.ffn && a.attn_proj)) {
    require(false, function,
            "the KV cache runs pre-norm blocks with LayerNorm, residuals, an FFN and an output "
            "projection; this model is one of chapter 09's reduced variants");
  }
}

// The parts of `config` that chapter 10's KvCache does not run, named as model.txt names them:
// "positions = rope, window = 4". Formatted only when the check below fails.
std::string rolling_parts(const ModelSpec& c) {
  std::string parts;
  const auto add = [&](const std::string& part) { parts += (parts.empty() ? "" : ", ") + part; };
  if (!c.learned_positions()) add(fmt::format("positions = {}", positions_name(c.positions)));
  if (c.n_kv_heads != c.n_heads) add(fmt::format("n_kv_heads = {}", c.n_kv_heads));
  if (c.window) add(fmt::format("window = {}", *c.window));
  if (c.normalization != Normalization::layernorm)
    add(fmt::format("normalization = {}", normalization_name(c.normalization)));
  if (c.ffn != FfnKind::mlp) add(fmt::format("ffn = {}", ffn_kind_name(c.ffn)));
  if (!c.bias) add("bias = false");
  return parts;
}

// Chapter 10's KvCache runs chapter 07's model only: a position table, multi-head attention
// without a window, LayerNorm and the MLP with biases (GPT-2's attention biases or not). A model
// with chapter 11's parts generates through the rolling cache: refused here by name, before a
// step reads a position table the model does not have or skips a part it has.
void check_kv_parts(const ModelSpec& config, const char* function) {
  check_variant(config, function);
  if (uses_rolling_cache(config)) {
    require(false, function, [&] {
      return "a KvCache runs chapter 07's parts only; this model has " + rolling_parts(config) +
             ": use a RollingKvCache (rolling_cache_init, lm_step_rolling)";
    });
  }
}

// Every block's weights have their rows' shapes in the parameter table (model/params.hpp) for
// this spec, or are empty where the model has no such tensor: both caches write them into
// buffers of the spec's widths. One line names the first that does not: "h1.w1 is (8, 16),
// expected (8, 32)". Nothing is formatted unless a check fails: this runs for every step.
void check_blocks(const LmWeights& w, const ModelSpec& config, const char* function) {
  const ParamDims dims = param_dims(config);
  for (std::size_t l = 0; l < w.blocks.size(); ++l) {
    visit_block_params(w.blocks[l], w.blocks[l], &dims, static_cast<int>(l),
                       [&](const ParamRow& row, const auto& t, const auto&) {
                         if (!fits_row(row, t))
                           require(false, function, [&] { return param_misfit(row, t); });
                       });
  }
}

// Every row of the (rows, n) column block at `out` (rows `stride` floats apart) starts as the bias
// (n,); a GEMM with beta = 1 then adds the product. Returns that beta: 1, or 0 with no bias (the
// GEMM then overwrites, as in a model without attention biases).
float fill_bias_strided(float* out, std::size_t rows, std::size_t stride, const Vector& bias) {
  if (bias.size() == 0) return 0.0f;
  for (std::size_t r = 0; r < rows; ++r) std::copy(bias.begin(), bias.end(), out + r * stride);
  return 1.0f;
}

// The cache must have been made for this config: run_positions writes every buffer of it by the
// config's sizes, so each is checked, the workspace too (a cache made for a model with a
// narrower FFN has a narrower `hidden`, which would be written past).
void check_cache(const KvCache& c, const ModelSpec& config, const char* function) {
  const std::size_t H = config.n_heads, T_max = config.block_size, C = config.n_embd;
  const std::size_t hs = H == 0 ? 0 : C / H, rows = c.batch * T_max;
  const std::array<std::size_t, 4> want{c.batch, H, T_max, hs};
  bool ok = c.batch > 0 && c.keys.size() == config.n_layers && c.values.size() == config.n_layers &&
            c.length <= T_max && has_shape<2>(c.logits, {c.batch, config.vocab_size}) &&
            has_shape<2>(c.x, {rows, C}) && has_shape<2>(c.h, {rows, C}) &&
            has_shape<2>(c.qkv, {rows, 3 * C}) && has_shape<2>(c.att, {rows, C}) &&
            has_shape<2>(c.proj, {rows, C}) && has_shape<2>(c.hidden, {rows, config.ffn_hidden}) &&
            c.scratch.size() >= fast::attention_scratch_floats(T_max, T_max, hs);
  for (std::size_t l = 0; ok && l < c.keys.size(); ++l)
    ok = has_shape<4>(c.keys[l], want) && has_shape<4>(c.values[l], want);
  if (!ok) require(false, function, "the cache was not made by kv_cache_init for this config");
}

void check_ids(const int* tokens, std::size_t count, std::size_t V, const char* function) {
  for (std::size_t i = 0; i < count; ++i) {
    if (tokens[i] < 0 || static_cast<std::size_t>(tokens[i]) >= V) {
      require(false, function, [&] {
        return fmt::format("token id {} at index {} is outside [0, {})", tokens[i], i, V);
      });
    }
  }
}

// acc[i] = add[i] + acc[i]: the residual connection (same order of operands as block.cpp).
void residual_add(float* acc, const float* add, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) acc[i] = add[i] + acc[i];
}

// Every row of `out` (rows, n) starts as the bias (n,); a GEMM with beta = 1 then adds the
// product, as attn::linear and the FFN do.
void fill_bias(float* out, std::size_t rows, const Vector& bias) {
  const std::size_t n = bias.size();
  for (std::size_t r = 0; r < rows; ++r) std::copy(bias.begin(), bias.end(), out + r * n);
}

// The KV append, the one copy both kv_append (chapter 10's exercise) and the model run: for the
// B sequences, T new positions each, row b * T + t of `rows` (H heads of hs floats side by side,
// row_stride floats from one row to the next) goes to the cache (B, H, T_max, hs) at position
// pos0 + t: cache[b, h, pos0 + t, :] = rows[b * T + t, h*hs : (h+1)*hs].
void kv_append_rows(float* cache, std::size_t H, std::size_t T_max, std::size_t hs,
                    const float* rows, std::size_t row_stride, std::size_t B, std::size_t T,
                    std::size_t pos0) {
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      const float* row = rows + (b * T + t) * row_stride;
      for (std::size_t h = 0; h < H; ++h)
        std::copy_n(row + h * hs, hs, cache + ((b * H + h) * T_max + pos0 + t) * hs);
    }
}

// The model over T new positions per sequence, pos0..pos0+T-1, for the B sequences of the cache:
// the token of sequence b at new position t is tokens[b * tok_stride + t]. Either a prefill
// (pos0 = 0, causal over the T new positions) or a step (T = 1, its query sees every cached key).
// Appends each layer's keys and values at those positions. With `finish`, the last layer runs
// whole and the logits of the last new position land in cache.logits (B, V); without it (the
// first T-1 positions of a prefill), the last layer stops after its keys and values: nothing
// downstream of them is needed until the next token.
void run_positions(KvCache& c, const int* tokens, std::size_t tok_stride, std::size_t T,
                   std::size_t pos0, const LmWeights& w, const ModelSpec& config, bool finish) {
  const std::size_t B = c.batch, C = config.n_embd, H = config.n_heads, hs = C / H;
  const std::size_t F = config.ffn_hidden, V = config.vocab_size, T_max = config.block_size;
  const std::size_t L = config.n_layers;
  const std::size_t rows = B * T;  // every new position of every sequence
  const std::size_t S = pos0 + T;  // keys visible after this call
  float* x = c.x.data();
  float* h = c.h.data();
  float* qkv = c.qkv.data();
  float* att = c.att.data();
  float* proj = c.proj.data();
  float* hidden = c.hidden.data();

  // 1. Embeddings of the new positions: x[b, t] = wte[token] + wpe[pos0 + t].   (rows, C)
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      const auto id = static_cast<std::size_t>(tokens[b * tok_stride + t]);
      const float* tok = w.wte.data() + id * C;
      const float* pos = w.wpe.data() + (pos0 + t) * C;
      float* out = x + (b * T + t) * C;
      for (std::size_t j = 0; j < C; ++j) out[j] = tok[j] + pos[j];
    }

  for (std::size_t l = 0; l < L; ++l) {
    const BlockWeights& bw = w.blocks[l];
    const bool kv_only = !finish && l + 1 == L;
    // 2. h = ln1(x)                                                           (rows, C)
    fast::layer_norm_rows(x, rows, C, bw.ln1_gamma.data(), bw.ln1_beta.data(), kEps, h);
    // 3. k, v (and q) of the new rows, side by side in qkv: (rows, C) @ (C, C) -> (rows, C)
    //    each, as [q | k | v] of width 3C like mha_forward. With attention biases (GPT-2), each
    //    starts as its bias: k = h w_k + b_k, v = h w_v + b_v, q = h w_q + b_q.
    const float beta_k = fill_bias_strided(qkv + C, rows, 3 * C, bw.attn.b_k);
    fast::gemm_strided(rows, C, C, 1.0f, h, C, false, bw.attn.w_k.data(), C, false, beta_k, qkv + C,
                       3 * C);
    const float beta_v = fill_bias_strided(qkv + 2 * C, rows, 3 * C, bw.attn.b_v);
    fast::gemm_strided(rows, C, C, 1.0f, h, C, false, bw.attn.w_v.data(), C, false, beta_v,
                       qkv + 2 * C, 3 * C);
    // 4. Append: head hh of k at row (b, t) goes to keys[l][b, hh, pos0 + t, :]; same for v.
    //    (rows, C) -> (B, H, T_max, hs) at positions pos0..pos0+T-1
    float* kc = c.keys[l].data();
    float* vc = c.values[l].data();
    kv_append_rows(kc, H, T_max, hs, qkv + C, 3 * C, B, T, pos0);      // k: columns C..2C-1
    kv_append_rows(vc, H, T_max, hs, qkv + 2 * C, 3 * C, B, T, pos0);  // v: columns 2C..3C-1
    if (kv_only) break;  // the last layer of a prefill: its keys and values are all we need
    const float beta_q = fill_bias_strided(qkv, rows, 3 * C, bw.attn.b_q);
    fast::gemm_strided(rows, C, C, 1.0f, h, C, false, bw.attn.w_q.data(), C, false, beta_q, qkv,
                       3 * C);
    // 5. Attention of the new queries over the S cached keys and values of each head:
    //    (T, hs) @ (hs, S) -> (T, S), softmax, @ (S, hs) -> (T, hs), into att's column block.
    //    A step (T = 1) needs no mask: the cache holds only the past and the present.
    fast::attention_strided(B, H, T, S, hs, qkv, {T * 3 * C, hs, 3 * C}, kc,
                            {H * T_max * hs, T_max * hs, hs}, vc, {H * T_max * hs, T_max * hs, hs},
                            att, {T * C, hs, C}, /*causal=*/T > 1, c.scratch.data());
    // 6. x = x + att @ w_o (+ b_o)                         (rows, C) @ (C, C) -> (rows, C)
    const float beta_o = fill_bias_strided(proj, rows, C, bw.attn.b_o);
    fast::gemm_strided(rows, C, C, 1.0f, att, C, false, bw.attn.w_o.data(), C, false, beta_o, proj,
                       C);
    residual_add(x, proj, rows * C);
    // 7. x = x + FFN(ln2(x)): (rows, C) @ (C, F) + b1, activation, @ (F, C) + b2
    fast::layer_norm_rows(x, rows, C, bw.ln2_gamma.data(), bw.ln2_beta.data(), kEps, h);
    fill_bias(hidden, rows, bw.ffn.b1);
    fast::gemm_strided(rows, F, C, 1.0f, h, C, false, bw.ffn.w1.data(), F, false, 1.0f, hidden, F);
    fast::activate(std::span<float>(hidden, rows * F), config.activation);
    fill_bias(proj, rows, bw.ffn.b2);
    fast::gemm_strided(rows, C, F, 1.0f, hidden, F, false, bw.ffn.w2.data(), C, false, 1.0f, proj,
                       C);
    residual_add(x, proj, rows * C);
  }
  if (!finish) return;
  // 8. Logits of the last new position of each sequence only: ln_f, then @ wte^T (tied) or
  //    @ lm_head + lm_head_bias.   (B, C) @ (C, V) -> (B, V)
  for (std::size_t b = 0; b < B; ++b) {
    const std::size_t r = b * T + T - 1;
    fast::layer_norm_rows(x + r * C, 1, C, w.ln_f_gamma.data(), w.ln_f_beta.data(), kEps,
                          h + b * C);
  }
  if (config.ablations.tied_head) {
    fast::gemm(B, V, C, 1.0f, h, false, w.wte.data(), /*trans_b=*/true, 0.0f, c.logits.data());
  } else {
    fill_bias(c.logits.data(), B, w.lm_head_bias);
    fast::gemm(B, V, C, 1.0f, h, false, w.lm_head.data(), /*trans_b=*/false, 1.0f, c.logits.data());
  }
}

}  // namespace

void kv_append(Tensor<4>& cache, const Matrix& rows, std::size_t pos) {
  constexpr const char* kFn = "attn::kv_append";
  const std::size_t B = cache.shape()[0], H = cache.shape()[1], T_max = cache.shape()[2];
  const std::size_t hs = cache.shape()[3], C = H * hs;
  if (rows.shape()[0] != B || rows.shape()[1] != C) {
    shape_error(
        kFn,
        fmt::format("rows (B, H*hs) = ({}, {}) for a cache {}", B, C, shape_str(cache.shape())),
        shape_str(rows.shape()));
  }
  if (pos >= T_max) {
    require(false, kFn, [&] {
      return fmt::format("position {} is outside the cache (T_max = {})", pos, T_max);
    });
  }
  // (B, C) -> (B, H, 1, hs) at position pos: one new position per sequence.
  kv_append_rows(cache.data(), H, T_max, hs, rows.data(), C, B, 1, pos);
}

Matrix attend_cache(const Matrix& q, const Tensor<4>& keys, const Tensor<4>& values,
                    std::size_t n) {
  constexpr const char* kFn = "attn::attend_cache";
  const std::size_t B = keys.shape()[0], H = keys.shape()[1], T_max = keys.shape()[2];
  const std::size_t hs = keys.shape()[3], C = H * hs;
  if (values.shape() != keys.shape() || q.shape()[0] != B || q.shape()[1] != C || hs == 0) {
    shape_error(kFn, "q (B, H*hs), keys and values (B, H, T_max, hs)",
                "q " + shape_str(q.shape()) + ", keys " + shape_str(keys.shape()) + ", values " +
                    shape_str(values.shape()));
  }
  if (n == 0 || n > T_max) {
    require(false, kFn,
            [&] { return fmt::format("n must be in [1, {}] (T_max), got {}", T_max, n); });
  }
  Matrix out(std::array<std::size_t, 2>{B, C});  // (B, C)
  Vector scratch(std::array<std::size_t, 1>{fast::attention_scratch_floats(1, n, hs)});
  // One query (T = 1) over n keys per (b, h), the attention kernel of chapters 04-07:
  //   (1, hs) @ (hs, n) -> (1, n), softmax, @ (n, hs) -> (1, hs)
  const fast::HeadStrides cached{H * T_max * hs, T_max * hs, hs};
  fast::attention_strided(B, H, 1, n, hs, q.data(), {C, hs, C}, keys.data(), cached, values.data(),
                          cached, out.data(), {C, hs, C}, /*causal=*/false, scratch.data());
  return out;
}

KvCache kv_cache_init(const ModelSpec& config, std::size_t batch) {
  constexpr const char* kFn = "attn::kv_cache_init";
  const std::size_t V = config.vocab_size, T_max = config.block_size, C = config.n_embd;
  const std::size_t H = config.n_heads, L = config.n_layers;
  require(batch >= 1, kFn, "batch must be at least 1, got 0");
  check_kv_parts(config, kFn);
  const std::size_t rows = checked_mul(batch, T_max, kFn);
  (void)checked_mul(checked_mul(rows, 3 * C, kFn), L + 1, kFn);  // the largest buffers fit
  KvCache c;
  c.batch = batch;
  const std::array<std::size_t, 4> shape{batch, H, T_max, C / H};  // (B, H, T_max, hs)
  for (std::size_t l = 0; l < L; ++l) {
    c.keys.emplace_back(shape);
    c.values.emplace_back(shape);
  }
  c.x = Matrix(std::array<std::size_t, 2>{rows, C});
  c.h = Matrix(std::array<std::size_t, 2>{rows, C});
  c.qkv = Matrix(std::array<std::size_t, 2>{rows, 3 * C});
  c.att = Matrix(std::array<std::size_t, 2>{rows, C});
  c.proj = Matrix(std::array<std::size_t, 2>{rows, C});
  c.hidden = Matrix(std::array<std::size_t, 2>{rows, config.ffn_hidden});
  c.scratch =
      Vector(std::array<std::size_t, 1>{fast::attention_scratch_floats(T_max, T_max, C / H)});
  c.logits = Matrix(std::array<std::size_t, 2>{batch, V});
  return c;
}

std::size_t kv_cache_floats(const ModelSpec& config, std::size_t batch) {
  // Keys and values (2), per layer (L), per sequence (B), per position (T_max), C = H * hs each.
  return 2 * config.n_layers * batch * config.block_size * config.n_embd;
}

std::size_t kv_cache_held_floats(const KvCache& cache) {
  std::size_t n = 0;
  for (const Tensor<4>& k : cache.keys) n += k.size();
  for (const Tensor<4>& v : cache.values) n += v.size();
  return n;
}

std::size_t kv_cache_workspace_floats(const KvCache& c) {
  return c.x.size() + c.h.size() + c.qkv.size() + c.att.size() + c.proj.size() + c.hidden.size() +
         c.scratch.size() + c.logits.size();
}

KvWork operator-(const KvWork& b, const KvWork& a) {
  return {b.prefills - a.prefills, b.steps - a.steps, b.positions - a.positions};
}

const Matrix& lm_prefill(KvCache& cache, std::span<const int> tokens, const LmWeights& w,
                         const ModelSpec& config) {
  constexpr const char* kFn = "attn::lm_prefill";
  check_kv_parts(config, kFn);
  check_cache(cache, config, kFn);
  detail::check_weights(w, config, kFn);
  check_blocks(w, config, kFn);
  const std::size_t B = cache.batch, T_max = config.block_size;
  if (tokens.empty() || tokens.size() % B != 0 || tokens.size() / B > T_max) {
    require(false, kFn, [&] {
      return fmt::format("expected B = {} sequences of 1 to {} tokens (T_max), got {} ids", B,
                         T_max, tokens.size());
    });
  }
  const std::size_t T = tokens.size() / B;
  check_ids(tokens.data(), tokens.size(), config.vocab_size, kFn);
  // 1. Positions 0..T-2 of every sequence in one batched pass (causal), keys and values only at
  //    the last layer. 2. Position T-1 as a step: it attends over all T keys and gives the logits.
  cache.length = 0;
  if (T > 1) run_positions(cache, tokens.data(), T, T - 1, 0, w, config, /*finish=*/false);
  cache.length = T - 1;
  run_positions(cache, tokens.data() + (T - 1), T, 1, T - 1, w, config, /*finish=*/true);
  cache.length = T;
  ++cache.work.prefills;
  cache.work.positions += tokens.size();
  return cache.logits;
}

const Matrix& lm_step(KvCache& cache, std::span<const int> tokens, const LmWeights& w,
                      const ModelSpec& config) {
  constexpr const char* kFn = "attn::lm_step";
  check_kv_parts(config, kFn);
  check_cache(cache, config, kFn);
  detail::check_weights(w, config, kFn);
  check_blocks(w, config, kFn);
  if (tokens.size() != cache.batch) {
    require(false, kFn, [&] {
      return fmt::format("expected one token per sequence (B = {}), got {}", cache.batch,
                         tokens.size());
    });
  }
  if (cache.length >= config.block_size) {
    require(false, kFn, [&] {
      return fmt::format("the cache is full ({} positions, block_size); crop and prefill again",
                         cache.length);
    });
  }
  check_ids(tokens.data(), tokens.size(), config.vocab_size, kFn);
  run_positions(cache, tokens.data(), 1, 1, cache.length, w, config, /*finish=*/true);
  ++cache.length;
  ++cache.work.steps;
  cache.work.positions += tokens.size();
  return cache.logits;
}

// ---------------------------------------------------------------------------------------------
// The rolling cache (chapter 11's parts).

bool uses_rolling_cache(const ModelSpec& config) {
  return !config.learned_positions() || !config.default_parts();
}

namespace {

std::size_t rolling_capacity(const ModelSpec& c) { return c.window.value_or(c.block_size); }

// rows (n, in) @ w (in, out) (+ b (out,), when not empty) -> y (n, out): the training
// forward's GEMM.
void project_rows(const float* x, std::size_t n, const Matrix& w, float* y, const Vector& b) {
  const std::size_t out = w.shape()[1];
  const float beta = fill_bias_strided(y, n, out, b);
  fast::gemm(n, out, w.shape()[0], 1.0f, x, false, w.data(), false, beta, y);
}

// t resized to `shape` only when it has another (a step's buffers: sized once, then reused).
template <class T>
void fit(T& t, const typename T::shape_type& shape) {
  if (t.shape() != shape) t.resize(shape);
}

// The norm of `config` over B rows of C, x -> y (layer_norm_rows or rms_norm_rows). A LayerNorm
// without biases adds `zeros` (C,) as its beta.
void norm_rows(const Matrix& x, const Vector& gamma, const Vector& beta, const ModelSpec& config,
               const Vector& zeros, Matrix& y) {
  const std::size_t rows = x.shape()[0], C = x.shape()[1];
  if (config.normalization == Normalization::rmsnorm) {
    fast::rms_norm_rows(x.data(), rows, C, gamma.data(), static_cast<double>(kEps), y.data());
    return;
  }
  fast::layer_norm_rows(x.data(), rows, C, gamma.data(),
                        beta.size() == 0 ? zeros.data() : beta.data(), kEps, y.data());
}

// Rotates the heads of hs features in each of the B rows of `x` (B, n * hs) by position p
// (fast/rope.hpp: attn::rope's angles and rounding), its table built in ws.
void rope_rows(Matrix& x, std::size_t hs, double theta, std::size_t p, fast::Workspace& ws) {
  fast::rope_in_place({x.data(), x.shape()[0], 1, x.shape()[1], x.shape()[1]}, hs, theta, p,
                      /*inverse=*/false, ws);
}

void check_rolling(const RollingKvCache& c, const ModelSpec& config, const char* fn) {
  const std::size_t H = config.n_heads, KV = config.n_kv_heads;
  const std::size_t hs = H == 0 ? 0 : config.n_embd / H;
  const std::array<std::size_t, 4> want{c.batch, KV, rolling_capacity(config), hs};
  bool ok = c.batch > 0 && c.capacity == rolling_capacity(config) &&
            c.keys.size() == config.n_layers && c.values.size() == config.n_layers &&
            c.logits.shape()[0] == c.batch && c.logits.shape()[1] == config.vocab_size;
  for (std::size_t l = 0; ok && l < c.keys.size(); ++l)
    ok = has_shape<4>(c.keys[l], want) && has_shape<4>(c.values[l], want);
  if (!ok) require(false, fn, "the cache was not made by rolling_cache_init for this config");
}

}  // namespace

RollingKvCache rolling_cache_init(const ModelSpec& config, std::size_t batch) {
  constexpr const char* kFn = "attn::rolling_cache_init";
  require(batch >= 1, kFn, "batch must be at least 1, got 0");
  check_variant(config, kFn);
  const std::size_t KV = config.n_kv_heads, hs = config.n_embd / config.n_heads;
  RollingKvCache c;
  c.batch = batch;
  c.capacity = rolling_capacity(config);
  (void)checked_mul(checked_mul(checked_mul(batch, KV, kFn), c.capacity, kFn), hs, kFn);
  const std::array<std::size_t, 4> shape{batch, KV, c.capacity, hs};  // (B, KV, capacity, hs)
  for (std::size_t l = 0; l < config.n_layers; ++l) {
    c.keys.emplace_back(shape);
    c.values.emplace_back(shape);
  }
  c.logits = Matrix(std::array<std::size_t, 2>{batch, config.vocab_size});
  return c;
}

std::size_t rolling_cache_floats(const ModelSpec& config, std::size_t batch) {
  const std::size_t hs = config.n_embd / config.n_heads;
  return 2 * config.n_layers * batch * rolling_capacity(config) * config.n_kv_heads * hs;
}

namespace {

// One position per sequence through the rolling cache (lm_step_rolling without its checks and
// its count in cache.work).
const Matrix& step_rolling(RollingKvCache& c, std::span<const int> tokens, const LmWeights& w,
                           const ModelSpec& config) {
  const std::size_t B = c.batch, C = config.n_embd, H = config.n_heads, hs = C / H;
  const std::size_t KV = config.n_kv_heads, group = H / KV, V = config.vocab_size;
  const std::size_t W = c.capacity, p = c.length;  // the new token's absolute position
  const bool rope = config.rope(), table = config.learned_positions();
  // Positions visible to the new query: the last min(p + 1, W) (a window W, or T_max keys).
  // They sit in slots 0..n-1: before the ring is full, slot j holds position j; once full,
  // all W slots are visible.
  const std::size_t n = std::min(p + 1, W);
  const std::size_t slot = p % W;

  // The step's buffers, sized by the first step (nothing is allocated after it).
  RollingStepBuffers& s = c.step;
  fit(s.x, {B, C});
  fit(s.h, {B, C});
  fit(s.q, {B, C});
  fit(s.heads, {B, C});
  fit(s.proj, {B, C});
  fit(s.k, {B, KV * hs});
  fit(s.v, {B, KV * hs});
  fit(s.ffn_in, {B, 1, C});
  if (s.zeros.size() != C) s.zeros = xt::zeros<float>({C});
  float* scratch = fast::at_least(s.attn_scratch, fast::attention_scratch_floats(group, W, hs));
  Matrix &x = s.x, &h = s.h, &q = s.q, &k = s.k, &v = s.v, &heads = s.heads, &proj = s.proj;

  // 1. x = wte[token] (+ wpe[p] with learned positions)                        (B, C)
  for (std::size_t b = 0; b < B; ++b) {
    const float* tok = w.wte.data() + static_cast<std::size_t>(tokens[b]) * C;
    for (std::size_t j = 0; j < C; ++j) x(b, j) = table ? tok[j] + w.wpe(p, j) : tok[j];
  }
  // The model's score-level parts (attention_options), computed in the kernel's score loop:
  // step 5 runs K/V head g's `group` query heads as its rows, so query head g * group + r is
  // (kernel head g, row r), every row at position p, in slot `slot` of the ring of W slots.
  fast::ScoreBias score_bias;
  score_bias.parts = attention_options(config, p).score;
  if (score_bias.parts.any()) {
    score_bias.n_heads = H;
    score_bias.head = group;
    score_bias.row = 1;
    score_bias.query = slot;
    score_bias.step = 0;
    score_bias.ring = W;
  }
  for (std::size_t l = 0; l < config.n_layers; ++l) {
    const BlockWeights& bw = w.blocks[l];
    // 2. h = norm1(x); q = h w_q (B, H hs), k = h w_k and v = h w_v (B, KV hs)
    norm_rows(x, bw.ln1_gamma, bw.ln1_beta, config, s.zeros, h);
    project_rows(h.data(), B, bw.attn.w_q, q.data(), bw.attn.b_q);  // (+ b_q, b_k, b_v: GPT-2)
    project_rows(h.data(), B, bw.attn.w_k, k.data(), bw.attn.b_k);
    project_rows(h.data(), B, bw.attn.w_v, v.data(), bw.attn.b_v);
    // 3. RoPE at the absolute position p, on q and k (cached rotated: never rotated again).
    if (rope) {
      rope_rows(q, hs, config.rope_theta, p, c.scratch);
      rope_rows(k, hs, config.rope_theta, p, c.scratch);
    }
    // 4. k and v into slot p % W, over position p - W (which has left every window).
    float* kc = c.keys[l].data();
    float* vc = c.values[l].data();
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t g = 0; g < KV; ++g) {
        std::copy_n(&k(b, g * hs), hs, kc + ((b * KV + g) * W + slot) * hs);
        std::copy_n(&v(b, g * hs), hs, vc + ((b * KV + g) * W + slot) * hs);
      }
    // 5. Query head hh reads K/V head g = hh / (H / KV) over the n visible slots: the fast
    //    attention kernel with the group's H / KV query heads as its rows (all see the same
    //    keys: no mask), per (b, g); their outputs land in their own columns of `heads`.
    //    (Softmax does not depend on the order of the keys: the ring's slot order will do.)
    const fast::HeadStrides q_strides{C, group * hs, hs};
    const fast::HeadStrides kv_strides{KV * W * hs, W * hs, hs};
    fast::attention_strided(B, KV, group, n, hs, q.data(), q_strides, kc, kv_strides, vc,
                            kv_strides, heads.data(), q_strides, /*causal=*/false, scratch,
                            score_bias);
    // 6. x = x + heads w_o
    project_rows(heads.data(), B, bw.attn.w_o, proj.data(), bw.attn.b_o);
    for (std::size_t i = 0; i < B * C; ++i) x.data()[i] = proj.data()[i] + x.data()[i];
    // 7. x = x + FFN(norm2(x)): SwiGLU, or the MLP (its biases zero when off), on the B rows
    //    as (B, 1, C)
    norm_rows(x, bw.ln2_gamma, bw.ln2_beta, config, s.zeros, h);
    std::copy(h.begin(), h.end(), s.ffn_in.begin());
    if (config.ffn == FfnKind::swiglu) {
      fast::swiglu_forward(s.ffn_in, bw.swiglu, s.swiglu, s.ffn_out);
    } else if (config.bias) {
      fast::ffn_forward(s.ffn_in, bw.ffn, config.activation, s.mlp, s.ffn_out);
    } else {
      FfnWeights& zb = s.mlp_zero_bias;
      fit(zb.w1, bw.ffn.w1.shape());
      fit(zb.w2, bw.ffn.w2.shape());
      std::copy(bw.ffn.w1.begin(), bw.ffn.w1.end(), zb.w1.begin());
      std::copy(bw.ffn.w2.begin(), bw.ffn.w2.end(), zb.w2.begin());
      if (zb.b1.size() != bw.ffn.w1.shape()[1]) zb.b1 = xt::zeros<float>({bw.ffn.w1.shape()[1]});
      if (zb.b2.size() != C) zb.b2 = xt::zeros<float>({C});
      fast::ffn_forward(s.ffn_in, zb, config.activation, s.mlp, s.ffn_out);
    }
    const float* f = s.ffn_out.data();
    for (std::size_t i = 0; i < B * C; ++i) x.data()[i] = f[i] + x.data()[i];
  }
  // 8. logits = norm_f(x) @ wte^T (tied) or @ lm_head (+ lm_head_bias)          (B, V)
  norm_rows(x, w.ln_f_gamma, w.ln_f_beta, config, s.zeros, h);
  if (config.ablations.tied_head) {
    fast::gemm(B, V, C, 1.0f, h.data(), false, w.wte.data(), /*trans_b=*/true, 0.0f,
               c.logits.data());
  } else {
    const bool bias = w.lm_head_bias.size() != 0;
    if (bias) fill_bias(c.logits.data(), B, w.lm_head_bias);
    fast::gemm(B, V, C, 1.0f, h.data(), false, w.lm_head.data(), /*trans_b=*/false,
               bias ? 1.0f : 0.0f, c.logits.data());
  }
  ++c.length;
  return c.logits;
}

}  // namespace

const Matrix& lm_step_rolling(RollingKvCache& c, std::span<const int> tokens, const LmWeights& w,
                              const ModelSpec& config) {
  constexpr const char* kFn = "attn::lm_step_rolling";
  check_variant(config, kFn);
  check_rolling(c, config, kFn);
  detail::check_weights(w, config, kFn);
  check_blocks(w, config, kFn);
  const bool table = config.learned_positions();
  if (tokens.size() != c.batch) {
    require(false, kFn, [&] {
      return fmt::format("expected one token per sequence (B = {}), got {}", c.batch,
                         tokens.size());
    });
  }
  if ((table || !config.window) && c.length >= config.block_size) {
    require(false, kFn, [&] {
      return fmt::format("the cache is full ({} positions, block_size); crop and start again",
                         c.length);
    });
  }
  check_ids(tokens.data(), tokens.size(), config.vocab_size, kFn);
  ++c.work.steps;  // one step, one new position per sequence
  c.work.positions += tokens.size();
  return step_rolling(c, tokens, w, config);
}

namespace {

// lm_generate_cached for a model with parts: the rolling cache, one step per token.
std::vector<int> generate_rolling(RollingKvCache& cache, const LmWeights& w,
                                  const ModelSpec& config, std::span<const int> prompt,
                                  const GenerateOptions& options, Rng& rng,
                                  const TokenCallback& on_token) {
  const std::size_t V = config.vocab_size, T_max = config.block_size;
  const std::size_t n_new = options.max_new_tokens;
  std::vector<int> generated;
  if (n_new == 0) return generated;
  generated.reserve(n_new);
  std::vector<int> context(prompt.begin(), prompt.end());
  context.reserve(prompt.size() + n_new);
  // A model with a window and no position table (positions inside attention) sees its whole
  // context, like lm_generate (never cropped); any other model the last T_max tokens, re-filled
  // whenever the context moves.
  const bool endless = !config.learned_positions() && config.window.has_value();
  TokenSampler sampler(V);
  const SamplingOptions sampling = detail::sampling_options(options);
  const Matrix* logits = nullptr;
  // Fills the cache from nothing with the context's last T tokens, one position at a time:
  // cache.work counts it as one prefill of T positions.
  const auto fill = [&] {
    const std::size_t T = endless ? context.size() : std::min(context.size(), T_max);
    cache.length = 0;
    for (std::size_t i = context.size() - T; i < context.size(); ++i)
      logits = &step_rolling(cache, std::span<const int>(&context[i], 1), w, config);
    ++cache.work.prefills;
    cache.work.positions += T;
  };
  fill();
  for (std::size_t i = 0; i < n_new; ++i) {
    const int next = sampler.next(std::span<const float>(logits->data(), V), sampling, rng);
    context.push_back(next);
    generated.push_back(next);
    if (on_token) on_token(next);
    if (i + 1 == n_new) break;
    if (endless || cache.length < T_max) {
      logits = &lm_step_rolling(cache, std::span<const int>(&next, 1), w, config);
    } else {
      fill();  // the context moved one position: every cached key is stale
    }
  }
  return generated;
}

// lm_generate_cached's loop for chapter 07's model through `cache` (checked by the caller).
std::vector<int> generate_with(KvCache& cache, const LmWeights& w, const ModelSpec& config,
                               std::span<const int> prompt, const GenerateOptions& options,
                               Rng& rng, const TokenCallback& on_token, const char* kFn) {
  const std::size_t V = config.vocab_size, T_max = config.block_size;
  const std::size_t n_new = options.max_new_tokens;
  // Everything the loop touches is allocated here, before the first token.
  std::vector<int> generated;
  if (n_new == 0) return generated;
  generated.reserve(n_new);
  std::vector<int> context(prompt.begin(), prompt.end());
  if (n_new > context.max_size() - prompt.size()) {
    require(false, kFn, [&] { return fmt::format("max_new_tokens = {} is too large", n_new); });
  }
  context.reserve(prompt.size() + n_new);
  TokenSampler sampler(V);
  const SamplingOptions sampling = detail::sampling_options(options);

  // The last (at most) T_max tokens of the context: what lm_generate's forward sees.
  const auto window = [&context, T_max] {
    const std::size_t T = std::min(context.size(), T_max);
    return std::span<const int>(context.data() + (context.size() - T), T);
  };
  // 1. Prefill the prompt: the logits that predict the first new token.
  const Matrix* logits = &lm_prefill(cache, window(), w, config);
  for (std::size_t i = 0; i < n_new; ++i) {
    // 2. Draw the next token exactly as lm_generate does.
    const int next = sampler.next(std::span<const float>(logits->data(), V), sampling, rng);
    context.push_back(next);
    generated.push_back(next);
    if (on_token) on_token(next);
    if (i + 1 == n_new) break;
    // 3. Its logits: one step while positions are left; once the context is longer than T_max,
    //    every token moved one position down, so re-fill from the cropped context.
    logits = cache.length < T_max ? &lm_step(cache, std::span<const int>(&next, 1), w, config)
                                  : &lm_prefill(cache, window(), w, config);
  }
  return generated;
}

}  // namespace

std::vector<int> lm_generate_cached(const LmWeights& w, const ModelSpec& config,
                                    std::span<const int> prompt, const GenerateOptions& options,
                                    Rng& rng, const TokenCallback& on_token) {
  constexpr const char* kFn = "attn::lm_generate_cached";
  detail::check_generate_inputs(w, config, prompt, options, kFn);
  if (uses_rolling_cache(config)) {
    check_variant(config, kFn);
    check_blocks(w, config, kFn);
    RollingKvCache cache = rolling_cache_init(config, 1);
    return generate_rolling(cache, w, config, prompt, options, rng, on_token);
  }
  check_kv_parts(config, kFn);
  check_blocks(w, config, kFn);
  KvCache cache = kv_cache_init(config, 1);
  return generate_with(cache, w, config, prompt, options, rng, on_token, kFn);
}

std::vector<int> lm_generate_cached(KvCache& cache, const LmWeights& w, const ModelSpec& config,
                                    std::span<const int> prompt, const GenerateOptions& options,
                                    Rng& rng, const TokenCallback& on_token) {
  constexpr const char* kFn = "attn::lm_generate_cached";
  detail::check_generate_inputs(w, config, prompt, options, kFn);
  require(!uses_rolling_cache(config), kFn,
          "a model with chapter 11's parts generates through a RollingKvCache "
          "(rolling_cache_init), not a KvCache");
  check_kv_parts(config, kFn);
  check_blocks(w, config, kFn);
  check_cache(cache, config, kFn);
  require(cache.batch == 1, kFn, "expected a cache of one sequence (kv_cache_init(config, 1))");
  return generate_with(cache, w, config, prompt, options, rng, on_token, kFn);
}

std::vector<int> lm_generate_cached(RollingKvCache& cache, const LmWeights& w,
                                    const ModelSpec& config, std::span<const int> prompt,
                                    const GenerateOptions& options, Rng& rng,
                                    const TokenCallback& on_token) {
  constexpr const char* kFn = "attn::lm_generate_cached";
  detail::check_generate_inputs(w, config, prompt, options, kFn);
  check_variant(config, kFn);
  check_rolling(cache, config, kFn);
  check_blocks(w, config, kFn);
  require(cache.batch == 1, kFn,
          "expected a cache of one sequence (rolling_cache_init(config, 1))");
  return generate_rolling(cache, w, config, prompt, options, rng, on_token);
}

double lm_token_flops_uncached(const ModelSpec& config, std::size_t T) {
  const double L = static_cast<double>(config.n_layers), C = static_cast<double>(config.n_embd);
  const double F = static_cast<double>(config.ffn_hidden),
               V = static_cast<double>(config.vocab_size);
  const double t = static_cast<double>(T);
  // Per layer: q, k, v, o projections and the FFN on T rows; scores and weights @ v (T x T).
  return L * (2.0 * t * (4.0 * C * C + 2.0 * C * F) + 4.0 * t * t * C) + 2.0 * t * C * V;
}

double lm_token_flops_cached(const ModelSpec& config, std::size_t n) {
  const double L = static_cast<double>(config.n_layers), C = static_cast<double>(config.n_embd);
  const double F = static_cast<double>(config.ffn_hidden),
               V = static_cast<double>(config.vocab_size);
  const double keys = static_cast<double>(n) + 1.0;
  // Per layer: the same projections and FFN on one row; one query against n + 1 keys.
  return L * (2.0 * (4.0 * C * C + 2.0 * C * F) + 4.0 * keys * C) + 2.0 * C * V;
}

double lm_token_flops_refill(const ModelSpec& config) {
  const double L = static_cast<double>(config.n_layers), C = static_cast<double>(config.n_embd);
  const double F = static_cast<double>(config.ffn_hidden);
  const double rows = static_cast<double>(config.block_size) - 1.0;  // positions 0..T_max-2
  // L - 1 whole layers on T_max - 1 rows (their scores counted dense), the last layer's k and v
  // projections, then the step of the last position over T_max keys.
  const double whole =
      (L - 1.0) * (2.0 * rows * (4.0 * C * C + 2.0 * C * F) + 4.0 * rows * rows * C);
  return whole + 2.0 * rows * (2.0 * C * C) + lm_token_flops_cached(config, config.block_size - 1);
}

}  // namespace attn
