// attention_checks.hpp (private to common/src): the input checks of attention, shared by the
// reference (ops/attention.cpp) and the fast kernels (fast/attention.cpp), so both reject the
// same inputs with the same one-line messages.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>

#include "attn/core/check.hpp"
#include "attn/core/xt.hpp"
#include "attn/ops/attention.hpp"

namespace attn::detail {

// q (B, H, T, hs), k (B, H, S, hs), v (B, H, S, hv), hs >= 1, S >= 1, causal only when S == T.
template <class Real>  // float, or double for the float64 twins
void check_sdpa(const char* fn, const xt::xtensor<Real, 4>& q, const xt::xtensor<Real, 4>& k,
                const xt::xtensor<Real, 4>& v, bool causal) {
  const auto& qs = q.shape();  // (B, H, T, hs)
  const auto& ks = k.shape();  // (B, H, S, hs)
  const auto& vs = v.shape();  // (B, H, S, hv)
  const std::string got = "q " + shape_str(qs) + ", k " + shape_str(ks) + ", v " + shape_str(vs);
  if (ks[0] != qs[0] || vs[0] != qs[0] || ks[1] != qs[1] || vs[1] != qs[1] || vs[2] != ks[2] ||
      ks[3] != qs[3]) {
    shape_error(fn, "q (B, H, T, hs), k (B, H, S, hs), v (B, H, S, hv)", got);
  }
  if (qs[3] == 0 || ks[2] == 0) shape_error(fn, "hs >= 1 and at least one key (S >= 1)", got);
  if (causal && ks[2] != qs[2]) shape_error(fn, "S == T for causal attention", got);
}

// The backward's extra inputs: the forward's probs (B, H, T, S) and dout like its out.
template <class Real>
void check_sdpa_backward(const char* fn, const xt::xtensor<Real, 4>& dout,
                         const xt::xtensor<Real, 4>& q, const xt::xtensor<Real, 4>& k,
                         const xt::xtensor<Real, 4>& v, const xt::xtensor<Real, 4>& probs,
                         bool causal) {
  check_sdpa(fn, q, k, v, causal);
  const std::array<std::size_t, 4> w_shape{q.shape()[0], q.shape()[1], q.shape()[2], k.shape()[2]};
  if (!std::equal(w_shape.begin(), w_shape.end(), probs.shape().begin())) {
    shape_error(fn, "the forward's attention probabilities " + shape_str(w_shape),
                shape_str(probs.shape()));
  }
  const std::array<std::size_t, 4> o_shape{q.shape()[0], q.shape()[1], q.shape()[2], v.shape()[3]};
  if (!std::equal(o_shape.begin(), o_shape.end(), dout.shape().begin())) {
    shape_error(fn, "dout " + shape_str(o_shape) + " (like the forward's out)",
                "dout " + shape_str(dout.shape()));
  }
}

// "attn::mha_forward: n_heads = 5 does not divide C = 64"
inline void check_heads(const char* fn, std::size_t n_heads, std::size_t C) {
  require(n_heads >= 1 && C % n_heads == 0, fn, [&] {
    return "n_heads = " + std::to_string(n_heads) + " does not divide C = " + std::to_string(C);
  });
}

// "attn::mha_forward: w_k is (64, 32), expected (64, 64)"
template <class Real>
void check_weight(const char* fn, const char* name, const xt::xtensor<Real, 2>& w, std::size_t rows,
                  std::size_t cols) {
  const std::array<std::size_t, 2> want{rows, cols};
  require(w.shape()[0] == rows && w.shape()[1] == cols, fn, [&] {
    return std::string(name) + " is " + shape_str(w.shape()) + ", expected " + shape_str(want);
  });
}

// x (B, T, C) with C >= 1, H dividing C, four (C, C) weights (w_o may be empty when
// allow_no_proj: no output projection, BlockConfig::attn_proj = false).
template <class Real>
void check_mha(const char* fn, const xt::xtensor<Real, 3>& x, const MhaWeightsOf<Real>& w,
               std::size_t n_heads, bool allow_no_proj = false) {
  const std::size_t C = x.shape()[2];
  require(C >= 1, fn, [&] { return "x is " + shape_str(x.shape()) + ", C must be at least 1"; });
  check_heads(fn, n_heads, C);
  check_weight(fn, "w_q", w.w_q, C, C);
  check_weight(fn, "w_k", w.w_k, C, C);
  check_weight(fn, "w_v", w.w_v, C, C);
  if (!(allow_no_proj && w.w_o.size() == 0)) check_weight(fn, "w_o", w.w_o, C, C);
}

// mha_forward_fused: x (B, T, C), w_qkv (C, 3C), w_o (C, C).
inline void check_mha_fused(const char* fn, const Tensor<3>& x, const Matrix& w_qkv,
                            const Matrix& w_o, std::size_t n_heads) {
  const std::size_t C = x.shape()[2];
  require(C >= 1, fn, [&] { return "x is " + shape_str(x.shape()) + ", C must be at least 1"; });
  check_heads(fn, n_heads, C);
  check_weight(fn, "w_qkv", w_qkv, C, 3 * C);
  check_weight(fn, "w_o", w_o, C, C);
}

// mha_cross_forward: x (B, T, C), y (B, S, C) with S >= 1.
inline void check_mha_cross(const char* fn, const Tensor<3>& x, const Tensor<3>& y,
                            const MhaWeights& w, std::size_t n_heads) {
  check_mha(fn, x, w, n_heads);
  if (y.shape()[0] != x.shape()[0] || y.shape()[2] != x.shape()[2]) {
    shape_error(fn, "x (B, T, C) and y (B, S, C)",
                "x " + shape_str(x.shape()) + " and y " + shape_str(y.shape()));
  }
  require(y.shape()[1] >= 1, fn,
          [&] { return "y is " + shape_str(y.shape()) + ", S must be at least 1"; });
}

// mha_backward: dout like the forward's x, grads shaped like the weights.
template <class Real>
void check_mha_backward(const char* fn, const xt::xtensor<Real, 3>& dout,
                        const xt::xtensor<Real, 3>& x, const MhaWeightsOf<Real>& w,
                        std::size_t n_heads, const MhaWeightsOf<Real>& grads) {
  check_mha(fn, x, w, n_heads, /*allow_no_proj=*/true);
  if (dout.shape() != x.shape()) {
    shape_error(fn, "dout of shape " + shape_str(x.shape()) + " (like the forward's x)",
                "dout " + shape_str(dout.shape()));
  }
  const std::size_t C = x.shape()[2];
  check_weight(fn, "grads.w_q", grads.w_q, C, C);
  check_weight(fn, "grads.w_k", grads.w_k, C, C);
  check_weight(fn, "grads.w_v", grads.w_v, C, C);
  if (w.w_o.size() != 0) check_weight(fn, "grads.w_o", grads.w_o, C, C);
}

}  // namespace attn::detail
