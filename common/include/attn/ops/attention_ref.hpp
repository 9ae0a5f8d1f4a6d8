// attn/ops/attention_ref.hpp: the reference attention, every option of the course in one
// function (in the style of flash-attention's attention_ref). Chapter 04's scaled dot-product
// attention, chapter 11's sliding window and grouped-query attention and chapter 10's KV-cache
// step are this function with some options set; every fast kernel is tested against it.
//
//   score[i, j] = q_i . k_j / sqrt(hs) + bias[h, i, j]      query row i, key j, head h
//   score[i, j] = -inf where key j is hidden from query i   (its probability is exactly 0)
//   P[i, :] = softmax(score[i, :]),  out_i = sum_j P[i, j] v_j
//
// Which keys a query sees. Query row i stands at position p = offset + i of the sequence, key j
// at position j:
//   causal     key j is visible when j <= p            (no key from the future)
//   window W   ... and when j > p - W                  (only the last W positions, p's own too)
// offset 0 is attention over one sequence (T queries, S = T keys); a KV-cache step is the one
// new query (T = 1) at offset = pos over the S = pos + 1 keys in the cache.
//
// Groups of heads. q has H heads, k and v have KV, and query head h reads K/V head
// g = h / (H / KV): KV = H is multi-head attention (chapter 05), KV = 1 multi-query, anything
// between grouped-query attention (chapter 11).
//
// A model's score-level parts (ScoreParts: ALiBi's distance penalty) are options like the
// others, computed as the scores are. A bias tensor, the other overload, is added the same way:
// a padding mask, a relative-position table. Both go to the scores before the mask and the
// softmax; they are inputs, not parameters: the backward gives no gradient for them.
//
// Shapes: q (B, H, T, hs), k (B, KV, S, hs), v (B, KV, S, hv), bias (H, T, S)
//   -> out (B, H, T, hv), probs (B, H, T, S) (0 wherever a key is hidden).
// Templated on the scalar: float for the model, double for the gradient checks; every sum is
// taken in double and rounded once.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "attn/core/xt.hpp"

namespace attn {

// What a model adds to the scores q . k / sqrt(hs) of every head: its score-level parts. A new
// one is a field here, its formula in score_bias_value (attention_ref.cpp) and in the fast
// kernel (fast/attention.cpp), and its choice in the spec (model/spec.cpp: attention_options).
struct ScoreParts {
  bool alibi = false;  // ALiBi's distance penalty, bias[h, i, j] = -m_h (p - j) (below)
  bool any() const { return alibi; }
};

struct AttentionOptions {
  bool causal = false;                // query p sees keys 0..p only
  std::optional<std::size_t> window;  // W >= 1: keys p-W+1..p only (needs causal); none: all
  std::size_t offset = 0;             // the position of query row 0 (keys start at position 0)
  bool need_probs = true;             // false: probs left empty (shape all 0)
  ScoreParts score;                   // the model's score-level parts, none by default
};

template <class S>
struct AttentionRefResult {
  xt::xtensor<S, 4> out;    // (B, H, T, hv)
  xt::xtensor<S, 4> probs;  // (B, H, T, S) the attention probabilities P; empty if not asked
};

template <class S>
struct AttentionRefGrads {
  xt::xtensor<S, 4> dq;  // (B, H, T, hs)
  xt::xtensor<S, 4> dk;  // (B, KV, S, hs): K/V head g collects the gradients of its H / KV
  xt::xtensor<S, 4> dv;  // (B, KV, S, hv)   query heads
};

// Throws std::invalid_argument, one line naming the function and what is wrong: shapes that do
// not fit together, KV not dividing H, hs or S of 0, a window of 0 or without causal, a causal
// query with no key at its own position (offset + T > S), a bias not (H, T, S).
template <class S>
AttentionRefResult<S> attention_ref(const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
                                    const xt::xtensor<S, 4>& v, const AttentionOptions& options);
template <class S>
AttentionRefResult<S> attention_ref(const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
                                    const xt::xtensor<S, 4>& v, const AttentionOptions& options,
                                    const xt::xtensor<S, 3>& bias);

// The backward, per (b, h), with P the forward's probs and O = P V (chapter 08):
//   dV = P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(dP * P)),
//   dQ = dS K / sqrt(hs),  dK = dS^T Q / sqrt(hs)
// Hidden keys have P = 0, hence dS = 0: the mask needs no other care, and neither does the bias
// (a constant added to S). dk and dv of K/V head g sum over the query heads that read it.
// `options` are the forward's (need_probs unused); dout is shaped like the forward's out.
template <class S>
AttentionRefGrads<S> attention_ref_backward(const xt::xtensor<S, 4>& dout,
                                            const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
                                            const xt::xtensor<S, 4>& v,
                                            const xt::xtensor<S, 4>& probs,
                                            const AttentionOptions& options);

// ---- ALiBi (Press, Smith and Lewis 2022, "Train Short, Test Long"): no position table and no
// rotation; each head h instead penalises a key by its distance from the query,
//   bias[h, i, j] = -m_h * (p - j)          query row i at position p = offset + i, key j,
// a line whose slope m_h differs per head, so that some heads look far and others near.
// The slopes, as the paper's reference code computes them for any H: a power of two gives
//   m_h = 2^(-8 (h + 1) / H)                H = 8: 1/2, 1/4, ..., 1/256
// otherwise the closest power of two n < H gives its n slopes, then every other slope of 2n
// (the first H - n of 2^(-8 (2k + 1) / 2n), k = 0, 1, ...). Throws std::invalid_argument for
// H = 0. (ScoreParts::alibi asks attention_ref, and the fast kernels, for this bias.)
std::vector<double> alibi_slopes(std::size_t n_heads);
// The slopes of the score-level parts that have them (ALiBi's, one per query head), or none.
std::vector<double> score_slopes(const ScoreParts& parts, std::size_t n_heads);
// One of them alone, score_slopes(parts, n_heads)[h] to the bit, 0 without a part that has
// slopes: what a fast kernel computes per query row, with no vector to allocate per call.
double score_slope(const ScoreParts& parts, std::size_t h, std::size_t n_heads);
// The (H, T, S) bias above (keys after p get -m_h (p - j) > 0, but a causal mask hides them).
template <class S>
xt::xtensor<S, 3> alibi_bias(std::size_t n_heads, std::size_t T, std::size_t S_keys,
                             std::size_t offset = 0);

}  // namespace attn
