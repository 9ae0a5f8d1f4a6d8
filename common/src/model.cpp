// model.cpp: the causal language model of chapter 07, a GPT in miniature: embeddings, a stack of
// pre-norm causal blocks, a final LayerNorm and the output projection tied to the embedding.
// Also loading/saving it as a folder of .npy files, and generating text from it.
#include "attn/model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attn/check.hpp"
#include "attn/layernorm.hpp"
#include "attn/linear.hpp"
#include "attn/npy.hpp"
#include "attn/sample.hpp"
#include "model_internal.hpp"

namespace attn {

namespace {

namespace fs = std::filesystem;

constexpr float kEps = 1e-5f;  // every LayerNorm of the model, like GPT-2

// Every block of the model: pre-norm, causal, exact GELU (model.hpp).
BlockConfig block_config(const LmConfig& config) {
  BlockConfig b;
  b.n_heads = config.n_heads;
  b.causal = true;
  b.norm = NormPlacement::pre;
  b.activation = Activation::gelu;
  b.eps = kEps;
  b.keep_weights = false;  // only the logits are returned: no (B, H, T, T) per layer
  return b;
}

template <class Shape>
bool has_shape(const Shape& shape, std::initializer_list<std::size_t> want) {
  return shape.size() == want.size() && std::equal(want.begin(), want.end(), shape.begin());
}

}  // namespace

namespace detail {

// The weights must be the ones the config describes; a block checks its own weights.
void check_weights(const LmWeights& w, const LmConfig& config, const char* function) {
  const std::size_t V = config.vocab_size, T_max = config.block_size, C = config.n_embd;
  if (!has_shape(w.wte.shape(), {V, C})) {
    shape_error(function, fmt::format("wte of shape (V, C) = ({}, {})", V, C),
                shape_str(w.wte.shape()));
  }
  if (!has_shape(w.wpe.shape(), {T_max, C})) {
    shape_error(function, fmt::format("wpe of shape (T_max, C) = ({}, {})", T_max, C),
                shape_str(w.wpe.shape()));
  }
  if (w.blocks.size() != config.n_layers) {  // (formatted only on failure: called per token)
    require(false, function,
            fmt::format("config has n_layers = {} but the weights hold {} blocks",
                        config.n_layers, w.blocks.size()));
  }
  if (!has_shape(w.ln_f_gamma.shape(), {C}) || !has_shape(w.ln_f_beta.shape(), {C})) {
    shape_error(function, fmt::format("ln_f_gamma and ln_f_beta of shape ({},)", C),
                shape_str(w.ln_f_gamma.shape()) + " and " + shape_str(w.ln_f_beta.shape()));
  }
}

}  // namespace detail

using detail::check_weights;

LmWeights lm_init(Rng& rng, const LmConfig& config) {
  const std::size_t V = config.vocab_size, T_max = config.block_size, C = config.n_embd;
  require(V > 0 && T_max > 0 && C > 0 && config.n_layers > 0, "attn::lm_init",
          fmt::format("vocab_size, block_size, n_embd and n_layers must be >= 1, got {}, {}, {}, {}",
                      V, T_max, C, config.n_layers));
  require(config.n_heads > 0 && C % config.n_heads == 0, "attn::lm_init",
          fmt::format("n_heads = {} does not divide n_embd = {}", config.n_heads, C));
  // Drawn in this order: wte, wpe, then each block (block_init's own order).
  LmWeights w;
  w.wte = randn(rng, V, C, 0.02f);      // (V, C)
  w.wpe = randn(rng, T_max, C, 0.02f);  // (T_max, C)
  for (std::size_t l = 0; l < config.n_layers; ++l) w.blocks.push_back(block_init(rng, C, 4 * C));
  w.ln_f_gamma = xt::ones<float>({C});   // (C,)
  w.ln_f_beta = xt::zeros<float>({C});   // (C,)
  return w;
}

Tensor<3> lm_forward(const xt::xtensor<int, 2>& tokens, const LmWeights& w,
                     const LmConfig& config) {
  constexpr const char* kFn = "attn::lm_forward";
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1];
  const std::size_t V = config.vocab_size, T_max = config.block_size, C = config.n_embd;
  require(B > 0 && T > 0, kFn,
          fmt::format("empty sequence: tokens of shape {}", shape_str(tokens.shape())));
  require(T <= T_max, kFn,
          fmt::format("sequence of {} tokens is longer than the position table (block_size {})",
                      T, T_max));
  check_weights(w, config, kFn);

  // 1. Embeddings: x[b, t] = wte[tokens[b, t]] + wpe[t]. The token says *what*, the position
  //    row says *where*; attention alone cannot tell positions apart.
  Tensor<3> x(std::array<std::size_t, 3>{B, T, C});  // (B, T, C)
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < T; ++t) {
      const int id = tokens(b, t);
      require(id >= 0 && static_cast<std::size_t>(id) < V, kFn,
              fmt::format("token id {} at ({}, {}) is outside [0, {})", id, b, t, V));
      const float* tok = w.wte.data() + static_cast<std::size_t>(id) * C;  // (C,)
      const float* pos = w.wpe.data() + t * C;                              // (C,)
      float* out = x.data() + (b * T + t) * C;                              // (C,)
      for (std::size_t c = 0; c < C; ++c) out[c] = tok[c] + pos[c];
    }
  }

  // 2. The blocks: pre-norm, causal, exact GELU. (B, T, C) -> (B, T, C) each.
  const BlockConfig bc = block_config(config);
  for (const BlockWeights& block : w.blocks) x = block_forward(x, block, bc).out;

  // 3. Final LayerNorm: the last block's residual stream is unnormalised.
  const Tensor<3> h = layer_norm<3>(x, w.ln_f_gamma, w.ln_f_beta, kEps);  // (B, T, C)

  // 4. logits = h @ wte^T: (B*T, C) @ (C, V) -> (B*T, V). Tying the output projection to the
  //    embedding scores each token by how much its embedding agrees with h, and saves V*C
  //    parameters. One GEMM with wte read transposed in place.
  Tensor<3> logits(std::array<std::size_t, 3>{B, T, V});  // (B, T, V)
  gemm(B * T, V, C, 1.0f, h.data(), false, w.wte.data(), /*trans_b=*/true, 0.0f, logits.data());
  return logits;
}

// ---------------------------------------------------------------------------------------------
// A model as a folder of .npy files.

namespace {

// The block tensors, in the order they are read and named in errors: h{i}.<name>.npy.
constexpr const char* kBlockMatrices[] = {"w_q", "w_k", "w_v", "w_o"};

// Reads `dir/name` as float32 and checks its shape; every problem names the file.
class ModelReader {
 public:
  explicit ModelReader(fs::path dir) : dir_(std::move(dir)) {}

  [[noreturn]] void fail(std::string_view what) const {
    throw std::runtime_error(fmt::format("model '{}': {}", dir_.string(), what));
  }

  // The array `name` with whatever shape it has (for wte and wpe, which define the sizes).
  NpyArray read(const std::string& name) const {
    const fs::path path = dir_ / name;
    std::error_code ec;
    if (!fs::exists(path, ec)) fail("missing " + name);
    NpyArray a = read_npy(path);  // a corrupt file: "<dir>/<name>: not a .npy file ..."
    if (a.descr != "<f4" && a.descr != "<f8") {
      fail(fmt::format("{} holds '{}', expected float32 ('<f4') or float64 ('<f8')", name, a.descr));
    }
    return a;
  }

  template <std::size_t N>
  Tensor<N> load(const std::string& name, const std::array<std::size_t, N>& want) const {
    const NpyArray a = read(name);
    if (!std::equal(a.shape.begin(), a.shape.end(), want.begin(), want.end())) {
      fail(fmt::format("{} has shape {}, expected {}", name, shape_str(a.shape), shape_str(want)));
    }
    return to_tensor(name, a, want);
  }

  template <std::size_t N>
  Tensor<N> to_tensor(const std::string& name, const NpyArray& a,
                      const std::array<std::size_t, N>& shape) const {
    Tensor<N> out(shape);
    constexpr double kMax = static_cast<double>(std::numeric_limits<float>::max());
    for (std::size_t i = 0; i < a.values.size(); ++i) {
      if (std::isfinite(a.values[i]) && std::abs(a.values[i]) > kMax) {
        fail(fmt::format("{} holds {} at flat index {}, beyond float32", name, a.values[i], i));
      }
      out.data()[i] = static_cast<float>(a.values[i]);
    }
    return out;
  }

 private:
  fs::path dir_;
};

}  // namespace

LmWeights load_lm(const std::filesystem::path& dir, std::size_t n_layers, std::size_t n_heads,
                  LmConfig& config_out) {
  const ModelReader r(dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) r.fail("no such folder");
  if (n_layers < 1) r.fail("n_layers must be at least 1, got 0");

  // 1. wte (V, C) and wpe (T_max, C) define the sizes.
  const NpyArray wte = r.read("wte.npy");
  if (wte.shape.size() != 2 || wte.shape[0] == 0 || wte.shape[1] == 0) {
    r.fail(fmt::format("wte.npy has shape {}, expected a non-empty (V, C) table",
                       shape_str(wte.shape)));
  }
  const std::size_t V = wte.shape[0], C = wte.shape[1];
  const NpyArray wpe = r.read("wpe.npy");
  if (wpe.shape.size() != 2 || wpe.shape[0] == 0 || wpe.shape[1] != C) {
    r.fail(fmt::format("wpe.npy has shape {}, expected (T_max, {}) with C = {} from wte.npy",
                       shape_str(wpe.shape), C, C));
  }
  const std::size_t T_max = wpe.shape[0];
  if (n_heads < 1 || C % n_heads != 0) {
    r.fail(fmt::format("n_heads = {} does not divide C = {} (from wte.npy)", n_heads, C));
  }
  const std::size_t F = 4 * C;  // the model's FFN width (model.hpp)

  LmWeights w;
  w.wte = r.to_tensor<2>("wte.npy", wte, {V, C});
  w.wpe = r.to_tensor<2>("wpe.npy", wpe, {T_max, C});

  // 2. Every block, every tensor, in the documented order; the first problem is reported.
  for (std::size_t i = 0; i < n_layers; ++i) {
    const std::string h = fmt::format("h{}.", i);
    BlockWeights b;
    Matrix* matrices[] = {&b.attn.w_q, &b.attn.w_k, &b.attn.w_v, &b.attn.w_o};
    for (std::size_t m = 0; m < 4; ++m) {
      *matrices[m] = r.load<2>(h + kBlockMatrices[m] + ".npy", {C, C});
    }
    b.ln1_gamma = r.load<1>(h + "ln1_gamma.npy", {C});
    b.ln1_beta = r.load<1>(h + "ln1_beta.npy", {C});
    b.ln2_gamma = r.load<1>(h + "ln2_gamma.npy", {C});
    b.ln2_beta = r.load<1>(h + "ln2_beta.npy", {C});
    b.ffn.w1 = r.load<2>(h + "w1.npy", {C, F});
    b.ffn.b1 = r.load<1>(h + "b1.npy", {F});
    b.ffn.w2 = r.load<2>(h + "w2.npy", {F, C});
    b.ffn.b2 = r.load<1>(h + "b2.npy", {C});
    w.blocks.push_back(std::move(b));
  }
  w.ln_f_gamma = r.load<1>("ln_f_gamma.npy", {C});
  w.ln_f_beta = r.load<1>("ln_f_beta.npy", {C});

  config_out.vocab_size = V;
  config_out.block_size = T_max;
  config_out.n_embd = C;
  config_out.n_heads = n_heads;
  config_out.n_layers = n_layers;
  return w;
}

void save_lm(const std::filesystem::path& dir, const LmWeights& w) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw std::runtime_error(
        fmt::format("model '{}': cannot create the folder: {}", dir.string(), ec.message()));
  }
  save_npy(dir / "wte.npy", w.wte);
  save_npy(dir / "wpe.npy", w.wpe);
  for (std::size_t i = 0; i < w.blocks.size(); ++i) {
    const std::string h = fmt::format("h{}.", i);
    const BlockWeights& b = w.blocks[i];
    save_npy(dir / (h + "w_q.npy"), b.attn.w_q);
    save_npy(dir / (h + "w_k.npy"), b.attn.w_k);
    save_npy(dir / (h + "w_v.npy"), b.attn.w_v);
    save_npy(dir / (h + "w_o.npy"), b.attn.w_o);
    save_npy(dir / (h + "ln1_gamma.npy"), b.ln1_gamma);
    save_npy(dir / (h + "ln1_beta.npy"), b.ln1_beta);
    save_npy(dir / (h + "ln2_gamma.npy"), b.ln2_gamma);
    save_npy(dir / (h + "ln2_beta.npy"), b.ln2_beta);
    save_npy(dir / (h + "w1.npy"), b.ffn.w1);
    save_npy(dir / (h + "b1.npy"), b.ffn.b1);
    save_npy(dir / (h + "w2.npy"), b.ffn.w2);
    save_npy(dir / (h + "b2.npy"), b.ffn.b2);
  }
  save_npy(dir / "ln_f_gamma.npy", w.ln_f_gamma);
  save_npy(dir / "ln_f_beta.npy", w.ln_f_beta);
}

// ---------------------------------------------------------------------------------------------
// Generation.

namespace detail {

SamplingOptions sampling_options(const GenerateOptions& o) {
  return {o.temperature, o.top_k, o.top_p, o.greedy};
}

void check_generate_inputs(const LmWeights& w, const LmConfig& config,
                           std::span<const int> prompt, const GenerateOptions& options,
                           const char* function) {
  const std::size_t V = config.vocab_size;
  require(!prompt.empty(), function, "empty prompt (give at least one token)");
  check_sampling_options(sampling_options(options), V, function);
  for (std::size_t i = 0; i < prompt.size(); ++i) {
    require(prompt[i] >= 0 && static_cast<std::size_t>(prompt[i]) < V, function,
            fmt::format("prompt token {} at position {} is outside [0, {})", prompt[i], i, V));
  }
  check_weights(w, config, function);
}

}  // namespace detail

using detail::check_generate_inputs;
using detail::sampling_options;

std::vector<int> lm_generate(const LmWeights& w, const LmConfig& config,
                             std::span<const int> prompt, const GenerateOptions& options,
                             Rng& rng, const TokenCallback& on_token) {
  const std::size_t V = config.vocab_size, T_max = config.block_size;
  // Check everything up front, so a bad option fails even when max_new_tokens is 0.
  check_generate_inputs(w, config, prompt, options, "attn::lm_generate");
  const SamplingOptions sampling = sampling_options(options);
  TokenSampler sampler(V);

  std::vector<int> context(prompt.begin(), prompt.end());
  std::vector<int> generated;
  generated.reserve(options.max_new_tokens);
  for (std::size_t step = 0; step < options.max_new_tokens; ++step) {
    // 1. Crop to the last T_max tokens: the position table has no row beyond T_max - 1.
    const std::size_t T = std::min(context.size(), T_max);
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

}  // namespace attn
