// attn/model/kvcache.hpp: generating fast with a KV cache (chapter 10).
// lm_generate (chapter 07) runs the whole model over the whole context for every new token, and
// most of that work recomputes keys and values that have not changed: at layer l, the key and
// value of position t depend only on tokens 0..t. The cache keeps them, per layer:
//   keys[l], values[l]                  (B, H, T_max, hs)   filled position by position
// and a step only computes the new token's row: its q, k, v; k and v appended at position n;
// its single query attending over the n + 1 cached keys (no mask: the cache holds only the past);
// the FFN of that one row; logits (B, V). Per token that is ~2 P + 4 L n C FLOPs (P the
// parameters in the blocks) instead of a forward over the whole context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "attn/fast/workspace.hpp"
#include "attn/model/model.hpp"
#include "attn/core/xt.hpp"

namespace attn {

// The work a cache has done, counted as it runs, in the cache it counts (KvCache::work,
// RollingKvCache::work): prefills (lm_prefill calls, or fills of a rolling cache), steps and the
// positions they pushed through the model (B * T for a prefill of T tokens, B for a step). It
// says how a loop used its cache: n new tokens from a prompt of p <= T_max tokens cost p + n - 1
// positions in one prefill while the cache has room, where a loop that prefills its whole context
// for every token computes about p n + n^2 / 2 (chapter 10's exercise ex10.3 is handed a cache and
// checked this way; a loop that makes caches of its own leaves the one it was handed idle).
struct KvWork {
  std::uint64_t prefills = 0;   // prefills (lm_prefill calls, rolling fills)
  std::uint64_t steps = 0;      // steps (lm_step, lm_step_rolling calls)
  std::uint64_t positions = 0;  // positions computed by both (per sequence, summed over B)
};
// b - a, counter by counter: the work done between two readings.
KvWork operator-(const KvWork& b, const KvWork& a);

struct KvCache {
  std::size_t batch = 0;          // B
  std::size_t length = 0;         // n, positions filled (0..T_max); the next token goes to n
  std::vector<Tensor<4>> keys;    // L x (B, H, T_max, hs)
  std::vector<Tensor<4>> values;  // L x (B, H, T_max, hs)
  // Workspace for a prefill of up to T_max positions or a step, allocated once (rows = B*T_max).
  Matrix x;        // (rows, C) the residual stream
  Matrix h;        // (rows, C) LayerNorm output
  Matrix qkv;      // (rows, 3C) [q | k | v] of each row
  Matrix att;      // (rows, C) attention output, heads merged
  Matrix proj;     // (rows, C) output of a projection, before the residual add
  Matrix hidden;   // (rows, F) FFN hidden layer, F = config.ffn_hidden (4C by default)
  Vector scratch;  // attention scores, attention_scratch_floats(T_max, T_max, hs)
  Matrix logits;   // (B, V) the logits of the last position
  KvWork work;     // what lm_prefill and lm_step have done with this cache
};

// An empty cache (length 0) for `batch` sequences of the model `config`, with every buffer
// allocated. Chapter 07's model only (a position table, multi-head attention without a window,
// LayerNorm and the MLP with biases; GPT-2's attention biases or not): throws
// std::invalid_argument naming the parts of a model with chapter 11's (uses_rolling_cache:
// use a RollingKvCache), for batch 0, a bad config or one of chapter 09's reduced variants.
KvCache kv_cache_init(const ModelSpec& config, std::size_t batch);

// Memory of the keys and values by the formula 2 * L * B * T_max * C floats (hs * H = C), and the
// floats the cache actually holds (the sizes of its keys and values).
std::size_t kv_cache_floats(const ModelSpec& config, std::size_t batch);
std::size_t kv_cache_held_floats(const KvCache& cache);
// The workspace's floats (everything else the cache allocates).
std::size_t kv_cache_workspace_floats(const KvCache& cache);

// The two moves of a step, on one layer's cache (chapter 10's exercises; run_positions in
// kvcache.cpp does the same inside the model):
// Append: rows (B, C), one key (or value) per sequence with its H heads side by side, written at
// position pos: cache[b, h, pos, :] = rows[b, h*hs : (h+1)*hs]. Throws std::invalid_argument for
// pos >= T_max or rows that are not (B, H*hs).
void kv_append(Tensor<4>& cache, const Matrix& rows, std::size_t pos);
// Attend: one query per sequence, q (B, C) with its heads side by side, over the first n cached
// keys and values (B, H, T_max, hs). Per head h, scores_j = q_h . k_j / sqrt(hs) for j < n,
// weights = softmax(scores), out_h = sum_j weights_j v_j; returns (B, C), heads side by side.
// No mask: every cached position is in the past. Throws for n = 0, n > T_max or mismatched shapes.
Matrix attend_cache(const Matrix& q, const Tensor<4>& keys, const Tensor<4>& values, std::size_t n);

// Prefill: runs the model over `tokens`, B sequences of T ids (row-major (B, T), 1 <= T <= T_max),
// into an emptied cache: positions 0..T-2 in one batched pass (at the last layer only their keys
// and values, which is all the future needs), then the last position as a step. Returns the
// logits of the last position (B, V), a view of cache.logits valid until the next call.
// Throws std::invalid_argument for a size that does not fit, ids outside [0, V), a model
// kv_cache_init refuses, or weights that do not match the config (the first tensor whose shape
// is not its row's in the parameter table, by name: "h1.w1 is (8, 16), expected (8, 32)").
const Matrix& lm_prefill(KvCache& cache, std::span<const int> tokens, const LmWeights& w,
                         const ModelSpec& config);

// One step: tokens (B,) at position n = cache.length < T_max; appends their keys and values at n
// and returns the logits (B, V) that predict position n + 1. Allocates nothing.
const Matrix& lm_step(KvCache& cache, std::span<const int> tokens, const LmWeights& w,
                      const ModelSpec& config);

// lm_generate with the cache: the same tokens for the same seed (greedy, temperature, top-k,
// top-p). A model with chapter 11's parts runs through the rolling cache (above): a rope model
// with a window steps on past T_max at O(W) per token, never re-filled. Prefill of the prompt
// (cropped to its last T_max tokens), then one step per token. Past T_max, lm_generate crops the
// context to the last T_max tokens, which moves every token to a new position: every cached key and
// value is stale (they include the position embedding). To give the same tokens, the cache is
// re-filled from the cropped context, a prefill of T_max tokens per new token: from then on a token
// costs about one forward over T_max tokens, like lm_generate's. No allocation per generated token
// (everything is allocated before the first).
std::vector<int> lm_generate_cached(const LmWeights& w, const ModelSpec& config,
                                    std::span<const int> prompt, const GenerateOptions& options,
                                    Rng& rng, const TokenCallback& on_token = {});
struct RollingKvCache;  // below
// The same loop through a cache the caller made and keeps: kv_cache_init(config, 1) for a model of
// chapter 07's parts, rolling_cache_init(config, 1) for one with chapter 11's
// (uses_rolling_cache); its `work` then says what the loop did. Throws std::invalid_argument for
// a cache of the wrong kind or not made for `config`.
std::vector<int> lm_generate_cached(KvCache& cache, const LmWeights& w, const ModelSpec& config,
                                    std::span<const int> prompt, const GenerateOptions& options,
                                    Rng& rng, const TokenCallback& on_token = {});
std::vector<int> lm_generate_cached(RollingKvCache& cache, const LmWeights& w,
                                    const ModelSpec& config, std::span<const int> prompt,
                                    const GenerateOptions& options, Rng& rng,
                                    const TokenCallback& on_token = {});

// ---- The rolling cache: models with chapter 11's parts (RoPE, grouped-query attention, a
// sliding window, RMSNorm, SwiGLU, no biases). Each layer keeps `capacity` positions per K/V
// head, written round-robin: position p goes to slot p % capacity, over the oldest one.
//   keys[l], values[l]        (B, KV, capacity, hs)     KV = n_kv_heads: GQA shrinks the cache
// capacity is the window W for a sliding-window model, else T_max. A step embeds the new token,
// and per layer: norm, q (H heads), k and v (KV heads), RoPE on q and k at the token's absolute
// position, k and v into their slot, each query head h attending over the visible positions of
// K/V head h / (H / KV) (the last W, or all of the last T_max), w_o, the FFN. The same fast
// kernels as the full forward (GEMMs, fast/rmsnorm, fast/rope, the attention kernel,
// fast/swiglu), on one row: the cached logits equal lm_forward's over the whole sequence within
// the golden tolerance (the GEMMs sum in another order on one row than on many).
// A sliding-window model with rope positions never needs more than the last W keys of a layer
// (the window) and has no position table: generation goes on past T_max at O(W) per token,
// the cache never refilled. Learned positions, or no window, still end at T_max (the table, or
// a context cropped to T_max, which moves every token): lm_generate_cached re-fills then.

// A rolling step's buffers (RollingKvCache::step): sized by the first step, reused by
// every step after, so that a step allocates nothing.
struct RollingStepBuffers {
  Matrix x, h, q, heads, proj;      // (B, C): the residual stream, a norm's output, q, ...
  Matrix k, v;                      // (B, KV hs)
  Tensor<3> ffn_in, ffn_out;        // (B, 1, C): the FFN's input and output
  FfnCache mlp;                     // the MLP's hidden values (B, 1, F)
  SwigluCache<float> swiglu;        // or SwiGLU's
  FfnWeights mlp_zero_bias;         // a model without biases: the MLP's weights, zero biases
  Vector zeros;                     // (C,): LayerNorm's beta in a model without biases
  std::vector<float> attn_scratch;  // the attention kernel's
};
struct RollingKvCache {
  std::size_t batch = 0;          // B
  std::size_t capacity = 0;       // W with a window, else T_max
  std::size_t length = 0;         // positions seen: the next token is at position `length`
  std::vector<Tensor<4>> keys;    // L x (B, KV, capacity, hs), RoPE applied
  std::vector<Tensor<4>> values;  // L x (B, KV, capacity, hs)
  Matrix logits;                  // (B, V) the logits of the last step
  fast::Workspace scratch;        // the fast kernels' scratch (RoPE's angles), kept between steps
  RollingStepBuffers step;        // a step's activations, kept between steps
  KvWork work;                    // the fills and steps done with this cache
};
// True for a model with any part other than chapter 07's (block_default_parts false, or rope):
// lm_generate_cached runs it through the rolling cache.
bool uses_rolling_cache(const ModelSpec& config);
// An empty rolling cache for `batch` sequences. Throws std::invalid_argument for batch 0, a bad
// config or a model of chapter 09's reduced variants (no LayerNorm, residual, FFN or w_o).
RollingKvCache rolling_cache_init(const ModelSpec& config, std::size_t batch);
// Floats held by its keys and values: 2 L B capacity KV hs (the KV bytes per token is
// this / (B capacity) * 4).
std::size_t rolling_cache_floats(const ModelSpec& config, std::size_t batch);
// One token per sequence (tokens (B,)) at position cache.length; returns the logits (B, V) that
// predict the next position. Throws std::invalid_argument when the cache is full (learned
// positions or no window: length = T_max; a rope model with a window never is), for ids outside
// [0, V), or weights or a cache that do not match the config.
const Matrix& lm_step_rolling(RollingKvCache& cache, std::span<const int> tokens,
                              const LmWeights& w, const ModelSpec& config);

// Forward FLOPs to produce one token (B = 1), by formula,// Forward FLOPs to produce one token (B =
// 1), by formula, counting the GEMMs only (2 M K N for an (M, K) @ (K, N) product):
//   uncached, context of T tokens: a forward over T positions
//       L * (2 T (4 C^2 + 2 C F) + 4 T^2 C) + 2 T C V        (F = 4C)
//   cached, step at position n (n + 1 keys):
//       L * (2 (4 C^2 + 2 C F) + 4 (n + 1) C) + 2 C V
// (The uncached formula counts the masked half of the scores too, as block_forward_flops does.)
//   re-fill past T_max (lm_prefill of T_max tokens): positions 0..T_max-2 through L-1 whole
//   layers plus the last layer's k and v, then a step at position T_max - 1
//       (L - 1) (2 (T-1) (4 C^2 + 2 C F) + 4 (T-1)^2 C) + 2 (T-1) 2 C^2 + cached(T - 1), T = T_max
double lm_token_flops_uncached(const ModelSpec& config, std::size_t T);
double lm_token_flops_cached(const ModelSpec& config, std::size_t n);
double lm_token_flops_refill(const ModelSpec& config);

}  // namespace attn
