// model.cpp: the causal language model of chapter 07, a GPT in miniature: embeddings, a stack of
// pre-norm causal blocks, a final LayerNorm and the output projection tied to the embedding.
// Also generating text from it. Saving and loading it as a folder of files: lm_files.cpp.
#include "attn/model/model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "attn/core/check.hpp"
#include "attn/fast/gemm.hpp"
#include "attn/fast/linear.hpp"
#include "attn/fast/loss.hpp"
#include "attn/fast/layernorm.hpp"
#include "attn/fast/rmsnorm.hpp"
#include "attn/ops/dropout.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/core/limits.hpp"
#include "attn/core/threads.hpp"
#include "attn/ops/linear.hpp"
#include "attn/ops/loss.hpp"
#include "attn/model/sample.hpp"
#include "attn/model/params.hpp"
#include "model_internal.hpp"
#include "attn/core/parallel.hpp"

namespace attn {

namespace {

constexpr float kEps = 1e-5f;  // every LayerNorm of the model, like GPT-2

}  // namespace

// Every block of the model: pre-norm, causal, exact GELU (model.hpp), or the config's variant.
BlockConfig lm_block_config(const ModelSpec& spec) {
  BlockConfig b{.spec = spec};
  b.causal = true;
  b.norm = NormPlacement::pre;
  b.eps = kEps;
  b.keep_weights = false;  // only the logits are returned: no (B, H, T, T) per layer
  return b;
}

namespace {

// Without biases LayerNorm has no beta: C zeros in its place, kept in `zeros`.
const Vector& beta_or_zeros(const Vector& beta, std::size_t C, Vector& zeros) {
  if (beta.size() != 0) return beta;
  if (zeros.size() != C) zeros = xt::zeros<float>({C});
  return zeros;
}

// The final norm, ln_f: LayerNorm or RMSNorm (the fast kernels). The evaluation forward: what
// the norm keeps for a backward is thrown away.
Tensor<3> final_norm(const Tensor<3>& x, const LmWeights& w, const ModelSpec& config) {
  if (config.normalization == Normalization::rmsnorm) {
    RmsNormCache<float> unused;
    Tensor<3> h;
    fast::rms_norm(x, w.ln_f_gamma, static_cast<double>(kEps), unused, h);
    return h;
  }
  Vector zeros;
  return fast::layer_norm<3>(x, w.ln_f_gamma, beta_or_zeros(w.ln_f_beta, config.n_embd, zeros),
                             kEps);
}

}  // namespace

namespace detail {

// The weights must be the ones the config describes: as many blocks as n_layers, and every
// tensor outside the blocks (wte, wpe, ln_f, the untied head) of its row's shape in the parameter
// table (model/params.hpp), or empty where the model has no such tensor. The blocks' rows are
// skipped: a block checks its own weights (check_block; the KV cache: check_blocks). One line
// names the first misfit, "attn::lm_forward: wte is (11, 8), expected (12, 8)"; called per token,
// so it is formatted only on failure.
void check_weights(const LmWeights& w, const ModelSpec& config, const char* function) {
  if (w.blocks.size() != config.n_layers) {
    require(false, function, [&] {
      return fmt::format("config has n_layers = {} but the weights hold {} blocks", config.n_layers,
                         w.blocks.size());
    });
  }
  ParamDims dims = param_dims(config);
  // One tolerance, as for a block's ln1 and ln2 (check_block): without LayerNorm (the ablation)
  // ln_f is never read, and the weights of the same model with norms are accepted too, so ln_f
  // may be empty (the table) or of the norm's shapes: gamma (C,), beta (C,) for a LayerNorm with
  // biases, else empty.
  if (!dims.norms && w.ln_f_gamma.size() + w.ln_f_beta.size() != 0) {
    dims.norms = true;
    dims.norm_betas = config.normalization == Normalization::layernorm && config.bias;
  }
  visit_params(w, w, &dims, [&](const ParamRow& row, const auto& t, const auto&) {
    if (row.block < 0 && !fits_row(row, t))
      require(false, function, [&] { return param_misfit(row, t); });
  });
}

}  // namespace detail

using detail::check_weights;

LmWeights lm_init(Rng& rng, const ModelSpec& config) {
  // The spec is resolved (resolve_spec checked every rule): only the products of its sizes are
  // checked here, before anything is allocated.
  const std::size_t V = config.vocab_size, T_max = config.block_size, C = config.n_embd;
  const std::size_t F = config.ffn_hidden;
  checked_elements({V, C}, "attn::lm_init: wte (V, C)");
  checked_elements({T_max, C}, "attn::lm_init: wpe (T_max, C)");
  checked_elements({config.n_layers, checked_mul(4, C, "attn::lm_init: 4 C") + 2 * F + 13, C},
                   "attn::lm_init: the blocks (L, 4 C + 2 F + 13, C)");
  // The parameter table (model/params.hpp), walked in its order: each normal row draws the
  // default model's tensor (`drawn`), present or not, so that every variant draws the same
  // numbers in the same order as the default model (wte, wpe, then each block's w_q, w_k, w_v,
  // w_o, w1, w2, then an untied lm_head) and the weights it shares with it are the same. A part
  // then narrows what it keeps (GQA: the first KV hs columns of w_k and w_v) or draws its own
  // after (SwiGLU: w_gate, w_up, w_down); gammas start at 1, betas and biases at 0.
  const ParamDims dims = param_dims(config);
  LmWeights w;
  w.blocks.resize(config.n_layers);
  visit_params(w, w, &dims, [&](const ParamRow& row, auto& t, auto&) {
    using T = std::decay_t<decltype(t)>;
    if (row.init == ParamInit::normal && row.drawn[0] * row.drawn[1] != 0) {
      const Matrix drawn = randn(rng, row.drawn[0], row.drawn[1], 0.02f);
      if constexpr (std::tuple_size_v<typename T::shape_type> == 2) {
        if (row.present) t = xt::view(drawn, xt::all(), xt::range(0, row.shape[1]));
      }
    } else if (row.present) {
      const std::array<std::size_t, 1> shape{row.shape[0]};
      if constexpr (std::tuple_size_v<typename T::shape_type> == 1) {
        t = row.init == ParamInit::ones ? T(xt::ones<float>(shape)) : T(xt::zeros<float>(shape));
      }
    }
  });
  return w;
}

namespace {

// The forward pass of lm_forward; with `kept` non-null it also keeps every layer's attention
// weights (B, H, T, T), which changes no number of the logits.
Tensor<3> lm_forward_impl(const xt::xtensor<int, 2>& tokens, const LmWeights& w,
                          const ModelSpec& config, std::vector<Tensor<4>>* kept) {
  constexpr const char* kFn = "attn::lm_forward";
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1];
  const std::size_t V = config.vocab_size, T_max = config.block_size, C = config.n_embd;
  require(B > 0 && T > 0, kFn, [&] {
    return fmt::format("empty sequence: tokens of shape {}", shape_str(tokens.shape()));
  });
  const bool table = config.positions == Positions::learned;
  require(T <= T_max || !table, kFn, [&] {
    return fmt::format("sequence of {} tokens is longer than the position table (block_size {})", T,
                       T_max);
  });
  check_weights(w, config, kFn);

  // 1. Embeddings: x[b, t] = wte[tokens[b, t]] + wpe[t]. The token says *what*, the position
  //    row says *where*; attention alone cannot tell positions apart.
  Tensor<3> x(std::array<std::size_t, 3>{B, T, C});  // (B, T, C)
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < T; ++t) {
      const int id = tokens(b, t);
      require(id >= 0 && static_cast<std::size_t>(id) < V, kFn, [&] {
        return fmt::format("token id {} at ({}, {}) is outside [0, {})", id, b, t, V);
      });
      const float* tok = w.wte.data() + static_cast<std::size_t>(id) * C;  // (C,)
      float* out = x.data() + (b * T + t) * C;                             // (C,)
      if (!table) {  // rope: positions enter inside attention, as rotations of q and k
        std::copy_n(tok, C, out);
        continue;
      }
      const float* pos = w.wpe.data() + t * C;  // (C,)
      for (std::size_t c = 0; c < C; ++c) out[c] = tok[c] + pos[c];
    }
  }

  // 2. The blocks: pre-norm, causal, exact GELU. (B, T, C) -> (B, T, C) each.
  BlockConfig bc = lm_block_config(config);
  bc.keep_weights = kept != nullptr;
  for (const BlockWeights& block : w.blocks) {
    BlockResult r = block_forward(x, block, bc);
    if (kept != nullptr) kept->push_back(std::move(r.weights));  // (B, H, T, T)
    x = std::move(r.out);
  }

  // 3. Final LayerNorm: the last block's residual stream is unnormalised.
  const Tensor<3> h = config.ablations.layer_norm ? final_norm(x, w, config) : x;  // (B, T, C)

  // 4. logits = h @ wte^T: (B*T, C) @ (C, V) -> (B*T, V). Tying the output projection to the
  //    embedding scores each token by how much its embedding agrees with h, and saves V*C
  //    parameters. One GEMM with wte read transposed in place.
  checked_elements({B, T, V}, "attn::lm_forward: logits (B, T, V)");
  Tensor<3> logits(std::array<std::size_t, 3>{B, T, V});  // (B, T, V)
  if (config.ablations.tied_head) {
    fast::gemm(B * T, V, C, 1.0f, h.data(), false, w.wte.data(), /*trans_b=*/true, 0.0f,
               logits.data());
  } else {
    // An untied head (chapter 09's ladder): h @ lm_head + lm_head_bias, (C, V) and (V,).
    const bool bias = w.lm_head_bias.size() != 0;
    for (std::size_t r = 0; bias && r < B * T; ++r)
      std::copy(w.lm_head_bias.begin(), w.lm_head_bias.end(), logits.data() + r * V);
    fast::gemm(B * T, V, C, 1.0f, h.data(), false, w.lm_head.data(), false, bias ? 1.0f : 0.0f,
               logits.data());
  }
  return logits;
}

}  // namespace

Tensor<3> lm_forward(const xt::xtensor<int, 2>& tokens, const LmWeights& w,
                     const ModelSpec& config) {
  return lm_forward_impl(tokens, w, config, nullptr);
}

LmForward lm_forward_with_weights(const xt::xtensor<int, 2>& tokens, const LmWeights& w,
                                  const ModelSpec& config) {
  LmForward out;
  out.logits = lm_forward_impl(tokens, w, config, &out.weights);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Generation.

namespace detail {

SamplingOptions sampling_options(const GenerateOptions& o) {
  return {o.temperature, o.top_k, o.top_p, o.greedy};
}

void check_generate_inputs(const LmWeights& w, const ModelSpec& config, std::span<const int> prompt,
                           const GenerateOptions& options, const char* function) {
  const std::size_t V = config.vocab_size;
  require(!prompt.empty(), function, "empty prompt (give at least one token)");
  check_sampling_options(sampling_options(options), V, function);
  for (std::size_t i = 0; i < prompt.size(); ++i) {
    require(prompt[i] >= 0 && static_cast<std::size_t>(prompt[i]) < V, function, [&] {
      return fmt::format("prompt token {} at position {} is outside [0, {})", prompt[i], i, V);
    });
  }
  check_weights(w, config, function);
}

}  // namespace detail

using detail::check_generate_inputs;
using detail::sampling_options;

std::vector<int> lm_generate(const LmWeights& w, const ModelSpec& config,
                             std::span<const int> prompt, const GenerateOptions& options, Rng& rng,
                             const TokenCallback& on_token) {
  const std::size_t V = config.vocab_size, T_max = config.block_size;
  // Check everything up front, so a bad option fails even when max_new_tokens is 0.
  check_generate_inputs(w, config, prompt, options, "attn::lm_generate");
  const SamplingOptions sampling = sampling_options(options);
  TokenSampler sampler(V);

  std::vector<int> context(prompt.begin(), prompt.end());
  std::vector<int> generated;
  generated.reserve(options.max_new_tokens);
  for (std::size_t step = 0; step < options.max_new_tokens; ++step) {
    // 1. Crop to the last T_max tokens: the position table has no row beyond T_max - 1. (A
    //    sliding-window model with rope positions has no table: its whole context.)
    const bool whole = !config.learned_positions() && config.window.has_value();
    const std::size_t T = whole ? context.size() : std::min(context.size(), T_max);
    xt::xtensor<int, 2> tokens(std::array<std::size_t, 2>{1, T});  // (1, T)
    std::copy(context.end() - static_cast<std::ptrdiff_t>(T), context.end(), tokens.data());
    // 2. Logits of the last position only: they predict the next token. (1, T, V) -> (V,)
    const Tensor<3> logits = lm_forward(tokens, w, config);
    const std::span<const float> last(logits.data() + (T - 1) * V, V);
    // 3. Sample: greedy, or a draw among the top_k most likely tokens and the top_p nucleus.
    const int next = sampler.next(last, sampling, rng);
    context.push_back(next);
    generated.push_back(next);
    if (on_token) on_token(next);
  }
  return generated;
}

// ---------------------------------------------------------------------------------------------
// Training support (chapters 08-09).

namespace {

// Calls f(tensor) for every parameter of w, in the parameter table's order (params.hpp). Builds
// no names (the training step calls it).
template <class Weights, class F>
void visit_tensors(Weights& w, F&& f) {
  visit_params(w, w, nullptr, [&](const ParamRow&, auto& t, auto&) { f(t); });
}

template <class Array, std::size_t N>
void ensure_shape(Array& t, const std::array<std::size_t, N>& shape) {
  if (!std::equal(shape.begin(), shape.end(), t.shape().begin())) t.resize(shape);
}

// tokens and targets (B, T) with ids in [0, V), T <= T_max: the checks of lm_forward_backward
// and lm_loss, with one-line messages.
void check_batch(const xt::xtensor<int, 2>& tokens, const xt::xtensor<int, 2>* targets,
                 const ModelSpec& config, const char* fn) {
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1], V = config.vocab_size;
  require(B > 0 && T > 0, fn, [&] {
    return fmt::format("empty sequence: tokens of shape {}", shape_str(tokens.shape()));
  });
  require(T <= config.block_size || !config.learned_positions(), fn, [&] {
    return fmt::format("sequence of {} tokens is longer than the position table (block_size {})", T,
                       config.block_size);
  });
  for (std::size_t i = 0; i < B * T; ++i) {
    const int id = tokens.data()[i];
    require(id >= 0 && static_cast<std::size_t>(id) < V, fn, [&] {
      return fmt::format("token id {} at ({}, {}) is outside [0, {})", id, i / T, i % T, V);
    });
  }
  if (targets == nullptr) return;
  if (targets->shape() != tokens.shape()) {
    shape_error(fn, "targets of the same shape as tokens " + shape_str(tokens.shape()),
                "targets " + shape_str(targets->shape()));
  }
  for (std::size_t i = 0; i < B * T; ++i) {
    const int id = targets->data()[i];
    require(id >= 0 && static_cast<std::size_t>(id) < V, fn, [&] {
      return fmt::format("target id {} at ({}, {}) is outside [0, {})", id, i / T, i % T, V);
    });
  }
}

}  // namespace

namespace detail {

bool are_views_of(const LmWeights& w, std::span<const std::span<float>> views) {
  std::size_t i = 0;  // the next view
  bool same = true;
  visit_tensors(w, [&](const auto& t) {
    if (t.size() == 0) return;  // lm_parameters leaves empty tensors out
    same = same && i < views.size() && views[i].data() == t.data() && views[i].size() == t.size();
    ++i;
  });
  return same && i == views.size();
}

}  // namespace detail

std::vector<NamedTensor> lm_parameters(LmWeights& w) {
  std::vector<NamedTensor> out;
  visit_params(w, w, nullptr, [&](const ParamRow& row, auto& t, auto&) {
    if (t.size() == 0) return;
    out.push_back({param_name(row), std::span<float>(t.data(), t.size()), t.dimension()});
  });
  return out;
}

std::size_t lm_parameter_count(const LmWeights& w) {
  std::size_t n = 0;
  visit_tensors(w, [&](const auto& t) { n += t.size(); });
  return n;
}

LmWeights lm_zeros_like(const LmWeights& w) {
  LmWeights g;
  g.blocks.resize(w.blocks.size());
  visit_params(g, w, nullptr, [](const ParamRow&, auto& zeros, const auto& like) {
    zeros = xt::zeros<float>(like.shape());
  });
  return g;
}

void lm_zero(LmWeights& g) {
  visit_tensors(g, [](auto& t) { std::fill(t.begin(), t.end(), 0.0f); });
}

double lm_loss(const xt::xtensor<int, 2>& tokens, const xt::xtensor<int, 2>& targets,
               const LmWeights& w, const ModelSpec& config) {
  check_batch(tokens, &targets, config, "attn::lm_loss");
  const Tensor<3> logits = lm_forward(tokens, w, config);  // (B, T, V)
  const std::size_t N = tokens.size(), V = config.vocab_size;
  const auto flat =
      xt::adapt(logits.data(), N * V, xt::no_ownership(), std::array<std::size_t, 2>{N, V});
  const Matrix rows = flat;  // (B*T, V)
  return fast::cross_entropy(rows, std::span<const int>(targets.data(), N));
}

namespace {

// One forward and backward over B sequences of T tokens (tokens, targets: B*T ids each, row by
// row); the loss and the gradients are divided by `rows`, B*T for a whole batch or the whole
// batch's row count for one shard of it. Inputs already checked.
double forward_backward_rows(const int* tokens, const int* targets, std::size_t B, std::size_t T,
                             std::size_t rows, const LmWeights& w, const ModelSpec& config,
                             LmWeights& grads, LmCache& cache) {
  const std::size_t V = config.vocab_size, C = config.n_embd, L = config.n_layers;
  const std::size_t N = B * T;
  const BlockConfig bc = lm_block_config(config);

  // ---- Forward, keeping what the backward needs (buffers reused when the shapes repeat) ----
  ensure_shape(cache.tokens, std::array<std::size_t, 2>{B, T});
  std::copy_n(tokens, N, cache.tokens.begin());
  if (cache.blocks.size() != L) cache.blocks.resize(L);
  // 1. x = wte[tokens] + wpe[0..T)                                         (B, T, C)
  Tensor<3>& x = cache.work.x;
  Tensor<3>& x_next = cache.work.x_next;
  Tensor<3>& dx_a = cache.work.dx_a;
  Tensor<3>& dx_b = cache.work.dx_b;
  fast::Workspace& ws = cache.work.scratch;  // every kernel's scratch, shared by the blocks
  ensure_shape(x, std::array<std::size_t, 3>{B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      const float* tok = w.wte.data() + static_cast<std::size_t>(tokens[b * T + t]) * C;
      float* out = x.data() + (b * T + t) * C;
      if (!config.learned_positions()) {  // no table: the positions act inside attention
        std::copy_n(tok, C, out);
        continue;
      }
      const float* pos = w.wpe.data() + t * C;
      for (std::size_t c = 0; c < C; ++c) out[c] = tok[c] + pos[c];
    }
  // 2. The blocks, each keeping its cache (and, with dropout, its masks).   (B, T, C)
  Rng* dropout_rng = cache.fixed_dropout_masks ? nullptr : &cache.dropout_rng;
  for (std::size_t l = 0; l < L; ++l) {
    block_forward(x, w.blocks[l], bc, cache.blocks[l], x_next, ws, dropout_rng);
    std::swap(x, x_next);  // swaps the buffers, copies nothing
  }
  ensure_shape(cache.x_final, std::array<std::size_t, 3>{B, T, C});
  std::copy(x.begin(), x.end(), cache.x_final.begin());
  // 3. h = ln_f(x)                                                          (B, T, C)
  ensure_shape(cache.h, std::array<std::size_t, 3>{B, T, C});
  if (config.ablations.layer_norm && config.normalization == Normalization::rmsnorm) {
    fast::rms_norm(cache.x_final, w.ln_f_gamma, static_cast<double>(kEps), cache.rms_f, cache.h);
  } else if (config.ablations.layer_norm) {
    fast::layer_norm<3>(cache.x_final, w.ln_f_gamma,
                        beta_or_zeros(w.ln_f_beta, C, cache.work.zero_beta), kEps, cache.ln_f,
                        cache.h);
  } else {
    std::copy(x.begin(), x.end(), cache.h.begin());
  }
  // 4. logits = h @ wte^T (tied) or h @ lm_head + lm_head_bias              (B*T, V)
  ensure_shape(cache.logits, std::array<std::size_t, 2>{N, V});
  if (config.ablations.tied_head) {
    fast::gemm(N, V, C, 1.0f, cache.h.data(), false, w.wte.data(), true, 0.0f, cache.logits.data());
  } else {
    const bool bias = w.lm_head_bias.size() != 0;
    for (std::size_t r = 0; bias && r < N; ++r)
      std::copy(w.lm_head_bias.begin(), w.lm_head_bias.end(), cache.logits.data() + r * V);
    fast::gemm(N, V, C, 1.0f, cache.h.data(), false, w.lm_head.data(), false, bias ? 1.0f : 0.0f,
               cache.logits.data());
  }
  // 5. loss = mean cross-entropy; the logits become dloss/dlogits = (softmax - onehot) / N (N:
  //    the whole batch's rows, `rows`, when this is one shard of it).
  const double loss = fast::cross_entropy_backward_inplace(
      cache.logits, std::span<const int>(targets, N), rows, ws);

  // ---- Backward: every step of the forward in reverse, gradients added into grads ----
  const float* dlogits = cache.logits.data();  // (B*T, V)
  ensure_shape(dx_a, std::array<std::size_t, 3>{B, T, C});
  // 4. The output projection.
  //    tied:   dh = dlogits @ wte        (B*T, V) @ (V, C) -> (B*T, C)
  //            dwte += dlogits^T @ h     (V, B*T) @ (B*T, C) -> (V, C): wte's first use
  //    untied: dh = dlogits @ lm_head^T, dlm_head += h^T @ dlogits, dbias += sum_rows dlogits
  if (config.ablations.tied_head) {
    fast::gemm(N, C, V, 1.0f, dlogits, false, w.wte.data(), false, 0.0f, dx_a.data());
    fast::gemm(V, C, N, 1.0f, dlogits, true, cache.h.data(), false, 1.0f, grads.wte.data());
  } else {
    // (Two independent jobs of about equal size, side by side over the threads; each is
    // computed the same way on any thread count.)
    detail::run_parts(
        2, detail::worker_count(2), [&](std::size_t first, std::size_t last, std::size_t) {
          detail::WorkerScope scope;  // one BLAS call per product
          for (std::size_t job = first; job < last; ++job) {
            if (job == 0) {
              fast::gemm(N, C, V, 1.0f, dlogits, false, w.lm_head.data(), true, 0.0f, dx_a.data());
            } else {
              fast::gemm(C, V, N, 1.0f, cache.h.data(), true, dlogits, false, 1.0f,
                         grads.lm_head.data());
              if (grads.lm_head_bias.size() != 0) {
                fast::bias_backward(dlogits, N, V, grads.lm_head_bias.data());
              }
            }
          }
        });
  }
  // 3. ln_f (in place: dx_a is both dy and dx).
  if (config.ablations.layer_norm && config.normalization == Normalization::rmsnorm) {
    fast::rms_norm_backward(dx_a, cache.x_final, w.ln_f_gamma, cache.rms_f, dx_a, grads.ln_f_gamma,
                            ws);
  } else if (config.ablations.layer_norm && w.ln_f_beta.size() == 0) {  // no biases: no beta
    Vector& unused = cache.work.zero_beta_grad;  // beta's gradient has nowhere to go
    if (unused.size() != C) unused.resize({C});
    std::fill(unused.begin(), unused.end(), 0.0f);
    fast::layer_norm_backward<3>(dx_a, cache.x_final, w.ln_f_gamma, cache.ln_f, dx_a,
                                 grads.ln_f_gamma, unused, ws);
  } else if (config.ablations.layer_norm) {
    fast::layer_norm_backward<3>(dx_a, cache.x_final, w.ln_f_gamma, cache.ln_f, dx_a,
                                 grads.ln_f_gamma, grads.ln_f_beta, ws);
  }
  // 2. The blocks in reverse, ping-ponging between two (B, T, C) buffers.
  Tensor<3>* d_out = &dx_a;
  Tensor<3>* d_in = &dx_b;
  for (std::size_t l = L; l-- > 0;) {
    block_backward(*d_out, cache.blocks[l], w.blocks[l], bc, *d_in, grads.blocks[l], ws);
    std::swap(d_out, d_in);
  }
  // 1. The embeddings: x[b, t] = wte[tokens[b, t]] + wpe[t], so row tokens[b, t] of dwte (its
  //    second use, beside the output projection) and row t of dwpe each collect dx[b, t].
  const float* dx = d_out->data();
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      const float* d = dx + (b * T + t) * C;
      float* gt = grads.wte.data() + static_cast<std::size_t>(tokens[b * T + t]) * C;
      for (std::size_t c = 0; c < C; ++c) gt[c] += d[c];
      if (!config.learned_positions()) continue;  // no table
      float* gp = grads.wpe.data() + t * C;
      for (std::size_t c = 0; c < C; ++c) gp[c] += d[c];
    }
  return loss;
}

// to[j] += from[s * stride][offset + j] for s = 0, 1, ..., sources - 1 in that order, for j < n:
// 64 elements at a time held in registers while every source is added, then stored once (one
// pass over `to` instead of one per source: 2-3 times faster, the same sums in the same order).
void add_sources_into(float* __restrict to, const std::span<float>* from, std::size_t stride,
                      std::size_t sources, std::size_t offset, std::size_t n) {
  constexpr std::size_t kBlock = 64;
  for (std::size_t j0 = 0; j0 < n; j0 += kBlock) {
    const std::size_t m = std::min(kBlock, n - j0);
    float acc[kBlock];
    for (std::size_t u = 0; u < m; ++u) acc[u] = to[j0 + u];
    for (std::size_t s = 0; s < sources; ++s) {
      const float* __restrict f = from[s * stride].data() + offset + j0;
      for (std::size_t u = 0; u < m; ++u) acc[u] += f[u];
    }
    for (std::size_t u = 0; u < m; ++u) to[j0 + u] = acc[u];
  }
}

// Flat views of every tensor of w, in visit_tensors' order, appended to `out`.
void append_views(LmWeights& w, std::vector<std::span<float>>& out) {
  visit_tensors(w, [&](auto& t) {
    if (t.size() != 0) out.emplace_back(t.data(), t.size());
  });
}

}  // namespace

std::size_t lm_batch_shards(std::size_t B, std::size_t T, std::size_t parameters) {
  std::size_t best = 1;
  for (std::size_t s = 2; s <= std::min(B, kMaxShards); ++s) {
    if (B / s * T < kShardRows || (s - 1) * parameters > kShardGradFloats) break;
    if (B % s == 0) best = s;
  }
  return best;
}

double lm_forward_backward(const xt::xtensor<int, 2>& tokens, const xt::xtensor<int, 2>& targets,
                           const LmWeights& w, const ModelSpec& config, LmWeights& grads,
                           LmCache& cache) {
  return lm_forward_backward(
      tokens, targets, w, config, grads, cache,
      lm_batch_shards(tokens.shape()[0], tokens.shape()[1], lm_parameter_count(w)));
}

double lm_forward_backward(const xt::xtensor<int, 2>& tokens, const xt::xtensor<int, 2>& targets,
                           const LmWeights& w, const ModelSpec& config, LmWeights& grads,
                           LmCache& cache, std::size_t shards) {
  constexpr const char* kFn = "attn::lm_forward_backward";
  check_batch(tokens, &targets, config, kFn);
  check_weights(w, config, kFn);
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1], N = B * T;
  require(same_param_shapes(w, grads), kFn,
          "grads must be shaped like the weights, tensor for tensor (make them with "
          "lm_zeros_like)");
  require(shards >= 1 && B % shards == 0, kFn, [&] {
    return fmt::format("{} shards do not divide a batch of {} sequences", shards, B);
  });
  if (shards == 1) {
    return forward_backward_rows(tokens.data(), targets.data(), B, T, N, w, config, grads, cache);
  }

  // ---- The batch in shards of B / S whole sequences ----
  const std::size_t S = shards, rows = (B / S) * T;
  if (cache.shards.size() != S) cache.shards.resize(S);
  if (cache.shard_grads.size() != S - 1 || !same_param_shapes(w, cache.shard_grads.front())) {
    cache.shard_grads.assign(S - 1, lm_zeros_like(w));  // a new model, or the first call
  }
  // Dropout: each shard draws its masks from a generator of its own, seeded in shard order from
  // the cache's generator (so the masks depend on the seed and the shard, never on a thread).
  for (std::size_t s = 0; s < S; ++s) {
    LmCache& c = cache.shards[s];
    c.fixed_dropout_masks = cache.fixed_dropout_masks;
    if (config.dropout > 0.0f && !cache.fixed_dropout_masks) {
      const std::uint64_t hi = cache.dropout_rng.next_u32(), lo = cache.dropout_rng.next_u32();
      c.dropout_rng = Rng((hi << 32) | lo, s);
    }
  }
  std::vector<double>& losses = cache.work.shard_losses;
  losses.assign(S, 0.0);
  double* shard_loss = losses.data();
  const auto run_shard = [&](std::size_t s) {
    LmWeights& g = s == 0 ? grads : cache.shard_grads[s - 1];  // shard 0 adds into grads
    if (s > 0) lm_zero(g);
    shard_loss[s] = forward_backward_rows(tokens.data() + s * rows, targets.data() + s * rows,
                                          B / S, T, N, w, config, g, cache.shards[s]);
  };
  // Side by side, one shard to a thread at a time, when the shards fill at least half the
  // threads; else one after another, each splitting its own products over the threads (the
  // same bits either way: every kernel gives the same result on any thread count).
  if (2 * S > num_threads()) {
    detail::run_parts(S, detail::worker_count(S),
                      [&](std::size_t first, std::size_t last, std::size_t) {
                        for (std::size_t s = first; s < last; ++s) run_shard(s);
                      });
  } else {
    for (std::size_t s = 0; s < S; ++s) run_shard(s);
  }
  // grads += the other shards' gradients, every element summed in shard order, in chunks of
  // elements over the threads.
  cache.reduce_to.clear();
  cache.reduce_from.clear();
  append_views(grads, cache.reduce_to);
  for (LmWeights& g : cache.shard_grads) append_views(g, cache.reduce_from);
  const std::size_t tensors = cache.reduce_to.size();
  constexpr std::size_t kChunk = 4096;  // floats
  std::vector<std::pair<std::size_t, std::size_t>>& chunks = cache.work.reduce_chunks;
  chunks.clear();
  for (std::size_t i = 0; i < tensors; ++i)
    for (std::size_t j = 0; j < cache.reduce_to[i].size(); j += kChunk) chunks.emplace_back(i, j);
  const auto* chunk = chunks.data();
  detail::run_parts(chunks.size(), detail::worker_count(chunks.size()),
                    [&](std::size_t first, std::size_t last, std::size_t) {
                      for (std::size_t k = first; k < last; ++k) {
                        const auto [i, j0] = chunk[k];
                        const std::span<float> to = cache.reduce_to[i];
                        // Tensor i of shards 1, 2, ..., S - 1: every `tensors`-th view.
                        add_sources_into(to.data() + j0, cache.reduce_from.data() + i, tensors,
                                         S - 1, j0, std::min(kChunk, to.size() - j0));
                      }
                    });
  double loss = 0.0;
  for (std::size_t s = 0; s < S; ++s) loss += shard_loss[s];
  return loss;
}

}  // namespace attn
