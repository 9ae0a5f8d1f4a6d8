// swa.cpp: sliding-window attention (chapter 11) and its backward: the reference attention
// (ops/attention_ref.cpp) with the mask of chapter 03 narrowed to a band of W keys.
#include "attn/ops/swa.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/ops/attention_ref.hpp"

namespace attn {

namespace {

// q, k, v (B, H, T, hs), hs >= 1, T >= 1; a window needs causal.
template <class S>
void check_windowed(const char* fn, const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
                    const xt::xtensor<S, 4>& v, bool causal, std::size_t window) {
  if (k.shape() != q.shape() || v.shape() != q.shape() || q.shape()[3] == 0 || q.shape()[2] == 0) {
    shape_error(fn, "q, k, v of one shape (B, H, T, hs) with T >= 1 and hs >= 1",
                "q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()) + ", v " +
                    shape_str(v.shape()));
  }
  require(causal || window == 0, fn, [&] {
    return "a sliding window is causal: window = " + std::to_string(window) +
           " needs causal attention (or window 0 for none)";
  });
}

// The reference attention with a window (attn/ops/attention_ref.hpp), after this file's own
// checks, so that its messages name windowed_attention.
AttentionOptions window_options(bool causal, std::size_t window) {
  AttentionOptions o;
  o.causal = causal;
  if (window != 0) o.window = window;
  return o;
}

}  // namespace

template <class S>
WindowAttention<S> windowed_attention(const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
                                      const xt::xtensor<S, 4>& v, bool causal, std::size_t window) {
  check_windowed<S>("attn::windowed_attention", q, k, v, causal, window);
  AttentionRefResult<S> r = attention_ref<S>(q, k, v, window_options(causal, window));
  return {std::move(r.out), std::move(r.probs)};
}

template <class S>
WindowAttentionGrads<S> windowed_attention_backward(
    const xt::xtensor<S, 4>& dout, const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
    const xt::xtensor<S, 4>& v, const xt::xtensor<S, 4>& probs, bool causal, std::size_t window) {
  const char* fn = "attn::windowed_attention_backward";
  check_windowed<S>(fn, q, k, v, causal, window);
  const std::size_t B = q.shape()[0], H = q.shape()[1], T = q.shape()[2];
  if (dout.shape() != q.shape()) {
    shape_error(fn, "dout " + shape_str(q.shape()) + " (like the forward's out)",
                "dout " + shape_str(dout.shape()));
  }
  const std::array<std::size_t, 4> w_shape{B, H, T, T};
  if (!std::equal(w_shape.begin(), w_shape.end(), probs.shape().begin())) {
    shape_error(fn, "the forward's attention probabilities " + shape_str(w_shape),
                shape_str(probs.shape()));
  }
  AttentionRefGrads<S> g =
      attention_ref_backward<S>(dout, q, k, v, probs, window_options(causal, window));
  return {std::move(g.dq), std::move(g.dk), std::move(g.dv)};
}

template <class S>
WindowAttention<S> sliding_window_attention(const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
                                            const xt::xtensor<S, 4>& v, std::size_t window) {
  require(window >= 1, "attn::sliding_window_attention",
          "window must be at least 1 (the query's own key), got 0");
  return windowed_attention<S>(q, k, v, /*causal=*/true, window);
}

template <class S>
WindowAttentionGrads<S> sliding_window_attention_backward(
    const xt::xtensor<S, 4>& dout, const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
    const xt::xtensor<S, 4>& v, const xt::xtensor<S, 4>& probs, std::size_t window) {
  require(window >= 1, "attn::sliding_window_attention_backward",
          "window must be at least 1 (the query's own key), got 0");
  return windowed_attention_backward<S>(dout, q, k, v, probs, /*causal=*/true, window);
}

#define ATTN_SWA_INSTANTIATE(S)                                                                   \
  template WindowAttention<S> windowed_attention<S>(const xt::xtensor<S, 4>&,                     \
                                                    const xt::xtensor<S, 4>&,                     \
                                                    const xt::xtensor<S, 4>&, bool, std::size_t); \
  template WindowAttentionGrads<S> windowed_attention_backward<S>(                                \
      const xt::xtensor<S, 4>&, const xt::xtensor<S, 4>&, const xt::xtensor<S, 4>&,               \
      const xt::xtensor<S, 4>&, const xt::xtensor<S, 4>&, bool, std::size_t);                     \
  template WindowAttention<S> sliding_window_attention<S>(                                        \
      const xt::xtensor<S, 4>&, const xt::xtensor<S, 4>&, const xt::xtensor<S, 4>&, std::size_t); \
  template WindowAttentionGrads<S> sliding_window_attention_backward<S>(                          \
      const xt::xtensor<S, 4>&, const xt::xtensor<S, 4>&, const xt::xtensor<S, 4>&,               \
      const xt::xtensor<S, 4>&, const xt::xtensor<S, 4>&, std::size_t);
ATTN_SWA_INSTANTIATE(float)
ATTN_SWA_INSTANTIATE(double)
#undef ATTN_SWA_INSTANTIATE

}  // namespace attn
