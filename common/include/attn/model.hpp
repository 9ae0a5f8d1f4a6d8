// attn/model.hpp: the causal language model, a GPT in miniature (chapter 07).
//   x = wte[tokens] + wpe[0..T)           (B, T, C)   token + learned position embeddings
//   x = block_l(x) for l = 0..L-1         (B, T, C)   pre-norm, causal, exact GELU, F = 4C
//   logits = ln_f(x) @ wte^T              (B, T, V)   output projection tied to the embedding
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <span>
#include <vector>

#include "attn/block.hpp"
#include "attn/random.hpp"
#include "attn/xt.hpp"

namespace attn {

struct LmConfig {
  std::size_t vocab_size = 65;  // V
  std::size_t block_size = 64;  // T_max, rows of the position table
  std::size_t n_embd = 64;      // C, model width
  std::size_t n_heads = 4;      // H
  std::size_t n_layers = 2;     // L
  // Every block: pre-norm, causal, exact GELU, eps 1e-5, F = 4C.
};

struct LmWeights {
  Matrix wte;                       // (V, C) token embedding, also the output projection
  Matrix wpe;                       // (T_max, C) learned positions
  std::vector<BlockWeights> blocks; // L blocks
  Vector ln_f_gamma, ln_f_beta;     // (C,)
};

LmWeights lm_init(Rng& rng, const LmConfig& config);

// tokens (B, T) ids in [0, V), T <= T_max -> logits (B, T, V). Throws std::invalid_argument for
// an empty sequence, T > T_max ("sequence of 80 tokens is longer than the position table
// (block_size 64)"), or a token outside [0, V).
Tensor<3> lm_forward(const xt::xtensor<int, 2>& tokens, const LmWeights& w, const LmConfig& config);

// Loads a model saved as a folder of .npy files named like the golden fixtures: wte, wpe,
// h{i}.w_q, h{i}.w_k, h{i}.w_v, h{i}.w_o, h{i}.ln1_gamma, h{i}.ln1_beta, h{i}.ln2_gamma,
// h{i}.ln2_beta, h{i}.w1, h{i}.b1, h{i}.w2, h{i}.b2, ln_f_gamma, ln_f_beta (each + ".npy").
// V, T_max and C come from wte and wpe; n_layers and n_heads are given. Throws
// std::runtime_error naming the first missing or mis-shaped tensor:
// "model 'dir': h1.w_q.npy has shape (64, 32), expected (64, 64)".
LmWeights load_lm(const std::filesystem::path& dir, std::size_t n_layers, std::size_t n_heads,
                  LmConfig& config_out);
// Writes the same layout (for tests and for exporting a model made here).
void save_lm(const std::filesystem::path& dir, const LmWeights& w);

struct GenerateOptions {
  std::size_t max_new_tokens = 100;
  float temperature = 1.0f;  // > 0
  std::size_t top_k = 0;     // 0: sample from all V tokens; else keep the k most likely (1..V)
  float top_p = 1.0f;        // in (0, 1]: keep the fewest most likely tokens with mass >= top_p
  bool greedy = false;       // always the most likely token (no draw; the three above unused)
};
// Called with each new token as soon as it is chosen (to stream text as it is generated).
using TokenCallback = std::function<void(int)>;

// Appends max_new_tokens sampled tokens to `prompt` (at least one token), cropping the context
// to the last T_max tokens: one full lm_forward over the cropped context per token. Returns only
// the new tokens. The draw is attn::TokenSampler's (sample.hpp).
std::vector<int> lm_generate(const LmWeights& w, const LmConfig& config,
                             std::span<const int> prompt, const GenerateOptions& options, Rng& rng,
                             const TokenCallback& on_token = {});

}  // namespace attn
