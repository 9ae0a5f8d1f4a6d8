// swa.cpp: sliding-window attention (chapter 11) and its backward: the reference, one (batch,
// head) at a time with plain loops, the mask of chapter 03 narrowed to a band of W keys.
#include "attn/ops/swa.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/check.hpp"

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

// Whether query t may see key s.
bool visible(std::size_t t, std::size_t s, bool causal, std::size_t window) {
  return (!causal || s <= t) && (window == 0 || s + window > t);
}

}  // namespace

template <class S>
WindowAttention<S> windowed_attention(const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
                                      const xt::xtensor<S, 4>& v, bool causal, std::size_t window) {
  check_windowed<S>("attn::windowed_attention", q, k, v, causal, window);
  const std::size_t B = q.shape()[0], H = q.shape()[1], T = q.shape()[2], hs = q.shape()[3];
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  WindowAttention<S> r{xt::zeros<S>({B, H, T, hs}), xt::zeros<S>({B, H, T, T})};
  std::vector<double> p(T);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t) {
        // 1. Scores of the visible keys, s_j = q_t . k_j / sqrt(hs); the others get weight 0
        //    (the -inf of chapter 03). Key t itself is always visible, so a row is never empty.
        double max_score = -std::numeric_limits<double>::infinity();
        for (std::size_t s = 0; s < T; ++s) {
          if (!visible(t, s, causal, window)) continue;
          double dot = 0.0;
          for (std::size_t i = 0; i < hs; ++i)
            dot += static_cast<double>(q(b, h, t, i)) * static_cast<double>(k(b, h, s, i));
          p[s] = dot * scale;
          max_score = std::max(max_score, p[s]);
        }
        // 2. The stable softmax over the visible keys.
        double sum = 0.0;
        for (std::size_t s = 0; s < T; ++s) {
          p[s] = visible(t, s, causal, window) ? std::exp(p[s] - max_score) : 0.0;
          sum += p[s];
        }
        // 3. out_t = sum_s P[t, s] v_s.
        for (std::size_t s = 0; s < T; ++s) {
          p[s] /= sum;
          r.weights(b, h, t, s) = static_cast<S>(p[s]);
        }
        for (std::size_t i = 0; i < hs; ++i) {
          double acc = 0.0;
          for (std::size_t s = 0; s < T; ++s) acc += p[s] * static_cast<double>(v(b, h, s, i));
          r.out(b, h, t, i) = static_cast<S>(acc);
        }
      }
  return r;
}

template <class S>
WindowAttentionGrads<S> windowed_attention_backward(
    const xt::xtensor<S, 4>& dout, const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
    const xt::xtensor<S, 4>& v, const xt::xtensor<S, 4>& probs, bool causal, std::size_t window) {
  const char* fn = "attn::windowed_attention_backward";
  check_windowed<S>(fn, q, k, v, causal, window);
  const std::size_t B = q.shape()[0], H = q.shape()[1], T = q.shape()[2], hs = q.shape()[3];
  if (dout.shape() != q.shape()) {
    shape_error(fn, "dout " + shape_str(q.shape()) + " (like the forward's out)",
                "dout " + shape_str(dout.shape()));
  }
  const std::array<std::size_t, 4> w_shape{B, H, T, T};
  if (!std::equal(w_shape.begin(), w_shape.end(), probs.shape().begin())) {
    shape_error(fn, "the forward's attention probabilities " + shape_str(w_shape),
                shape_str(probs.shape()));
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  // The gradients are sums over queries and keys: accumulated in double, rounded once at the end.
  xt::xtensor<double, 4> dq = xt::zeros<double>(q.shape()), dk = xt::zeros<double>(q.shape()),
                         dv = xt::zeros<double>(q.shape());
  std::vector<double> ds(T);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t) {
        // 1. dP[t, s] = dO_t . v_s, and dV_s += P[t, s] dO_t (O = P V).
        double row = 0.0;  // rowsum(dP * P)
        for (std::size_t s = 0; s < T; ++s) {
          const double p = static_cast<double>(probs(b, h, t, s));
          double dp = 0.0;
          for (std::size_t i = 0; i < hs; ++i) {
            dp += static_cast<double>(dout(b, h, t, i)) * static_cast<double>(v(b, h, s, i));
            dv(b, h, s, i) += p * static_cast<double>(dout(b, h, t, i));
          }
          ds[s] = dp;
          row += dp * p;
        }
        // 2. The softmax backward: dS = P * (dP - rowsum(dP * P)); 0 wherever P is 0 (masked).
        for (std::size_t s = 0; s < T; ++s)
          ds[s] = static_cast<double>(probs(b, h, t, s)) * (ds[s] - row);
        // 3. S = q k^T / sqrt(hs): dq_t = sum_s dS[t, s] k_s / sqrt(hs), dk_s += dS[t, s] q_t /
        //    sqrt(hs).
        for (std::size_t s = 0; s < T; ++s) {
          if (!visible(t, s, causal, window)) continue;
          for (std::size_t i = 0; i < hs; ++i) {
            dq(b, h, t, i) += ds[s] * scale * static_cast<double>(k(b, h, s, i));
            dk(b, h, s, i) += ds[s] * scale * static_cast<double>(q(b, h, t, i));
          }
        }
      }
  return {xt::cast<S>(dq), xt::cast<S>(dk), xt::cast<S>(dv)};
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
