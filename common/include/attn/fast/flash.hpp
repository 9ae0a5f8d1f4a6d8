// attn/fast/flash.hpp: flash-style attention (chapter 12), the same math as the reference
// attn::scaled_dot_product_attention and its backward (attn/ops/attention.hpp) in O(T * hs)
// memory: tiles of queries against tiles of keys with the online softmax (a running max m and
// sum l per query, the partial output rescaled when m grows), keeping only the output and each
// query's log-sum-exp L = m + log(l); never a (T, S) matrix. Causal tiles above the diagonal are
// skipped. The backward recomputes the weights tile by tile from L, P = exp(S - L), and uses
// D = rowsum(dO * O) for the softmax backward. Threads over (batch, head, query tile) forward;
// backward over whole heads, or, with fewer heads than threads, over (batch, head, key tile) for
// dK, dV and (batch, head, query tile) for dQ; the result does not depend on the thread count.
// The training path of fast/attention.hpp (mha_forward with a cache, mha_backward) runs it from
// kFlashMinT positions on.
// Tested equal to the reference (tests/common/test_flash.cpp).
#pragma once

#include <cstddef>
#include <optional>

#include "attn/core/xt.hpp"
#include "attn/ops/attention.hpp"  // AttentionGrads, MhaWeights

namespace attn::fast {

// The side of a square tile (queries x keys) unless the caller asks for another. Chosen from the
// caches: a (256, 256) tile of scores is 256 KiB, and with the tile's q, k, v rows (3 x 64 KiB at
// hs 64) and its partial outputs it stays within a 1 MiB L2 cache per core, while each BLAS
// product is large enough (256 x 256 x 64) to run near the GEMM peak. Measured on this course's
// machine (docs/12-fast-attention.md): 64 -> 256 saves about 15% of the forward's CPU time.
inline constexpr std::size_t kFlashTile = 256;
// The largest tile a caller may ask for: a tile's scores are tile^2 floats per thread.
inline constexpr std::size_t kMaxFlashTile = 1024;
// From this many positions on, attn::fast::scaled_dot_product_attention and mha_forward (the
// evaluation forward, and the training forward with its cache and mha_backward) run this
// kernel when the caller did not ask for the weights (no (T, S) matrix to return or keep). Above
// every length the chapters, the golden cases and attn-bench's shapes (T <= 1024) use, so their
// outputs and timings keep the blocked kernel of fast/attention.cpp, as fast as this one there.
inline constexpr std::size_t kFlashMinT = 2048;
// Whether a block's attention training forward takes the flash kernel: from kFlashMinT positions
// on, weights not asked for, one K/V head per query head (kv_heads == n_heads) and no window
// (RoPE, applied in the projections before the kernel, does not matter). The one rule that
// fast::mha_forward / gqa_forward and attn::block_activation_floats share.
inline bool takes_flash(std::size_t T, bool need_weights, std::size_t n_heads, std::size_t kv_heads,
                        std::optional<std::size_t> window) {
  return !need_weights && T >= kFlashMinT && kv_heads == n_heads && !window;
}

struct FlashResult {
  Tensor<4> out;  // (B, H, T, hv)
  Tensor<3> lse;  // (B, H, T) log sum_j exp(s_tj) over the visible scaled scores of query t
};

// softmax(q k^T / sqrt(hs) + mask) v, as attn::scaled_dot_product_attention (same checks and
// messages), without the weights. tile in [1, kMaxFlashTile].
FlashResult flash_attention(const Tensor<4>& q, const Tensor<4>& k, const Tensor<4>& v, bool causal,
                            std::size_t tile = kFlashTile);
// dq, dk, dv from the forward's out and lse (no weights): as
// attn::scaled_dot_product_attention_backward.
AttentionGrads flash_attention_backward(const Tensor<4>& dout, const Tensor<4>& q,
                                        const Tensor<4>& k, const Tensor<4>& v,
                                        const Tensor<4>& out, const Tensor<3>& lse, bool causal,
                                        std::size_t tile = kFlashTile);

// Multi-head attention through the flash kernel, as attn::fast::mha_forward without weights:
// x (B, T, C) -> (B, T, C). Memory: the (B, T, 3C) projections and the output, nothing (T, T).
Tensor<3> mha_flash_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads,
                            bool causal, std::size_t tile = kFlashTile);

// What the flash forward keeps for its backward: q|k|v, the merged heads and the row lse.
struct FlashMhaCache {
  Tensor<3> x;      // (B, T, C)
  Tensor<3> qkv;    // (B, T, 3C) q | k | v column blocks
  Tensor<3> heads;  // (B, T, C) merged head outputs, the input of w_o
  Tensor<3> lse;    // (B, H, T)
};
Tensor<3> mha_flash_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads,
                            bool causal, FlashMhaCache& cache, std::size_t tile = kFlashTile);
// dout (B, T, C) -> dx (B, T, C) (overwritten); grads.w_q, w_k, w_v, w_o accumulate (+=).
void mha_flash_backward(const Tensor<3>& dout, const FlashMhaCache& cache, const MhaWeights& w,
                        std::size_t n_heads, bool causal, Tensor<3>& dx, MhaWeights& grads,
                        std::size_t tile = kFlashTile);

// Floating-point operations of one causal or full attention forward over B*H heads of T queries
// and S keys (the two products, 2 FLOPs a multiply-add; causal: the visible half), and of its
// backward (the five products of the flash backward, including the recomputed scores).
double attention_forward_flops(std::size_t B, std::size_t H, std::size_t T, std::size_t S,
                               std::size_t hs, bool causal);
double attention_backward_flops(std::size_t B, std::size_t H, std::size_t T, std::size_t S,
                                std::size_t hs, bool causal);

}  // namespace attn::fast
