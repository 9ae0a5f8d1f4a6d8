// attention_ref.cpp: the reference attention with every option (attn/ops/attention_ref.hpp), one
// query row at a time with plain loops, every sum in double: the page's equations in the page's
// order. The other reference attentions (scaled_dot_product_attention, windowed_attention,
// gqa_forward, ref::lm_step) call it.
#include "attn/ops/attention_ref.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/check.hpp"

namespace attn {

namespace {

// The sizes of one call, read from q (B, H, T, hs), k (B, KV, S, hs) and v (B, KV, S, hv).
struct Dims {
  std::size_t B, H, T, hs, KV, S, hv;
};

// The keys query row i sees: [lo, hi).
struct KeyRange {
  std::size_t lo, hi;
};

KeyRange visible_keys(std::size_t i, const AttentionOptions& o, std::size_t S) {
  const std::size_t p = o.offset + i;  // the query's position
  const std::size_t hi = o.causal ? std::min(p + 1, S) : S;
  const std::size_t lo = o.window && p + 1 > *o.window ? p + 1 - *o.window : 0;
  return {std::min(lo, hi), hi};
}

template <class S>
Dims check_inputs(const char* fn, const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
                  const xt::xtensor<S, 4>& v, const AttentionOptions& o) {
  const auto &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  const Dims n{qs[0], qs[1], qs[2], qs[3], ks[1], ks[2], vs[3]};
  const std::string got = "q " + shape_str(qs) + ", k " + shape_str(ks) + ", v " + shape_str(vs);
  if (ks[0] != n.B || vs[0] != n.B || ks[3] != n.hs || vs[1] != n.KV || vs[2] != n.S) {
    shape_error(fn, "q (B, H, T, hs), k (B, KV, S, hs), v (B, KV, S, hv)", got);
  }
  if (n.hs == 0 || n.S == 0 || n.KV == 0 || n.H % n.KV != 0) {
    shape_error(fn, "hs >= 1, at least one key (S >= 1) and K/V heads KV dividing H", got);
  }
  require(!o.window || *o.window >= 1, fn,
          "window must be at least 1 (the query's own key), got 0");
  require(!o.window || o.causal, fn, [&] {
    return "a sliding window is causal: window = " + std::to_string(*o.window) +
           " needs causal attention (or no window)";
  });
  require(o.offset <= std::numeric_limits<std::size_t>::max() - n.T, fn, [&] {
    return "offset = " + std::to_string(o.offset) + " puts the queries' positions past 2^64";
  });
  require(!o.causal || o.offset + n.T <= n.S, fn, [&] {
    return "causal queries at positions " + std::to_string(o.offset) + ".." +
           std::to_string(o.offset + n.T - 1) +
           " need the keys up to their own (S >= " + std::to_string(o.offset + n.T) +
           "), got S = " + std::to_string(n.S);
  });
  return n;
}

// The score-level parts' bias of query position p and key j for a head of slope m, rounded to
// S as a bias tensor of S would hold it (alibi_bias's values, bit for bit).
template <class S>
double score_bias_value(double m, std::size_t p, std::size_t j) {
  const double distance = static_cast<double>(p) - static_cast<double>(j);
  return static_cast<double>(static_cast<S>(-m * distance));
}

template <class S>
AttentionRefResult<S> attend(const char* fn, const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
                             const xt::xtensor<S, 4>& v, const AttentionOptions& o,
                             const xt::xtensor<S, 3>* bias) {
  const Dims n = check_inputs(fn, q, k, v, o);
  const std::vector<double> slopes = score_slopes(o.score, n.H);  // empty: no score part
  if (bias && !(bias->shape()[0] == n.H && bias->shape()[1] == n.T && bias->shape()[2] == n.S)) {
    shape_error(fn,
                "a score bias (H, T, S) = (" + std::to_string(n.H) + ", " + std::to_string(n.T) +
                    ", " + std::to_string(n.S) + ")",
                "bias " + shape_str(bias->shape()));
  }
  // Why 1/sqrt(hs): with q and k of unit-variance entries, q . k is a sum of hs products and has
  // variance hs. Dividing by sqrt(hs) brings the scores back to variance 1 whatever the head
  // size, so softmax stays soft instead of saturating into a one-hot (and vanishing gradients).
  const double scale = 1.0 / std::sqrt(static_cast<double>(n.hs));
  const std::size_t group = n.H / n.KV;
  AttentionRefResult<S> r{xt::zeros<S>({n.B, n.H, n.T, n.hv}),
                          o.need_probs ? xt::xtensor<S, 4>(xt::zeros<S>({n.B, n.H, n.T, n.S}))
                                       : xt::xtensor<S, 4>::from_shape({0, 0, 0, 0})};
  std::vector<double> p(n.S);
  for (std::size_t b = 0; b < n.B; ++b)
    for (std::size_t h = 0; h < n.H; ++h) {
      const std::size_t g = h / group;  // the K/V head query head h reads
      for (std::size_t i = 0; i < n.T; ++i) {
        const KeyRange keys = visible_keys(i, o, n.S);
        // 1. Scores of the visible keys, s_j = q_i . k_j / sqrt(hs) (+ bias); the hidden ones
        //    get probability 0 (the -inf of chapter 03).
        double max_score = -std::numeric_limits<double>::infinity();
        for (std::size_t j = keys.lo; j < keys.hi; ++j) {
          double dot = 0.0;
          for (std::size_t d = 0; d < n.hs; ++d)
            dot += static_cast<double>(q(b, h, i, d)) * static_cast<double>(k(b, g, j, d));
          p[j] = dot * scale;
          if (bias) p[j] += static_cast<double>((*bias)(h, i, j));
          if (!slopes.empty()) p[j] += score_bias_value<S>(slopes[h], o.offset + i, j);
          max_score = std::max(max_score, p[j]);
        }
        // 2. The stable softmax over the visible keys (chapter 03): subtract the row's maximum.
        double sum = 0.0;
        for (std::size_t j = keys.lo; j < keys.hi; ++j) {
          p[j] = std::exp(p[j] - max_score);
          sum += p[j];
        }
        for (std::size_t j = keys.lo; j < keys.hi; ++j) {
          p[j] /= sum;
          if (o.need_probs) r.probs(b, h, i, j) = static_cast<S>(p[j]);
        }
        // 3. out_i = sum_j P[i, j] v_j: the probability-weighted average of the values.
        for (std::size_t d = 0; d < n.hv; ++d) {
          double acc = 0.0;
          for (std::size_t j = keys.lo; j < keys.hi; ++j)
            acc += p[j] * static_cast<double>(v(b, g, j, d));
          r.out(b, h, i, d) = static_cast<S>(acc);
        }
      }
    }
  return r;
}

}  // namespace

template <class S>
AttentionRefResult<S> attention_ref(const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
                                    const xt::xtensor<S, 4>& v, const AttentionOptions& options) {
  return attend<S>("attn::attention_ref", q, k, v, options, nullptr);
}

template <class S>
AttentionRefResult<S> attention_ref(const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
                                    const xt::xtensor<S, 4>& v, const AttentionOptions& options,
                                    const xt::xtensor<S, 3>& bias) {
  return attend<S>("attn::attention_ref", q, k, v, options, &bias);
}

template <class S>
AttentionRefGrads<S> attention_ref_backward(const xt::xtensor<S, 4>& dout,
                                            const xt::xtensor<S, 4>& q, const xt::xtensor<S, 4>& k,
                                            const xt::xtensor<S, 4>& v,
                                            const xt::xtensor<S, 4>& probs,
                                            const AttentionOptions& options) {
  const char* fn = "attn::attention_ref_backward";
  const Dims n = check_inputs(fn, q, k, v, options);
  if (!(probs.shape()[0] == n.B && probs.shape()[1] == n.H && probs.shape()[2] == n.T &&
        probs.shape()[3] == n.S)) {
    shape_error(fn,
                "the forward's attention probabilities (B, H, T, S) = " +
                    shape_str(std::array<std::size_t, 4>{n.B, n.H, n.T, n.S}),
                shape_str(probs.shape()));
  }
  if (!(dout.shape()[0] == n.B && dout.shape()[1] == n.H && dout.shape()[2] == n.T &&
        dout.shape()[3] == n.hv)) {
    shape_error(fn,
                "dout " + shape_str(std::array<std::size_t, 4>{n.B, n.H, n.T, n.hv}) +
                    " (like the forward's out)",
                "dout " + shape_str(dout.shape()));
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(n.hs));
  const std::size_t group = n.H / n.KV;
  // The gradients are sums over queries, keys and a group's heads: accumulated in double,
  // rounded once at the end.
  xt::xtensor<double, 4> dq = xt::zeros<double>({n.B, n.H, n.T, n.hs});
  xt::xtensor<double, 4> dk = xt::zeros<double>({n.B, n.KV, n.S, n.hs});
  xt::xtensor<double, 4> dv = xt::zeros<double>({n.B, n.KV, n.S, n.hv});
  std::vector<double> ds(n.S);
  for (std::size_t b = 0; b < n.B; ++b)
    for (std::size_t h = 0; h < n.H; ++h) {
      const std::size_t g = h / group;
      for (std::size_t i = 0; i < n.T; ++i) {
        const KeyRange keys = visible_keys(i, options, n.S);
        // 1. dP[i, j] = dO_i . v_j, and dV_j += P[i, j] dO_i (O = P V).
        double row = 0.0;  // rowsum(dP * P)
        for (std::size_t j = keys.lo; j < keys.hi; ++j) {
          const double pij = static_cast<double>(probs(b, h, i, j));
          double dp = 0.0;
          for (std::size_t d = 0; d < n.hv; ++d) {
            dp += static_cast<double>(dout(b, h, i, d)) * static_cast<double>(v(b, g, j, d));
            dv(b, g, j, d) += pij * static_cast<double>(dout(b, h, i, d));
          }
          ds[j] = dp;
          row += dp * pij;
        }
        // 2. The softmax backward: dS = P * (dP - rowsum(dP * P)).
        for (std::size_t j = keys.lo; j < keys.hi; ++j)
          ds[j] = static_cast<double>(probs(b, h, i, j)) * (ds[j] - row);
        // 3. S = q k^T / sqrt(hs): dq_i = sum_j dS[i, j] k_j / sqrt(hs), and
        //    dk_j += dS[i, j] q_i / sqrt(hs).
        for (std::size_t j = keys.lo; j < keys.hi; ++j)
          for (std::size_t d = 0; d < n.hs; ++d) {
            dq(b, h, i, d) += ds[j] * scale * static_cast<double>(k(b, g, j, d));
            dk(b, g, j, d) += ds[j] * scale * static_cast<double>(q(b, h, i, d));
          }
      }
    }
  return {xt::cast<S>(dq), xt::cast<S>(dk), xt::cast<S>(dv)};
}

namespace {

// Slope h of H >= 1 heads (alibi_slopes below): with n the largest power of two <= H, the first
// n are 2^(-8 (h + 1) / n), the rest every other slope of 2n heads, 2^(-8 (2k + 1) / 2n).
double alibi_slope(std::size_t h, std::size_t n_heads) {
  std::size_t n = 1;  // the largest power of two <= n_heads
  while (2 * n <= n_heads) n *= 2;
  if (h < n) return std::exp2(-8.0 * static_cast<double>(h + 1) / static_cast<double>(n));
  const std::size_t k = h - n;
  return std::exp2(-8.0 * static_cast<double>(2 * k + 1) / static_cast<double>(2 * n));
}

}  // namespace

std::vector<double> alibi_slopes(std::size_t n_heads) {
  require(n_heads >= 1, "attn::alibi_slopes", "n_heads must be at least 1, got 0");
  std::vector<double> m(n_heads);
  for (std::size_t h = 0; h < n_heads; ++h) m[h] = alibi_slope(h, n_heads);
  return m;
}

std::vector<double> score_slopes(const ScoreParts& parts, std::size_t n_heads) {
  return parts.alibi ? alibi_slopes(n_heads) : std::vector<double>{};
}

double score_slope(const ScoreParts& parts, std::size_t h, std::size_t n_heads) {
  return parts.alibi ? alibi_slope(h, n_heads) : 0.0;
}

template <class S>
xt::xtensor<S, 3> alibi_bias(std::size_t n_heads, std::size_t T, std::size_t S_keys,
                             std::size_t offset) {
  const std::vector<double> m = alibi_slopes(n_heads);
  xt::xtensor<S, 3> bias({n_heads, T, S_keys});
  for (std::size_t h = 0; h < n_heads; ++h)
    for (std::size_t i = 0; i < T; ++i)
      for (std::size_t j = 0; j < S_keys; ++j) {
        const double distance = static_cast<double>(offset + i) - static_cast<double>(j);
        bias(h, i, j) = static_cast<S>(-m[h] * distance);
      }
  return bias;
}

#define ATTN_ATTENTION_REF_INSTANTIATE(S)                                           \
  template AttentionRefResult<S> attention_ref<S>(                                  \
      const xt::xtensor<S, 4>&, const xt::xtensor<S, 4>&, const xt::xtensor<S, 4>&, \
      const AttentionOptions&);                                                     \
  template AttentionRefResult<S> attention_ref<S>(                                  \
      const xt::xtensor<S, 4>&, const xt::xtensor<S, 4>&, const xt::xtensor<S, 4>&, \
      const AttentionOptions&, const xt::xtensor<S, 3>&);                           \
  template AttentionRefGrads<S> attention_ref_backward<S>(                          \
      const xt::xtensor<S, 4>&, const xt::xtensor<S, 4>&, const xt::xtensor<S, 4>&, \
      const xt::xtensor<S, 4>&, const xt::xtensor<S, 4>&, const AttentionOptions&); \
  template xt::xtensor<S, 3> alibi_bias<S>(std::size_t, std::size_t, std::size_t, std::size_t);
ATTN_ATTENTION_REF_INSTANTIATE(float)
ATTN_ATTENTION_REF_INSTANTIATE(double)
#undef ATTN_ATTENTION_REF_INSTANTIATE

}  // namespace attn
