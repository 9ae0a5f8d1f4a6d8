// attn/model/model.hpp: the causal language model, a GPT in miniature (chapter 07).
//   x = wte[tokens] + wpe[0..T)           (B, T, C)   token + learned position embeddings
//   x = block_l(x) for l = 0..L-1         (B, T, C)   pre-norm, causal, exact GELU, F = 4C
//   logits = ln_f(x) @ wte^T              (B, T, V)   output projection tied to the embedding
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "attn/fast/workspace.hpp"
#include "attn/model/block.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"

namespace attn {

// The model's parameters, in float (the model) or double (the float64 reference,
// model/reference.hpp): one family, named and shaped by the parameter table (model/params.hpp).
template <class S>
struct LmWeightsOf {
  xt::xtensor<S, 2> wte;                    // (V, C) token embedding, also the output projection
  xt::xtensor<S, 2> wpe;                    // (T_max, C) learned positions; empty with rope
  std::vector<BlockWeightsOf<S>> blocks;    // L blocks
  xt::xtensor<S, 1> ln_f_gamma, ln_f_beta;  // (C,)
  xt::xtensor<S, 2> lm_head;                // (C, V) when !tied_head, else empty
  xt::xtensor<S, 1> lm_head_bias;           // (V,) when !tied_head, else empty
};
using LmWeights = LmWeightsOf<float>;

LmWeights lm_init(Rng& rng, const ModelSpec& spec);

// How every block of the model runs: the spec, pre-norm, causal, eps 1e-5, the attention
// weights not kept. A step-by-step forward built from block_forward uses it to match
// lm_forward.
BlockConfig lm_block_config(const ModelSpec& spec);

// tokens (B, T) ids in [0, V), T <= T_max -> logits (B, T, V). Throws std::invalid_argument for
// an empty sequence, T > T_max ("sequence of 80 tokens is longer than the position table
// (block_size 64)"), or a token outside [0, V). With rope positions there is no table: any T.
Tensor<3> lm_forward(const xt::xtensor<int, 2>& tokens, const LmWeights& w,
                     const ModelSpec& config);

// The same forward pass, also keeping what each layer's attention looked at (for pictures such
// as chapter 07's per-head heatmaps): the logits are lm_forward's, bit for bit, and weights[l]
// is layer l's (B, H, T, T) attention weights. Costs the memory of L * B * H * T * T floats.
struct LmForward {
  Tensor<3> logits;                // (B, T, V)
  std::vector<Tensor<4>> weights;  // L tensors of (B, H, T, T)
};
LmForward lm_forward_with_weights(const xt::xtensor<int, 2>& tokens, const LmWeights& w,
                                  const ModelSpec& config);

// ---- Training support (chapters 08-09) ----
// Every parameter tensor by name (the load_lm file names without ".npy": "wte", "h0.w_q", ...,
// "lm_head"), in a fixed order, skipping empty ones. `rank` lets an optimizer decay only
// matrices and embeddings (rank >= 2). The spans point into w.
struct NamedTensor {
  std::string name;
  std::span<float> values;
  std::size_t rank;
};
std::vector<NamedTensor> lm_parameters(LmWeights& w);
std::size_t lm_parameter_count(const LmWeights& w);
// Zero tensors shaped like w: the gradient struct.
LmWeights lm_zeros_like(const LmWeights& w);
void lm_zero(LmWeights& g);

// What the forward keeps for the backward, reused between steps (no allocation once sized).
struct LmCache {
  xt::xtensor<int, 2> tokens;      // (B, T)
  std::vector<BlockCache> blocks;  // L
  Tensor<3> x_final;               // (B, T, C) the last block's output
  LayerNormCache ln_f;
  RmsNormCache<float> rms_f;  // ln_f as RMSNorm
  Tensor<3> h;                // (B, T, C) ln_f(x_final)
  Matrix logits;              // (B*T, V), becomes dloss/dlogits in the backward
  // config.dropout > 0: the generator the masks are drawn from (block by block, in order). A
  // training loop reseeds it every step (train.cpp: from the seed and the step, so a resumed run
  // draws the same masks). fixed_dropout_masks: draw none and reuse the masks of the previous
  // call (a gradient check needs the same mask in every evaluation).
  Rng dropout_rng;
  bool fixed_dropout_masks = false;
  // A batch split into shards (lm_batch_shards > 1): each shard's own cache and, for shards 1..,
  // its own gradients (shard 0 adds into the caller's). The fields above then stay unused.
  std::vector<LmCache> shards;
  std::vector<LmWeights> shard_grads;
  std::vector<std::span<float>> reduce_to, reduce_from;  // flat views for adding them up
  // The step's working buffers, in the cache so that a reader sees all the state a step keeps
  // (reused between calls: no allocation once sized): the stream through the blocks and its
  // gradient, each ping-ponging between two (B, T, C) buffers; zeros standing in for ln_f's beta
  // and its gradient in a model without biases; the shards' losses; the chunks of elements the
  // shards' gradients are summed by, (tensor, first element); the fast kernels' scratch, one
  // workspace passed to every block and to the loss (fast/workspace.hpp; a shard has its own in
  // its own cache, and the training step's optimizer uses this one too).
  struct Work {
    Tensor<3> x, x_next, dx_a, dx_b;
    Vector zero_beta, zero_beta_grad;
    std::vector<double> shard_losses;
    std::vector<std::pair<std::size_t, std::size_t>> reduce_chunks;
    fast::Workspace scratch;
  } work;
};
// Mean cross-entropy of the model's next-token predictions: tokens, targets (B, T) ids in [0, V).
double lm_loss(const xt::xtensor<int, 2>& tokens, const xt::xtensor<int, 2>& targets,
               const LmWeights& w, const ModelSpec& config);
// One forward (keeping activations in `cache`) and backward: returns the loss and ADDS
// dloss/dparameter into `grads` (shaped like w: lm_zeros_like; zero it first for a fresh step).
// The tied wte collects both of its uses (embedding rows and output projection).
//
// The fast path splits a batch of small-model rows into lm_batch_shards shards of whole
// sequences: each shard runs its forward and backward on one thread into gradients of its own,
// the shards side by side, and the shards' gradients are added in shard order. A small model's
// step then spreads over many cores (its products, 128 rows of 64 columns, are too small to
// split further), and the result is the same bits on any thread count, because the split
// depends on the sizes alone. (Against one unsplit batch the sums are taken in another order:
// the golden tolerance, not the same bits.)
double lm_forward_backward(const xt::xtensor<int, 2>& tokens, const xt::xtensor<int, 2>& targets,
                           const LmWeights& w, const ModelSpec& config, LmWeights& grads,
                           LmCache& cache);
// The same with the shard count given (1: one batch, the whole step's products at once). It
// must divide B.
double lm_forward_backward(const xt::xtensor<int, 2>& tokens, const xt::xtensor<int, 2>& targets,
                           const LmWeights& w, const ModelSpec& config, LmWeights& grads,
                           LmCache& cache, std::size_t shards);
// The shards lm_forward_backward splits a (B, T) batch into, for a model of `parameters`
// floats: the largest divisor of B that leaves at least kShardRows tokens a shard, is at most
// kMaxShards, and keeps the extra gradients (shards - 1 copies) within kShardGradFloats. A big
// model gets 1: its products are big enough to split over the threads themselves.
inline constexpr std::size_t kShardRows = 128, kMaxShards = 16;
inline constexpr std::size_t kShardGradFloats = std::size_t{16} << 20;  // 64 MiB
std::size_t lm_batch_shards(std::size_t B, std::size_t T, std::size_t parameters);

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
// to the last T_max tokens: one full lm_forward over the cropped context per token. A model with
// rope positions and a sliding window is not cropped: its forward runs over the whole context
// (no position table limits it, and the window bounds what each token sees). Returns only
// the new tokens. The draw is attn::TokenSampler's (sample.hpp).
std::vector<int> lm_generate(const LmWeights& w, const ModelSpec& config,
                             std::span<const int> prompt, const GenerateOptions& options, Rng& rng,
                             const TokenCallback& on_token = {});

}  // namespace attn

// A model as a folder of files: load_lm, save_lm (attn/model/lm_files.hpp).
#include "attn/model/lm_files.hpp"
