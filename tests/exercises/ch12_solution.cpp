// tests/exercises/ch12_solution.cpp: chapter 12's exercises answered by the reference library.
// Linked in place of the learner's stubs (ctest solution.ch12) to prove that every test in
// ch12_test.cpp passes against attn/ops/online_softmax.hpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "attn/ops/online_softmax.hpp"
#include "exercises.hpp"
#include "reference.hpp"

namespace ex12 {

ATTN_REFERENCE void online_softmax_update(attn::OnlineRow& row, const attn::Vector& scores,
                                          const attn::Matrix& values) {
  attn::online_softmax_update(row, scores, values);
}

ATTN_REFERENCE attn::Matrix attention_tile(const attn::Matrix& q, const attn::Matrix& k,
                                           const attn::Matrix& v, std::size_t i0,
                                           std::size_t tile) {
  return attn::attention_tile(q, k, v, i0, tile);
}

// As attn::fast::flash_attention computes each row's lse from its state (fast/flash.cpp),
// which the library exposes for whole tensors only.
ATTN_REFERENCE float row_lse(const attn::OnlineRow& row) {
  if (row.l == 0.0f) return -std::numeric_limits<float>::infinity();
  return row.m + std::log(row.l);
}

// The step of attn::fast::flash_attention_backward (fast/flash.cpp) for one pair of tiles, which
// the library runs on whole heads with BLAS products and exposes no function for: the weights
// recomputed from the saved lse, P = exp(s - lse), then dv += P^T dout, dS = P (dout v^T - d),
// dq += dS k / sqrt(hs), dk += dS^T q / sqrt(hs), pair by pair, holding nothing but the result.
ATTN_REFERENCE TileGrads flash_backward_tile(const attn::Matrix& q, const attn::Matrix& k,
                                             const attn::Matrix& v, const attn::Matrix& dout,
                                             const attn::Vector& lse, const attn::Vector& d,
                                             std::size_t i0, std::size_t j0, std::size_t tile) {
  const char* fn = "ex12::flash_backward_tile";
  attn::check_head_and_tile(fn, q, k, v, tile);
  const std::size_t T = q.shape()[0], hs = q.shape()[1];
  if (dout.shape() != q.shape() || lse.size() != T || d.size() != T) {
    throw std::invalid_argument(
        std::string(fn) +
        ": dout must be (T, hs) like q, lse and d (T,), T = " + std::to_string(T));
  }
  if (i0 >= T || j0 >= T) {
    throw std::invalid_argument(std::string(fn) + ": i0 " + std::to_string(i0) + " and j0 " +
                                std::to_string(j0) + " must be below T = " + std::to_string(T));
  }
  const std::size_t rows = std::min(tile, T - i0), cols = std::min(tile, T - j0);
  TileGrads g{xt::zeros<float>({rows, hs}), xt::zeros<float>({cols, hs}),
              xt::zeros<float>({cols, hs})};
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t t = i0 + r;
    for (std::size_t c = 0; c < cols && j0 + c <= t; ++c) {  // causal: keys j <= t
      const std::size_t j = j0 + c;
      double s = 0.0, dp = 0.0;
      for (std::size_t e = 0; e < hs; ++e) {
        s += static_cast<double>(q(t, e)) * static_cast<double>(k(j, e));
        dp += static_cast<double>(dout(t, e)) * static_cast<double>(v(j, e));
      }
      const double p = std::exp(s * scale - static_cast<double>(lse(t)));
      const double ds = p * (dp - static_cast<double>(d(t))) * scale;
      for (std::size_t e = 0; e < hs; ++e) {
        g.dv(c, e) += static_cast<float>(p * static_cast<double>(dout(t, e)));
        g.dq(r, e) += static_cast<float>(ds * static_cast<double>(k(j, e)));
        g.dk(c, e) += static_cast<float>(ds * static_cast<double>(q(t, e)));
      }
    }
  }
  return g;
}

}  // namespace ex12
