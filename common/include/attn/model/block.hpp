// attn/model/block.hpp: the transformer block (chapter 06).
//   pre-norm (default, GPT-2 style):  x = x + attn(ln1(x));  x = x + ffn(ln2(x))
//   post-norm (original Transformer): x = ln1(x + attn(x));  x = ln2(x + ffn(x))
// The residual additions keep a direct path from input to output; LayerNorm keeps the scale of
// the activations in check as blocks are stacked.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "attn/fast/attention.hpp"
#include "attn/fast/workspace.hpp"
#include "attn/ops/attention.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/ops/gqa.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/rmsnorm.hpp"
#include "attn/ops/swiglu.hpp"
#include "attn/model/spec.hpp"
#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"

namespace attn {

enum class NormPlacement { pre, post };
NormPlacement parse_norm(std::string_view name);  // "pre" | "post", else std::invalid_argument
std::string_view norm_name(NormPlacement n);

// How one block runs: the model's spec (its heads, parts, ablations, activation and dropout:
// attn/model/spec.hpp), and the four things a block can do that a language model's blocks
// always do the same way (chapter 06 tries the others).
struct BlockConfig {
  ModelSpec spec;                           // the model the block belongs to
  bool causal = true;                       // decoder (true) or encoder (false)
  NormPlacement norm = NormPlacement::pre;  // where the norms go
  float eps = 1e-5f;                        // the norms' epsilon
  // false: skip the (B, H, T, T) attention weights (BlockResult::weights empty; faster, less
  // memory); and from T = fast::kFlashMinT on, the flash kernel, in the training forward too
  // (the cache keeps L (B, H, T), not the weights).
  bool keep_weights = true;
};

// The spec of a lone block of width C with H heads (chapters 06 and 08 run blocks outside a
// model): the default model's parts, that width, those heads and that activation. Throws
// attn::SpecError when H does not divide C.
ModelSpec block_spec(std::size_t C, std::size_t n_heads, Activation activation = Activation::gelu);

// The attention part of the config as grouped-query attention takes it (attn/ops/gqa.hpp).
GqaConfig gqa_config(const BlockConfig& config);

// One block's parameters, the model's in float and the float64 reference's (model/reference.hpp)
// in double: one family. Their names and shapes are the parameter table's (model/params.hpp).
template <class S>
struct BlockWeightsOf {
  MhaWeightsOf<S> attn;  // w_q, w_o (C, C); w_k, w_v (C, KV * hs): (C, C) unless GQA
  xt::xtensor<S, 1> ln1_gamma, ln1_beta;  // (C,) (RMSNorm, or no bias: beta empty)
  xt::xtensor<S, 1> ln2_gamma, ln2_beta;  // (C,)
  FfnWeightsOf<S> ffn;      // MLP: w1 (C, F), b1 (F,), w2 (F, C), b2 (C,) (no bias: b empty)
  SwigluWeights<S> swiglu;  // SwiGLU: w_gate (C, F), w_up (C, F), w_down (F, C); else empty
};
using BlockWeights = BlockWeightsOf<float>;
// Normal(0, 0.02) matrices, LayerNorm gamma = 1 and beta = 0, zero biases.
BlockWeights block_init(Rng& rng, std::size_t C, std::size_t F);
// (A model's blocks, with any parts, are drawn by lm_init from the parameter table,
// model/params.hpp: these draws, then what the parts change.)

// Called after each step of the block with its name and the tensor it produced, e.g.
// ("ln1", (B, T, C)), ("attn", ...), ("residual1", ...), ("ln2", ...), ("ffn", ...),
// ("residual2", ...). For shape traces and debugging.
using BlockTrace = std::function<void(std::string_view step, const Tensor<3>& value)>;

struct BlockResult {
  Tensor<3> out;      // (B, T, C)
  Tensor<4> weights;  // (B, H, T, T) attention weights; (0, 0, 0, 0) without keep_weights
};
// x (B, T, C) -> (B, T, C). Throws std::invalid_argument naming any mis-shaped weight.
BlockResult block_forward(const Tensor<3>& x, const BlockWeights& w, const BlockConfig& config,
                          const BlockTrace& trace = {});

// ---- Backward (chapter 08) ----
// The block's working buffers, reused between calls (no allocation once sized): state a reader
// can see, kept in the cache (or made for one evaluation forward), never hidden per thread.
struct BlockWork {
  Tensor<3> h, f;                     // the training forward: a norm's output, the FFN's output
  Tensor<3> d_stream, d_sub, d_drop;  // the backward's (B, T, C) gradients
  Vector zeros, zeros_grad;           // C zeros for a missing LayerNorm beta, and its gradient
  FfnWeights mlp, mlp_grads;          // the MLP with zero biases (no biases), its gradients
  RmsNormCache<float> rms;            // what an evaluation RMSNorm keeps (read by nobody)
  // The fast kernels' scratch (fast/workspace.hpp) when the block is called on its own; a model
  // passes one workspace to all its blocks instead (the overloads taking a fast::Workspace).
  fast::Workspace scratch;
};

// Everything block_backward needs from the forward. Held explicitly (no hidden tape); only what
// the configuration's backward reads is kept, the other fields are empty, and activation_floats
// counts it (block_activation_floats gives the same number by formula):
//   pre-norm:  x = the block input (for ln1's backward; empty without LayerNorm), residual1 =
//              the stream after attention (ln2's input), attn.x = ln1(x), ffn.x = ln2(...)
//   post-norm: residual1 = x + attn(x) (ln1's input), ln2_in = x1 + ffn(x1) (ln2's input),
//              attn.x = the block input, ffn.x = ln1(...)
// ln1_in, ln1_out and ln2_out stay empty: those tensors are already held by another field.
struct BlockCache {
  Tensor<3> x;                // (B, T, C) block input (pre-norm with LayerNorm only)
  LayerNormCache ln1, ln2;    // per-token mean and rstd
  Tensor<3> ln1_in, ln1_out;  // unused (empty)
  Tensor<3> ln2_in, ln2_out;  // post-norm: ln2's input (B, T, C); ln2_out unused
  fast::MhaCache attn;        // its input, q|k|v, weights (B, H, T, T) or L, merged heads
  Tensor<3> residual1;        // (B, T, C) the stream after the attention step
  FfnCache ffn;               // its input (B, T, C), pre-activation and activation (B, T, F)
  // config.dropout > 0: the scaled keep-masks (B, T, C), 0 or 1 / (1 - p) (ops/dropout.hpp), of
  // the attention's output and the FFN's output; empty when dropout is off.
  Tensor<3> drop_attn, drop_ffn;
  // Other parts (block_default_parts false), on their fast kernels (fast/gqa.hpp, rmsnorm.hpp,
  // swiglu.hpp): grouped-query attention keeps what MHA keeps, in attn (qkv is (B, T, C +
  // 2 KV hs), q and k after RoPE); RMSNorm keeps rstd per token in rms1 / rms2 (ln1 / ln2
  // empty); SwiGLU keeps its input, a, u and h in swiglu (ffn empty).
  RmsNormCache<float> rms1, rms2;
  SwigluCache<float> swiglu;
  // Not read by the backward: the buffers the training forward and the backward work in.
  BlockWork work;
};
// The forward that fills `cache` (same out as block_forward; weights stay in the cache), the
// training forward. With config.dropout > 0 it draws new masks from `dropout_rng` (the attention
// mask's B*T*C draws, then the FFN's), or, with no generator, reuses the masks already in the
// cache (a fixed mask: what a gradient check needs); they must then be (B, T, C).
Tensor<3> block_forward(const Tensor<3>& x, const BlockWeights& w, const BlockConfig& config,
                        BlockCache& cache, Rng* dropout_rng = nullptr);
// The same, written into `out` (resized only when its shape differs: a training loop passing the
// same buffers every step allocates nothing). `out` must not be `x`.
void block_forward(const Tensor<3>& x, const BlockWeights& w, const BlockConfig& config,
                   BlockCache& cache, Tensor<3>& out, Rng* dropout_rng = nullptr);
// The same with the kernels' scratch from `ws` (the model's, shared by its blocks) instead of
// cache.work.scratch.
void block_forward(const Tensor<3>& x, const BlockWeights& w, const BlockConfig& config,
                   BlockCache& cache, Tensor<3>& out, fast::Workspace& ws,
                   Rng* dropout_rng = nullptr);
// dout (B, T, C) -> dx (B, T, C) (overwritten); every tensor of grads accumulates (+=). grads
// has the shapes of w (block_zeros_like). The cache is read, and its `work` buffers written.
void block_backward(const Tensor<3>& dout, BlockCache& cache, const BlockWeights& w,
                    const BlockConfig& config, Tensor<3>& dx, BlockWeights& grads);
// The same with the kernels' scratch from `ws` instead of cache.work.scratch.
void block_backward(const Tensor<3>& dout, BlockCache& cache, const BlockWeights& w,
                    const BlockConfig& config, Tensor<3>& dx, BlockWeights& grads,
                    fast::Workspace& ws);
// Zero tensors shaped like w (the gradient struct an optimizer walks beside the weights).
BlockWeights block_zeros_like(const BlockWeights& w);
// Floats held by a cache, and the same by formula for (B, T, C, F, H) (chapter 08 prints both).
std::size_t activation_floats(const BlockCache& cache);
std::size_t block_activation_floats(std::size_t B, std::size_t T, std::size_t C, std::size_t F,
                                    std::size_t H, const BlockConfig& config);

// Parameter count and forward FLOPs of one block, from the formulas:
//   params = 4 C^2 (attention) + 2 C F + F + C (FFN) + 4 C (two LayerNorms)
//   flops  = 2 * B * T * (4 C^2 + 2 C F) (the GEMMs) + 4 * B * H * T^2 * hs (scores, weights @ v)
std::size_t block_param_count(std::size_t C, std::size_t F);
double block_forward_flops(std::size_t B, std::size_t T, std::size_t C, std::size_t F,
                           std::size_t H);
double mha_forward_flops(std::size_t B, std::size_t T, std::size_t C, std::size_t H);
// The number of floats actually held by the weights (checked against the formula in ch06).
std::size_t parameter_count(const BlockWeights& w);

}  // namespace attn
