// attn/fast/attention.hpp: attention on the model's fast path (chapters 04-10). The same math as
// the reference attn::scaled_dot_product_attention and attn::mha_forward / mha_backward
// (attn/ops/attention.hpp, the pages' equations), written for speed: one kernel for every entry
// point, per (batch, head) scores by one product, a branch-free SIMD row softmax, weights @ v by a
// second product; BLAS GEMMs, or for small heads the hand-written loops of head_products.hpp;
// heads read in place inside the (B, T, 3C) projection (split and merge cost nothing); causal
// blocks skip the masked triangle; (b, h) pairs over the library's threads (the result does not
// depend on the thread count); caller-owned caches, outputs and scratch (a Workspace,
// workspace.hpp: no allocation in a training loop). Tested equal to the reference
// (tests/common/test_fast_layernorm_attention.cpp).
#pragma once

#include <cstddef>

#include "attn/core/xt.hpp"
#include "attn/ops/attention.hpp"      // AttentionResult, AttentionGrads, MhaWeights, MhaResult
#include "attn/ops/attention_ref.hpp"  // ScoreParts, score_slope
#include "attn/fast/workspace.hpp"

namespace attn::fast {

// Like attn::scaled_dot_product_attention and its backward (same checks, same messages).
AttentionResult scaled_dot_product_attention(const Tensor<4>& q, const Tensor<4>& k,
                                             const Tensor<4>& v, bool causal,
                                             bool need_weights = true);
AttentionGrads scaled_dot_product_attention_backward(const Tensor<4>& dout, const Tensor<4>& q,
                                                     const Tensor<4>& k, const Tensor<4>& v,
                                                     const Tensor<4>& weights, bool causal);

// Like attn::mha_forward: one GEMM per projection into a (B, T, 3C) buffer [q | k | v], attention
// for all heads read in place, one GEMM out. An empty w_o (size 0) means no output projection.
MhaResult mha_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads, bool causal,
                      bool need_weights = true);
// Fused QKV: w_qkv = attn::fuse_qkv(w), (C, 3C), one GEMM for all three projections.
MhaResult mha_forward_fused(const Tensor<3>& x, const Matrix& w_qkv, const Matrix& w_o,
                            std::size_t n_heads, bool causal, bool need_weights = true);
// Cross-attention: queries from x (B, T, C), keys and values from y (B, S, C). Never causal.
MhaResult mha_cross_forward(const Tensor<3>& x, const Tensor<3>& y, const MhaWeights& w,
                            std::size_t n_heads);

// What the fast forward keeps for its backward: the input, q|k|v in the kernel's (B, T, 3C)
// layout (heads read in place), the merged heads before w_o, and for the softmax backward either
// the attention weights P (B, H, T, T) or, on the flash path, one number per query, its row
// log-sum-exp L (B, H, T), from which the backward recomputes P tile by tile
// (fast/flash.hpp). The path: the flash kernel from T >= kFlashMinT when the caller does not ask
// for the weights, else the weights; the field of the other path is empty.
// (The reference's attn::MhaCache keeps q, k, v split into heads instead.)
struct MhaCache {
  Tensor<3> x;        // (B, T, C)
  Tensor<3> qkv;      // (B, T, 3C)  q | k | v column blocks
  Tensor<4> weights;  // (B, H, T, T), or (0, 0, 0, 0) on the flash path
  Tensor<3> lse;      // (B, H, T) on the flash path, else (0, 0, 0)
  Tensor<3> heads;    // (B, T, C)   merged head outputs, the input of w_o
};
// The forward that fills `cache`, written into `out` (resized only when its shape differs: a
// training loop passing the same buffers every step allocates nothing). `out` must not be `x`;
// `x` may be cache.x itself (then nothing is copied). need_weights = false lets sequences of
// T >= kFlashMinT run the flash kernel: no (T, T) buffer, cache.weights left empty (a caller
// that reads cache.weights, as chapters 08 and 09 do, keeps the default).
// Its scratch (RoPE's table, blocks of scores) comes from `ws`, the caller's; the overload
// without one makes its own per call.
void mha_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads, bool causal,
                 MhaCache& cache, Tensor<3>& out, bool need_weights, Workspace& ws);
void mha_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads, bool causal,
                 MhaCache& cache, Tensor<3>& out, bool need_weights = true);
// The same, returning out.
Tensor<3> mha_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads, bool causal,
                      MhaCache& cache, bool need_weights = true);
// dout (B, T, C) -> dx (B, T, C) (overwritten); grads.w_q, w_k, w_v, w_o accumulate (+=).
// Through the flash backward when the forward took the flash path (cache.lse filled). dq | dk |
// dv, (B*T, 3C), and the other scratch come from `ws` (or, without one, a workspace per call).
void mha_backward(const Tensor<3>& dout, const MhaCache& cache, const MhaWeights& w,
                  std::size_t n_heads, bool causal, Tensor<3>& dx, MhaWeights& grads,
                  Workspace& ws);
void mha_backward(const Tensor<3>& dout, const MhaCache& cache, const MhaWeights& w,
                  std::size_t n_heads, bool causal, Tensor<3>& dx, MhaWeights& grads);

// The attention kernel itself, for callers that keep q, k, v and out in their own layouts
// (chapter 10's KV cache). Head h of batch b of q starts at q + b * batch + h * head, its rows
// `row` floats apart; the same for k, v (S rows) and out (T rows). Runs on the calling thread and
// allocates nothing: `scratch` holds attention_scratch_floats(T, S, hs) floats. causal requires
// S == T.
struct HeadStrides {
  std::size_t batch, head, row;
};
// The score-level parts' bias (attn::ScoreParts, a line in the distance between query and key,
// attn/ops/attention_ref.hpp), computed in the score loop, never stored: head h's query row t
// adds -m (p - s) to its score of key s, rounded to float as the reference's bias tensor is, with
//   m = score_slope(parts, h * head + t * row, n_heads)   (attn::score_slope: query head i of
//                                        n_heads, computed per row: nothing is allocated)
//   p = query + t * step                 the query's position; key s stands at position s,
// except in a ring of `ring` slots (the rolling cache), where a slot after p holds the position
// `ring` earlier. None when parts has none. The defaults are a block's attention over one
// sequence: kernel head h is query head h, row t at position t.
struct ScoreBias {
  ScoreParts parts;         // the model's score-level parts (none: no bias)
  std::size_t n_heads = 0;  // H, the model's query heads
  std::size_t head = 1, row = 0;
  std::size_t query = 0, step = 1;
  std::size_t ring = 0;
};
void attention_strided(std::size_t B, std::size_t H, std::size_t T, std::size_t S, std::size_t hs,
                       const float* q, HeadStrides q_strides, const float* k, HeadStrides k_strides,
                       const float* v, HeadStrides v_strides, float* out, HeadStrides out_strides,
                       bool causal, float* scratch, ScoreBias bias = {});
// The scratch size attention_strided needs: a block of scores, min(64, T) * S floats, and for
// heads of 8, 16, ... 64 floats and S <= 256 (written by hand, not BLAS) room for k^T,
// hs * (S rounded up to 16) floats.
std::size_t attention_scratch_floats(std::size_t T, std::size_t S, std::size_t hs);

}  // namespace attn::fast
