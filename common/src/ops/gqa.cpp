// gqa.cpp: grouped-query attention (chapter 11) and its backward: the reference, chapter 05's
// multi-head attention with fewer K/V heads, each shared by a group of query heads, optional RoPE
// and an optional sliding window, written as the page's steps.
#include "attn/ops/gqa.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>

#include "attn/core/check.hpp"
#include "attn/ops/rope.hpp"
#include "attn/ops/attention_ref.hpp"
#include "linear_any.hpp"
#include "rope_checks.hpp"

namespace attn {

namespace {

// (B, T, n * hs) -> (B, n, T, hs): column block h becomes head h.
template <class S>
xt::xtensor<S, 4> split_into_heads(const xt::xtensor<S, 3>& x, std::size_t n, std::size_t hs) {
  const std::size_t B = x.shape()[0], T = x.shape()[1];
  xt::xtensor<S, 4> out = xt::xtensor<S, 4>::from_shape({B, n, T, hs});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < n; ++h)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t i = 0; i < hs; ++i) out(b, h, t, i) = x(b, t, h * hs + i);
  return out;
}

// (B, n, T, hs) -> (B, T, n * hs), the inverse of split.
template <class S>
xt::xtensor<S, 3> merge_heads_any(const xt::xtensor<S, 4>& x) {
  const std::size_t B = x.shape()[0], n = x.shape()[1], T = x.shape()[2], hs = x.shape()[3];
  xt::xtensor<S, 3> out = xt::xtensor<S, 3>::from_shape({B, T, n * hs});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < n; ++h)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t i = 0; i < hs; ++i) out(b, t, h * hs + i) = x(b, h, t, i);
  return out;
}

template <class S>
bool same_shape(const xt::xtensor<S, 4>& t, const std::array<std::size_t, 4>& want) {
  return std::equal(want.begin(), want.end(), t.shape().begin());
}

// The attention biases (GPT-2's): none (all four empty), or b_q, b_o (C,) and b_k, b_v (KV hs,).
template <class S>
void check_biases(const char* fn, const char* prefix, const GqaWeights<S>& w, std::size_t C,
                  std::size_t kv_cols) {
  if (w.b_q.size() + w.b_k.size() + w.b_v.size() + w.b_o.size() == 0) return;
  for (const auto& [name, b, n] :
       {std::tuple{"b_q", &w.b_q, C}, std::tuple{"b_k", &w.b_k, kv_cols},
        std::tuple{"b_v", &w.b_v, kv_cols}, std::tuple{"b_o", &w.b_o, C}}) {
    require(b->size() == n, fn, [&, name = name, b = b, n = n] {
      return std::string(prefix) + name + " is " + shape_str(b->shape()) + ", expected (" +
             std::to_string(n) + ",) (attention biases: all four or none)";
    });
  }
}

// y + b on every row, (B, T, n) + (n,); y itself without biases (b empty).
template <class S>
xt::xtensor<S, 3> plus_bias(xt::xtensor<S, 3> y, const xt::xtensor<S, 1>& b) {
  const std::size_t n = b.size();
  if (n == 0) return y;
  for (std::size_t r = 0; r < y.size() / n; ++r)
    for (std::size_t i = 0; i < n; ++i) y.data()[r * n + i] += b(i);
  return y;
}

// db += the sum of dy over its rows, (B, T, n) -> (n,): a bias is added to every row, so its
// gradient collects every row's. Nothing without biases (db empty).
template <class S>
void bias_backward(const xt::xtensor<S, 3>& dy, xt::xtensor<S, 1>& db) {
  const std::size_t n = db.size();
  if (n == 0) return;
  for (std::size_t r = 0; r < dy.size() / n; ++r)
    for (std::size_t i = 0; i < n; ++i) db(i) += dy.data()[r * n + i];
}

// Everything the config and the weights must agree on, one line each.
template <class S>
void check_gqa(const char* fn, const xt::xtensor<S, 3>& x, const GqaWeights<S>& w,
               const GqaConfig& config) {
  const std::size_t C = x.shape()[2], H = config.n_heads, KV = config.n_kv_heads;
  require(C >= 1 && x.shape()[1] >= 1, fn, [&] {
    return "x is " + shape_str(x.shape()) + ", expected (B, T, C) with T >= 1 and C >= 1";
  });
  require(H >= 1 && C % H == 0, fn, [&] {
    return "n_heads = " + std::to_string(H) + " does not divide C = " + std::to_string(C);
  });
  require(KV >= 1 && H % KV == 0, fn, [&] {
    return "n_kv_heads = " + std::to_string(KV) +
           " does not divide n_heads = " + std::to_string(H) +
           " (each K/V head serves an equal group of query heads)";
  });
  const std::size_t hs = C / H;
  detail::check_weight_shape(fn, "w_q", w.w_q, C, C);
  detail::check_weight_shape(fn, "w_k", w.w_k, C, KV * hs);
  detail::check_weight_shape(fn, "w_v", w.w_v, C, KV * hs);
  detail::check_weight_shape(fn, "w_o", w.w_o, C, C);
  check_biases(fn, "", w, C, KV * hs);
  if (config.rope) detail::check_rope(fn, hs, config.theta);
  require(!config.window || *config.window >= 1, fn,
          "a window holds at least the query's own key: window 0 (leave it unset for none)");
  require(config.causal || !config.window, fn, [&] {
    return "a sliding window is causal: window = " + std::to_string(*config.window) +
           " needs causal attention (or no window)";
  });
}

// The attention part of the config as the reference attention takes it.
AttentionOptions attention_options(const GqaConfig& config) {
  AttentionOptions o;
  o.causal = config.causal;
  o.window = config.window;
  o.score = config.score;
  return o;
}

}  // namespace

template <class S>
xt::xtensor<S, 4> repeat_kv(const xt::xtensor<S, 4>& kv, std::size_t n_heads) {
  const std::size_t B = kv.shape()[0], KV = kv.shape()[1], T = kv.shape()[2], hs = kv.shape()[3];
  require(KV >= 1 && n_heads % KV == 0, "attn::repeat_kv", [&] {
    return "n_kv_heads = " + std::to_string(KV) +
           " does not divide n_heads = " + std::to_string(n_heads);
  });
  const std::size_t group = n_heads / KV;  // query heads per K/V head
  xt::xtensor<S, 4> out = xt::xtensor<S, 4>::from_shape({B, n_heads, T, hs});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < n_heads; ++h)
      xt::view(out, b, h) = xt::view(kv, b, h / group);  // (T, hs): head h reads group h / group
  return out;
}

template <class S>
xt::xtensor<S, 4> sum_kv_groups(const xt::xtensor<S, 4>& d, std::size_t n_kv_heads) {
  const std::size_t B = d.shape()[0], H = d.shape()[1], T = d.shape()[2], hs = d.shape()[3];
  require(n_kv_heads >= 1 && H % n_kv_heads == 0, "attn::sum_kv_groups", [&] {
    return "n_kv_heads = " + std::to_string(n_kv_heads) +
           " does not divide n_heads = " + std::to_string(H);
  });
  const std::size_t group = H / n_kv_heads;
  xt::xtensor<S, 4> out = xt::zeros<S>({B, n_kv_heads, T, hs});
  // A K/V head used by `group` query heads collects the gradient of every use.
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h) xt::view(out, b, h / group) += xt::view(d, b, h);
  return out;
}

template <class S>
xt::xtensor<S, 3> gqa_forward(const xt::xtensor<S, 3>& x, const GqaWeights<S>& w,
                              const GqaConfig& config, GqaCache<S>& cache) {
  check_gqa<S>("attn::gqa", x, w, config);
  const std::size_t C = x.shape()[2], H = config.n_heads, KV = config.n_kv_heads, hs = C / H;
  cache.x = x;
  // 1. Projections: H query heads, but only KV key and value heads.
  //    (B, T, C) @ (C, C) -> (B, T, C) -> (B, H, T, hs)
  //    (B, T, C) @ (C, KV*hs) -> (B, T, KV*hs) -> (B, KV, T, hs), twice
  //    (+ b_q, b_k, b_v on every row, with attention biases)
  cache.q = split_into_heads(plus_bias(detail::project(x, w.w_q), w.b_q), H, hs);
  cache.k = split_into_heads(plus_bias(detail::project(x, w.w_k), w.b_k), KV, hs);
  cache.v = split_into_heads(plus_bias(detail::project(x, w.w_v), w.b_v), KV, hs);
  // 2. RoPE: rotate q and k by their positions 0 .. T-1 (v carries content, not position).
  if (config.rope) {
    cache.q = rope<S>(cache.q, config.theta);
    cache.k = rope<S>(cache.k, config.theta);
  }
  // 3. Each query head h reads K/V head h / (H / KV) (repeat_kv makes the sharing visible as a
  //    copy; the reference attention reads the shared head in place).
  // 4. Attention per head, causal and windowed as configured: out (B, H, T, hs), probs
  //    (B, H, T, T).
  //    The score-level parts (config.score) add their bias to the scores first.
  AttentionRefResult<S> a = attention_ref<S>(cache.q, cache.k, cache.v, attention_options(config));
  cache.weights = std::move(a.probs);
  // 5. Merge the heads and mix them: (B, H, T, hs) -> (B, T, C) @ (C, C) -> (B, T, C) (+ b_o).
  cache.heads = merge_heads_any(a.out);
  return plus_bias(detail::project(cache.heads, w.w_o), w.b_o);
}

template <class S>
GqaResult<S> gqa_forward(const xt::xtensor<S, 3>& x, const GqaWeights<S>& w,
                         const GqaConfig& config) {
  GqaCache<S> cache;
  GqaResult<S> r;
  r.out = gqa_forward<S>(x, w, config, cache);
  r.weights = std::move(cache.weights);
  return r;
}

template <class S>
void gqa_backward(const xt::xtensor<S, 3>& dout, const GqaCache<S>& cache, const GqaWeights<S>& w,
                  const GqaConfig& config, xt::xtensor<S, 3>& dx, GqaWeights<S>& grads) {
  const char* fn = "attn::gqa_backward";
  check_gqa<S>(fn, cache.x, w, config);
  const std::size_t B = cache.x.shape()[0], T = cache.x.shape()[1], C = cache.x.shape()[2];
  const std::size_t H = config.n_heads, KV = config.n_kv_heads, hs = C / H;
  if (dout.shape() != cache.x.shape() || cache.heads.shape() != cache.x.shape() ||
      !same_shape(cache.q, {B, H, T, hs}) || !same_shape(cache.k, {B, KV, T, hs}) ||
      cache.v.shape() != cache.k.shape()) {
    shape_error(fn, "dout " + shape_str(cache.x.shape()) + " and a cache from gqa_forward",
                "dout " + shape_str(dout.shape()) + ", cache.k " + shape_str(cache.k.shape()));
  }
  detail::check_weight_shape(fn, "grads.w_q", grads.w_q, C, C);
  detail::check_weight_shape(fn, "grads.w_k", grads.w_k, C, KV * hs);
  detail::check_weight_shape(fn, "grads.w_v", grads.w_v, C, KV * hs);
  detail::check_weight_shape(fn, "grads.w_o", grads.w_o, C, C);
  const bool biased = w.b_q.size() != 0;
  require(biased == (grads.b_q.size() != 0), fn,
          "grads must have attention biases exactly when the weights have them");
  check_biases(fn, "grads.", grads, C, KV * hs);
  // 5. out = heads @ w_o (+ b_o): dheads = dout @ w_o^T, dw_o += heads^T dout, db_o += the sum
  //    of dout's rows; then split into heads.
  xt::xtensor<S, 3> dheads = xt::zeros<S>(cache.heads.shape());
  detail::project_backward(dout, cache.heads, w.w_o, dheads, grads.w_o);
  bias_backward(dout, grads.b_o);
  // 4. and 3. Attention per head, and the sharing's backward: each K/V head collects the
  //    gradients of its group's query heads (what sum_kv_groups does to repeat_kv's copies).
  //    dq (B, H, T, hs); dk, dv (B, KV, T, hs).
  AttentionRefGrads<S> a =
      attention_ref_backward<S>(split_into_heads(dheads, H, hs), cache.q, cache.k, cache.v,
                                cache.weights, attention_options(config));
  xt::xtensor<S, 4> dq = std::move(a.dq);
  xt::xtensor<S, 4> dk = std::move(a.dk);
  const xt::xtensor<S, 4> dv = std::move(a.dv);
  // 2. RoPE's backward: rotate the gradients back by the same angles.
  if (config.rope) {
    dq = rope_backward<S>(dq, config.theta);
    dk = rope_backward<S>(dk, config.theta);
  }
  // 1. q = x @ w_q, k = x @ w_k, v = x @ w_v: x feeds all three, so dx collects three terms.
  //    With biases, db_q (db_k, db_v) += the sum of dq's (dk's, dv's) rows.
  dx = xt::zeros<S>(cache.x.shape());
  const xt::xtensor<S, 3> dq_rows = merge_heads_any(dq), dk_rows = merge_heads_any(dk);
  const xt::xtensor<S, 3> dv_rows = merge_heads_any(dv);
  detail::project_backward(dq_rows, cache.x, w.w_q, dx, grads.w_q);
  detail::project_backward(dk_rows, cache.x, w.w_k, dx, grads.w_k);
  detail::project_backward(dv_rows, cache.x, w.w_v, dx, grads.w_v);
  bias_backward(dq_rows, grads.b_q);
  bias_backward(dk_rows, grads.b_k);
  bias_backward(dv_rows, grads.b_v);
}

#define ATTN_GQA_INSTANTIATE(S)                                                             \
  template GqaResult<S> gqa_forward<S>(const xt::xtensor<S, 3>&, const GqaWeights<S>&,      \
                                       const GqaConfig&);                                   \
  template xt::xtensor<S, 3> gqa_forward<S>(const xt::xtensor<S, 3>&, const GqaWeights<S>&, \
                                            const GqaConfig&, GqaCache<S>&);                \
  template void gqa_backward<S>(const xt::xtensor<S, 3>&, const GqaCache<S>&,               \
                                const GqaWeights<S>&, const GqaConfig&, xt::xtensor<S, 3>&, \
                                GqaWeights<S>&);                                            \
  template xt::xtensor<S, 4> repeat_kv<S>(const xt::xtensor<S, 4>&, std::size_t);           \
  template xt::xtensor<S, 4> sum_kv_groups<S>(const xt::xtensor<S, 4>&, std::size_t);
ATTN_GQA_INSTANTIATE(float)
ATTN_GQA_INSTANTIATE(double)
#undef ATTN_GQA_INSTANTIATE

}  // namespace attn
