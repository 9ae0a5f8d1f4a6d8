// attention.cpp: scaled dot-product attention and multi-head attention (chapters 04-05) and
// their backward (chapter 08): the reference, the pages' equations in the pages' order. The
// attention itself is the reference attention's (ops/attention_ref.cpp), every sum in double;
// this file adds the heads around it. The model's fast path runs the same math in
// fast/attention.cpp (one kernel, heads read in place, BLAS or hand-written head products,
// threads), tested equal to this file.
#include "attn/ops/attention.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>

#include "attn/ops/attention_ref.hpp"
#include "attn/ops/linear.hpp"
#include "attention_checks.hpp"

namespace attn {

using detail::check_heads;
using detail::check_mha;
using detail::check_weight;

namespace {

// The bodies of this file are templates on the scalar (Real: float, or double for the float64
// twins that chapter 08's gradient checks run); the public functions below forward to them.
template <class Real>
using Mat = xt::xtensor<Real, 2>;
template <class Real>
using Ten3 = xt::xtensor<Real, 3>;
template <class Real>
using Ten4 = xt::xtensor<Real, 4>;

// ---------------------------------------------------------------------------------------------
// Scaled dot-product attention (chapter 04)
// ---------------------------------------------------------------------------------------------

// q (B, H, T, hs), k (B, H, S, hs), v (B, H, S, hv) -> out (B, H, T, hv), probs (B, H, T, S).
// Chapter 04's four steps (scores, mask, softmax, weighted sum of the values) are the reference
// attention's (ops/attention_ref.cpp) with one K/V head per query head and no window.
template <class Real>
AttentionResultOf<Real> sdpa_of(const Ten4<Real>& q, const Ten4<Real>& k, const Ten4<Real>& v,
                                bool causal, bool need_probs) {
  detail::check_sdpa("attn::scaled_dot_product_attention", q, k, v, causal);
  AttentionOptions options;
  options.causal = causal;
  options.need_probs = need_probs;
  AttentionRefResult<Real> r = attention_ref<Real>(q, k, v, options);
  return {std::move(r.out), std::move(r.probs)};
}

// dout (B, H, T, hv), q, k, v as the forward, probs P (B, H, T, S) from the forward
// -> dq (B, H, T, hs), dk (B, H, S, hs), dv (B, H, S, hv): the reference attention's backward.
template <class Real>
AttentionGradsOf<Real> sdpa_backward_of(const Ten4<Real>& dout, const Ten4<Real>& q,
                                        const Ten4<Real>& k, const Ten4<Real>& v,
                                        const Ten4<Real>& probs, bool causal) {
  detail::check_sdpa_backward("attn::scaled_dot_product_attention_backward", dout, q, k, v, probs,
                              causal);
  AttentionOptions options;
  options.causal = causal;
  AttentionRefGrads<Real> g = attention_ref_backward<Real>(dout, q, k, v, probs, options);
  return {std::move(g.dq), std::move(g.dk), std::move(g.dv)};
}

// ---------------------------------------------------------------------------------------------
// Heads (chapter 05)
// ---------------------------------------------------------------------------------------------

template <class Real>
Ten4<Real> split_heads_of(const Ten3<Real>& x, std::size_t n_heads) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  check_heads("attn::split_heads", n_heads, C);
  const std::size_t H = n_heads, hs = C / H;
  // (B, T, C) -> (B, T, H, hs) -> (B, H, T, hs): row t of head h is the contiguous run of hs
  // Reals at column h*hs of x's row t, so each copy moves one run.
  Ten4<Real> out(typename Ten4<Real>::shape_type{B, H, T, hs});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t h = 0; h < H; ++h) {
        const Real* src = x.data() + (b * T + t) * C + h * hs;  // x[b, t, h*hs : (h+1)*hs]
        std::copy(src, src + hs, out.data() + ((b * H + h) * T + t) * hs);  // out[b, h, t, :]
      }
  return out;
}

template <class Real>
Ten3<Real> merge_heads_of(const Ten4<Real>& x) {
  const std::size_t B = x.shape()[0], H = x.shape()[1], T = x.shape()[2], hs = x.shape()[3];
  const std::size_t C = H * hs;
  // (B, H, T, hs) -> (B, T, H, hs) -> (B, T, C): the heads side by side again, head h in
  // columns [h*hs, (h+1)*hs).
  Ten3<Real> out(typename Ten3<Real>::shape_type{B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t) {
        const Real* src = x.data() + ((b * H + h) * T + t) * hs;  // x[b, h, t, :]
        std::copy(src, src + hs, out.data() + (b * T + t) * C + h * hs);
      }
  return out;
}

// Steps 2-4 of every multi-head variant, from the projections q (B, T, C), k and v (B, S, C).
// The heads, the probs and the merged output are kept in `cache` (its x is left alone).
template <class Real>
Ten3<Real> attend_heads_and_project(const Ten3<Real>& q, const Ten3<Real>& k, const Ten3<Real>& v,
                                    std::size_t n_heads, const Mat<Real>& w_o, bool causal,
                                    MhaCacheOf<Real>& cache) {
  // 2. Split into heads: column block h of C becomes head h.
  //    (B, T, C) -> (B, H, T, hs);  (B, S, C) -> (B, H, S, hs)
  cache.q = split_heads(q, n_heads);
  cache.k = split_heads(k, n_heads);
  cache.v = split_heads(v, n_heads);
  // 3. Attention in every head, then the heads side by side again:
  //    (B, H, T, hs) -> out (B, H, T, hs), probs (B, H, T, S);  (B, H, T, hs) -> (B, T, C)
  AttentionResultOf<Real> a = scaled_dot_product_attention(cache.q, cache.k, cache.v, causal);
  cache.weights = std::move(a.weights);
  cache.heads = merge_heads(a.out);
  // 4. The output projection mixes the heads: (B, T, C) @ (C, C) -> (B, T, C). Without w_o (an
  //    empty matrix: the attention-only variant) the output is the merged heads themselves.
  return w_o.size() == 0 ? cache.heads : linear(cache.heads, w_o);
}

template <class Real>
Ten3<Real> mha_forward_of(const Ten3<Real>& x, const MhaWeightsOf<Real>& w, std::size_t n_heads,
                          bool causal, MhaCacheOf<Real>& cache) {
  check_mha("attn::mha_forward", x, w, n_heads, /*allow_no_proj=*/true);
  cache.x = x;
  // 1. Projections: (B, T, C) @ (C, C) -> (B, T, C), three times.
  const Ten3<Real> q = linear(x, w.w_q);
  const Ten3<Real> k = linear(x, w.w_k);
  const Ten3<Real> v = linear(x, w.w_v);
  // 2-4. Split, attend, merge, project.
  return attend_heads_and_project(q, k, v, n_heads, w.w_o, causal, cache);
}

template <class Real>
MhaResultOf<Real> mha_forward_of(const Ten3<Real>& x, const MhaWeightsOf<Real>& w,
                                 std::size_t n_heads, bool causal, bool need_probs) {
  MhaCacheOf<Real> cache;
  MhaResultOf<Real> result;
  result.out = mha_forward_of(x, w, n_heads, causal, cache);
  result.weights = need_probs ? std::move(cache.weights)
                              : Ten4<Real>(typename Ten4<Real>::shape_type{0, 0, 0, 0});
  return result;
}

// ---------------------------------------------------------------------------------------------
// Multi-head attention, backward (chapter 08): the forward's steps in reverse order
// ---------------------------------------------------------------------------------------------

template <class Real>
void mha_backward_of(const Ten3<Real>& dout, const MhaCacheOf<Real>& cache,
                     const MhaWeightsOf<Real>& w, std::size_t n_heads, bool causal, Ten3<Real>& dx,
                     MhaWeightsOf<Real>& grads) {
  const char* fn = "attn::mha_backward";
  detail::check_mha_backward(fn, dout, cache.x, w, n_heads, grads);
  const std::size_t B = cache.x.shape()[0], T = cache.x.shape()[1], C = cache.x.shape()[2];
  const std::size_t H = n_heads, hs = C / H;
  const std::array<std::size_t, 4> heads_shape{B, H, T, hs}, w_shape{B, H, T, T};
  if (!std::equal(w_shape.begin(), w_shape.end(), cache.weights.shape().begin()) ||
      !std::equal(heads_shape.begin(), heads_shape.end(), cache.q.shape().begin()) ||
      cache.k.shape() != cache.q.shape() || cache.v.shape() != cache.q.shape() ||
      cache.heads.shape() != cache.x.shape()) {
    shape_error(fn,
                "a cache filled by mha_forward(..., cache) for x " + shape_str(cache.x.shape()) +
                    " and " + std::to_string(H) + " heads",
                "weights " + shape_str(cache.weights.shape()));
  }
  // 4. out = heads @ w_o:  dheads = dout @ w_o^T,  dw_o += heads^T @ dout     (B, T, C)
  Ten3<Real> dheads = dout;
  if (w.w_o.size() != 0) {
    LinearGradsOf<Real> o = linear_backward(dout, cache.heads, w.w_o);
    grads.w_o += o.dw;
    dheads = std::move(o.dx);
  }
  // 3. heads = merge(out of every head): the gradient is split the same way.
  //    (B, T, C) -> (B, H, T, hs)
  // 2. Attention in every head: dq, dk, dv from dO, P and the saved q, k, v.  (B, H, T, hs) each
  const AttentionGradsOf<Real> a = scaled_dot_product_attention_backward(
      split_heads(dheads, H), cache.q, cache.k, cache.v, cache.weights, causal);
  // 1. q = split(x @ w_q), and k, v alike: merge each gradient back to (B, T, C), then
  //    dw_q += x^T @ dq and dx = dq @ w_q^T + dk @ w_k^T + dv @ w_v^T (x feeds all three).
  const LinearGradsOf<Real> gq = linear_backward(merge_heads(a.dq), cache.x, w.w_q);
  const LinearGradsOf<Real> gk = linear_backward(merge_heads(a.dk), cache.x, w.w_k);
  const LinearGradsOf<Real> gv = linear_backward(merge_heads(a.dv), cache.x, w.w_v);
  grads.w_q += gq.dw;
  grads.w_k += gk.dw;
  grads.w_v += gv.dw;
  dx = gq.dx + gk.dx + gv.dx;
}

}  // namespace

// ---- The public functions: float, and the float64 twins -------------------------------------

AttentionResult scaled_dot_product_attention(const Tensor<4>& q, const Tensor<4>& k,
                                             const Tensor<4>& v, bool causal, bool need_probs) {
  return sdpa_of(q, k, v, causal, need_probs);
}
AttentionGrads scaled_dot_product_attention_backward(const Tensor<4>& dout, const Tensor<4>& q,
                                                     const Tensor<4>& k, const Tensor<4>& v,
                                                     const Tensor<4>& probs, bool causal) {
  return sdpa_backward_of(dout, q, k, v, probs, causal);
}
Tensor<4> split_heads(const Tensor<3>& x, std::size_t n_heads) {
  return split_heads_of(x, n_heads);
}
Tensor<3> merge_heads(const Tensor<4>& x) { return merge_heads_of(x); }
Tensor<3> mha_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads, bool causal,
                      MhaCache& cache) {
  return mha_forward_of(x, w, n_heads, causal, cache);
}
MhaResult mha_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads, bool causal,
                      bool need_probs) {
  return mha_forward_of(x, w, n_heads, causal, need_probs);
}
void mha_backward(const Tensor<3>& dout, const MhaCache& cache, const MhaWeights& w,
                  std::size_t n_heads, bool causal, Tensor<3>& dx, MhaWeights& grads) {
  mha_backward_of(dout, cache, w, n_heads, causal, dx, grads);
}

template <std::same_as<double> Real>
AttentionResultOf<Real> scaled_dot_product_attention(const Ten4<Real>& q, const Ten4<Real>& k,
                                                     const Ten4<Real>& v, bool causal,
                                                     bool need_probs) {
  return sdpa_of(q, k, v, causal, need_probs);
}
template <std::same_as<double> Real>
AttentionGradsOf<Real> scaled_dot_product_attention_backward(const Ten4<Real>& dout,
                                                             const Ten4<Real>& q,
                                                             const Ten4<Real>& k,
                                                             const Ten4<Real>& v,
                                                             const Ten4<Real>& probs, bool causal) {
  return sdpa_backward_of(dout, q, k, v, probs, causal);
}
template <std::same_as<double> Real>
Ten4<Real> split_heads(const Ten3<Real>& x, std::size_t n_heads) {
  return split_heads_of(x, n_heads);
}
template <std::same_as<double> Real>
Ten3<Real> merge_heads(const Ten4<Real>& x) {
  return merge_heads_of(x);
}
template <std::same_as<double> Real>
Ten3<Real> mha_forward(const Ten3<Real>& x, const MhaWeightsOf<Real>& w, std::size_t n_heads,
                       bool causal, MhaCacheOf<Real>& cache) {
  return mha_forward_of(x, w, n_heads, causal, cache);
}
template <std::same_as<double> Real>
MhaResultOf<Real> mha_forward(const Ten3<Real>& x, const MhaWeightsOf<Real>& w, std::size_t n_heads,
                              bool causal, bool need_probs) {
  return mha_forward_of(x, w, n_heads, causal, need_probs);
}
template <std::same_as<double> Real>
void mha_backward(const Ten3<Real>& dout, const MhaCacheOf<Real>& cache,
                  const MhaWeightsOf<Real>& w, std::size_t n_heads, bool causal, Ten3<Real>& dx,
                  MhaWeightsOf<Real>& grads) {
  mha_backward_of(dout, cache, w, n_heads, causal, dx, grads);
}

template AttentionResult64 scaled_dot_product_attention<double>(const Tensor64<4>&,
                                                                const Tensor64<4>&,
                                                                const Tensor64<4>&, bool, bool);
template AttentionGrads64 scaled_dot_product_attention_backward<double>(const Tensor64<4>&,
                                                                        const Tensor64<4>&,
                                                                        const Tensor64<4>&,
                                                                        const Tensor64<4>&,
                                                                        const Tensor64<4>&, bool);
template Tensor64<4> split_heads<double>(const Tensor64<3>&, std::size_t);
template Tensor64<3> merge_heads<double>(const Tensor64<4>&);
template Tensor64<3> mha_forward<double>(const Tensor64<3>&, const MhaWeights64&, std::size_t, bool,
                                         MhaCache64&);
template MhaResult64 mha_forward<double>(const Tensor64<3>&, const MhaWeights64&, std::size_t, bool,
                                         bool);
template void mha_backward<double>(const Tensor64<3>&, const MhaCache64&, const MhaWeights64&,
                                   std::size_t, bool, Tensor64<3>&, MhaWeights64&);

// ---------------------------------------------------------------------------------------------
// Multi-head attention (chapter 05)
// ---------------------------------------------------------------------------------------------

MhaWeights mha_init(Rng& rng, std::size_t C, float std) {
  // Drawn one statement at a time, so the order (w_q, w_k, w_v, w_o) is fixed.
  MhaWeights w;
  w.w_q = randn(rng, C, C, std);
  w.w_k = randn(rng, C, C, std);
  w.w_v = randn(rng, C, C, std);
  w.w_o = randn(rng, C, C, std);
  return w;
}

MhaResult mha_forward_per_head(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads,
                               bool causal) {
  check_mha("attn::mha_forward_per_head", x, w, n_heads);
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  const std::size_t H = n_heads, hs = C / H;
  Tensor<3> merged(Tensor<3>::shape_type{B, T, C});
  MhaResult result;
  result.weights = Tensor<4>(Tensor<4>::shape_type{B, H, T, T});
  for (std::size_t h = 0; h < H; ++h) {
    const std::size_t c0 = h * hs, c1 = (h + 1) * hs;
    // 1. This head's own projections: columns [h*hs, (h+1)*hs) of each weight, copied.
    //    (C, C) -> (C, hs)
    const Matrix wq_h = xt::view(w.w_q, xt::all(), xt::range(c0, c1));
    const Matrix wk_h = xt::view(w.w_k, xt::all(), xt::range(c0, c1));
    const Matrix wv_h = xt::view(w.w_v, xt::all(), xt::range(c0, c1));
    // 2. Project: (B, T, C) @ (C, hs) -> (B, T, hs), seen as one head: (B, 1, T, hs).
    Tensor<4> q_h(Tensor<4>::shape_type{B, 1, T, hs});
    Tensor<4> k_h(Tensor<4>::shape_type{B, 1, T, hs});
    Tensor<4> v_h(Tensor<4>::shape_type{B, 1, T, hs});
    xt::view(q_h, xt::all(), 0) = linear(x, wq_h);
    xt::view(k_h, xt::all(), 0) = linear(x, wk_h);
    xt::view(v_h, xt::all(), 0) = linear(x, wv_h);
    // 3. Attend: (B, 1, T, hs) -> out (B, 1, T, hs), probs (B, 1, T, T).
    const AttentionResult r = scaled_dot_product_attention(q_h, k_h, v_h, causal);
    // 4. The head's output goes into its column block: (B, T, hs) -> merged[:, :, h*hs:(h+1)*hs].
    xt::view(merged, xt::all(), xt::all(), xt::range(c0, c1)) = xt::view(r.out, xt::all(), 0);
    xt::view(result.weights, xt::all(), h) = xt::view(r.weights, xt::all(), 0);
  }
  // 5. Output projection: (B, T, C) @ (C, C) -> (B, T, C).
  result.out = linear(merged, w.w_o);
  return result;
}

Matrix fuse_qkv(const MhaWeights& w) {
  const std::size_t C = w.w_q.shape()[0];
  check_weight("attn::fuse_qkv", "w_q", w.w_q, C, C);
  check_weight("attn::fuse_qkv", "w_k", w.w_k, C, C);
  check_weight("attn::fuse_qkv", "w_v", w.w_v, C, C);
  // [w_q | w_k | w_v]: row i is row i of w_q, then of w_k, then of w_v. (C, C) x 3 -> (C, 3C)
  Matrix w_qkv(Matrix::shape_type{C, 3 * C});
  xt::view(w_qkv, xt::all(), xt::range(0, C)) = w.w_q;
  xt::view(w_qkv, xt::all(), xt::range(C, 2 * C)) = w.w_k;
  xt::view(w_qkv, xt::all(), xt::range(2 * C, 3 * C)) = w.w_v;
  return w_qkv;
}

MhaResult mha_forward_fused(const Tensor<3>& x, const Matrix& w_qkv, const Matrix& w_o,
                            std::size_t n_heads, bool causal, bool need_probs) {
  detail::check_mha_fused("attn::mha_forward_fused", x, w_qkv, w_o, n_heads);
  const std::size_t C = x.shape()[2];
  // 1. All three projections in one product: (B, T, C) @ (C, 3C) -> (B, T, 3C). Column j of the
  //    product only involves column j of w_qkv, so columns [0, C) are exactly x @ w_q, and so on.
  const Tensor<3> qkv = linear(x, w_qkv);
  const Tensor<3> q = xt::view(qkv, xt::all(), xt::all(), xt::range(0, C));
  const Tensor<3> k = xt::view(qkv, xt::all(), xt::all(), xt::range(C, 2 * C));
  const Tensor<3> v = xt::view(qkv, xt::all(), xt::all(), xt::range(2 * C, 3 * C));
  // 2-4. Split, attend, merge, project: as mha_forward.
  MhaCache cache;
  MhaResult result;
  result.out = attend_heads_and_project(q, k, v, n_heads, w_o, causal, cache);
  result.weights =
      need_probs ? std::move(cache.weights) : Tensor<4>(Tensor<4>::shape_type{0, 0, 0, 0});
  return result;
}

MhaResult mha_cross_forward(const Tensor<3>& x, const Tensor<3>& y, const MhaWeights& w,
                            std::size_t n_heads) {
  detail::check_mha_cross("attn::mha_cross_forward", x, y, w, n_heads);
  // 1. Queries from x, keys and values from y:
  //    (B, T, C) @ (C, C) -> (B, T, C);  (B, S, C) @ (C, C) -> (B, S, C)
  const Tensor<3> q = linear(x, w.w_q);
  const Tensor<3> k = linear(y, w.w_k);
  const Tensor<3> v = linear(y, w.w_v);
  // 2-4. Every query sees every key of y: no mask. Weights (B, H, T, S).
  MhaCache cache;
  MhaResult result;
  result.out = attend_heads_and_project(q, k, v, n_heads, w.w_o, /*causal=*/false, cache);
  result.weights = std::move(cache.weights);
  return result;
}

}  // namespace attn
