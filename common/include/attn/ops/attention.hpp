// attn/ops/attention.hpp: scaled dot-product attention and multi-head attention (chapters 04-05),
// and their backward (chapter 08): the reference, written like the pages.
//   Attention(Q, K, V) = softmax(Q K^T / sqrt(hs) + mask) V
// Shapes: q (B, H, T, hs), k and v (B, H, S, hs) -> out (B, H, T, hs), probs P (B, H, T, S).
// Names: "weights" means parameters (w_q, ..., MhaWeights); the attention probabilities
// P = softmax(q k^T / sqrt(hs)) are `probs` (PyTorch's need_weights is need_probs here), except
// the result and cache fields below, which keep PyTorch's name for them, `weights`.
// S = T for self-attention; S may differ for cross-attention (keys/values from another source).
// The causal mask lets query t see keys 0..t only (requires S == T).
// Multi-head attention has four (C, C) matrices w_q, w_k, w_v, w_o and no biases:
//   q = x @ w_q, k = x @ w_k, v = x @ w_v          (B, T, C)
//   split into H heads of hs = C / H               (B, H, T, hs)
//   per head attention, merge heads, @ w_o          (B, T, C)
// The model's fast path runs the same math in attn/fast/attention.hpp (one kernel, heads read in
// place, BLAS or hand-written head products, threads, caches without allocation).
#pragma once

#include <concepts>
#include <cstddef>

#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"

namespace attn {

template <class Real>
struct AttentionResultOf {
  xt::xtensor<Real, 4> out;      // (B, H, T, hs)
  xt::xtensor<Real, 4> weights;  // (B, H, T, S) the probs P; empty (shape all 0) when not asked
};
using AttentionResult = AttentionResultOf<float>;
using AttentionResult64 = AttentionResultOf<double>;  // the float64 twins: see the end

// Throws std::invalid_argument naming the shapes when they do not fit together, or when
// causal is set and S != T.
AttentionResult scaled_dot_product_attention(const Tensor<4>& q, const Tensor<4>& k,
                                             const Tensor<4>& v, bool causal,
                                             bool need_probs = true);

// (B, T, C) -> (B, H, T, hs): column block h of C becomes head h. Throws if H does not divide C
// ("attn::split_heads: n_heads = 5 does not divide C = 64").
Tensor<4> split_heads(const Tensor<3>& x, std::size_t n_heads);
// (B, H, T, hs) -> (B, T, H * hs), the inverse of split_heads.
Tensor<3> merge_heads(const Tensor<4>& x);

template <class Real>
struct MhaWeightsOf {
  xt::xtensor<Real, 2> w_q;  // (C, C)
  xt::xtensor<Real, 2> w_k;  // (C, C)
  xt::xtensor<Real, 2> w_v;  // (C, C)
  xt::xtensor<Real, 2> w_o;  // (C, C)
  // Attention biases (GPT-2's c_attn and c_proj biases; the spec's attn_bias): q = x w_q + b_q,
  // k = x w_k + b_k, v = x w_v + b_v, out = heads w_o + b_o. b_q, b_o (C,), b_k, b_v (KV hs,);
  // all four empty (size 0) without them, the course's default. (Default member initializers:
  // a brace list of the four matrices, as written before the biases existed, stays complete.)
  xt::xtensor<Real, 1> b_q{}, b_k{}, b_v{}, b_o{};
};
using MhaWeights = MhaWeightsOf<float>;
using MhaWeights64 = MhaWeightsOf<double>;
// Normal(0, std) parameters drawn from rng in the order w_q, w_k, w_v, w_o.
MhaWeights mha_init(Rng& rng, std::size_t C, float std = 0.02f);

template <class Real>
struct MhaResultOf {
  xt::xtensor<Real, 3> out;      // (B, T, C)
  xt::xtensor<Real, 4> weights;  // the probs P (B, H, T, T), (B, H, T, S) for cross-attention;
                                 // empty when not requested
};
using MhaResult = MhaResultOf<float>;
using MhaResult64 = MhaResultOf<double>;

// q, k, v = x w_q, x w_k, x w_v; split into H heads; attention per head; merge; @ w_o. Throws if
// n_heads does not divide C or a weight is not (C, C). An empty w_o (size 0) means no output
// projection: out is the merged heads (BlockConfig::attn_proj = false).
MhaResult mha_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads, bool causal,
                      bool need_probs = true);
// The same, one head at a time with its own (C, hs) column slices of the weights: the way the
// math is usually first written. Equal to mha_forward to float rounding.
MhaResult mha_forward_per_head(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads,
                               bool causal);
// Fused QKV: one (C, 3C) matrix [w_q | w_k | w_v] and one GEMM for all three projections.
Matrix fuse_qkv(const MhaWeights& w);  // (C, 3C)
MhaResult mha_forward_fused(const Tensor<3>& x, const Matrix& w_qkv, const Matrix& w_o,
                            std::size_t n_heads, bool causal, bool need_probs = true);

// Cross-attention: queries from x (B, T, C), keys and values from y (B, S, C). Never causal.
MhaResult mha_cross_forward(const Tensor<3>& x, const Tensor<3>& y, const MhaWeights& w,
                            std::size_t n_heads);

// ---- Backward (chapter 08) ----
// Scaled dot-product attention, per (b, h), with P the attention probabilities and O = P V:
//   dV = P^T dO,  dP = dO V^T,  dS = softmax_backward(P, dP),  dQ = dS K / sqrt(hs),
//   dK = dS^T Q / sqrt(hs)
// Causal: P = 0 on the masked triangle, so dS = 0 there. `probs` are the forward's P
// (B, H, T, S). Same shapes as the forward's q, k, v.
template <class Real>
struct AttentionGradsOf {
  xt::xtensor<Real, 4> dq;  // (B, H, T, hs)
  xt::xtensor<Real, 4> dk;  // (B, H, S, hs)
  xt::xtensor<Real, 4> dv;  // (B, H, S, hs)
};
using AttentionGrads = AttentionGradsOf<float>;
using AttentionGrads64 = AttentionGradsOf<double>;
AttentionGrads scaled_dot_product_attention_backward(const Tensor<4>& dout, const Tensor<4>& q,
                                                     const Tensor<4>& k, const Tensor<4>& v,
                                                     const Tensor<4>& probs, bool causal);

// What mha_forward keeps for its backward: the input, the projections split into heads, the
// attention probabilities P, and the merged heads before w_o.
template <class Real>
struct MhaCacheOf {
  xt::xtensor<Real, 3> x;        // (B, T, C)
  xt::xtensor<Real, 4> q, k, v;  // (B, H, T, hs) each
  xt::xtensor<Real, 4> weights;  // (B, H, T, T) the probs P
  xt::xtensor<Real, 3> heads;    // (B, T, C)   merged head outputs, the input of w_o
};
using MhaCache = MhaCacheOf<float>;
using MhaCache64 = MhaCacheOf<double>;
// The forward that fills `cache` (same `out` as mha_forward; the probs kept in the cache).
Tensor<3> mha_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads, bool causal,
                      MhaCache& cache);
// The forward's steps in reverse order. dout (B, T, C) -> dx (B, T, C) (overwritten, resized if
// needed); grads.w_q, w_k, w_v, w_o accumulate (+=).
void mha_backward(const Tensor<3>& dout, const MhaCache& cache, const MhaWeights& w,
                  std::size_t n_heads, bool causal, Tensor<3>& dx, MhaWeights& grads);

// ---- The float64 twins, for the gradient checks of chapter 08 (attn::check_gradients) ----
// The same code instantiated on double. (Constrained to double, so a float call never picks
// them.)
template <std::same_as<double> Real>
AttentionResultOf<Real> scaled_dot_product_attention(const xt::xtensor<Real, 4>& q,
                                                     const xt::xtensor<Real, 4>& k,
                                                     const xt::xtensor<Real, 4>& v, bool causal,
                                                     bool need_probs = true);
template <std::same_as<double> Real>
AttentionGradsOf<Real> scaled_dot_product_attention_backward(
    const xt::xtensor<Real, 4>& dout, const xt::xtensor<Real, 4>& q, const xt::xtensor<Real, 4>& k,
    const xt::xtensor<Real, 4>& v, const xt::xtensor<Real, 4>& probs, bool causal);
template <std::same_as<double> Real>
xt::xtensor<Real, 4> split_heads(const xt::xtensor<Real, 3>& x, std::size_t n_heads);
template <std::same_as<double> Real>
xt::xtensor<Real, 3> merge_heads(const xt::xtensor<Real, 4>& x);
template <std::same_as<double> Real>
xt::xtensor<Real, 3> mha_forward(const xt::xtensor<Real, 3>& x, const MhaWeightsOf<Real>& w,
                                 std::size_t n_heads, bool causal, MhaCacheOf<Real>& cache);
template <std::same_as<double> Real>
MhaResultOf<Real> mha_forward(const xt::xtensor<Real, 3>& x, const MhaWeightsOf<Real>& w,
                              std::size_t n_heads, bool causal, bool need_probs = true);
template <std::same_as<double> Real>
void mha_backward(const xt::xtensor<Real, 3>& dout, const MhaCacheOf<Real>& cache,
                  const MhaWeightsOf<Real>& w, std::size_t n_heads, bool causal,
                  xt::xtensor<Real, 3>& dx, MhaWeightsOf<Real>& grads);
extern template AttentionResult64 scaled_dot_product_attention<double>(const Tensor64<4>&,
                                                                       const Tensor64<4>&,
                                                                       const Tensor64<4>&, bool,
                                                                       bool);
extern template AttentionGrads64 scaled_dot_product_attention_backward<double>(
    const Tensor64<4>&, const Tensor64<4>&, const Tensor64<4>&, const Tensor64<4>&,
    const Tensor64<4>&, bool);
extern template Tensor64<4> split_heads<double>(const Tensor64<3>&, std::size_t);
extern template Tensor64<3> merge_heads<double>(const Tensor64<4>&);
extern template Tensor64<3> mha_forward<double>(const Tensor64<3>&, const MhaWeights64&,
                                                std::size_t, bool, MhaCache64&);
extern template MhaResult64 mha_forward<double>(const Tensor64<3>&, const MhaWeights64&,
                                                std::size_t, bool, bool);
extern template void mha_backward<double>(const Tensor64<3>&, const MhaCache64&,
                                          const MhaWeights64&, std::size_t, bool, Tensor64<3>&,
                                          MhaWeights64&);

}  // namespace attn
