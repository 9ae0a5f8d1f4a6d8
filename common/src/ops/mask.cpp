// mask.cpp: causal masks and masked softmax (chapters 02-03; every attention layer after).
// Query t may attend to keys 0..t. The boolean mask says where; masked_softmax turns scores
// into weights that are exactly 0 on the future, whatever the score there was.
#include "attn/ops/mask.hpp"
#include "attn/core/limits.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "attn/core/check.hpp"
#include "attn/ops/softmax.hpp"

namespace attn {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The last two axes of scores (..., T, S) must equal the mask's (T, S). Returns T * S, the size
// of one (T, S) slice.
template <std::size_t N, class Real, class MaskT>
std::size_t check_mask_shape(const xt::xtensor<Real, N>& scores, const MaskT& mask) {
  const auto& s = scores.shape();
  const auto& m = mask.shape();
  if (s[N - 2] != m[0] || s[N - 1] != m[1]) {
    shape_error("attn::masked_softmax", "scores of shape (..., T, S) matching mask (T, S)",
                "scores " + shape_str(s) + " and mask " + shape_str(m));
  }
  return m[0] * m[1];
}

}  // namespace

Mask causal_mask(std::size_t T) {
  // tril(ones(T, T)): row t (the query) is true in columns 0..t (the keys it may see).
  checked_elements({T, T}, "attn::causal_mask: (T, T)");
  Mask allowed({T, T});  // (T, T)
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t s = 0; s < T; ++s) allowed(t, s) = (s <= t);
  return allowed;
}

Matrix causal_mask_additive(std::size_t T) {
  checked_elements({T, T}, "attn::causal_mask_additive: (T, T)");
  // where(allowed, 0, -inf): a choice per entry, no arithmetic on infinities.
  Matrix additive = xt::where(causal_mask(T), 0.0f, -kInf);  // (T, T)
  return additive;
}

Matrix causal_mask_additive_naive(std::size_t T) {
  checked_elements({T, T}, "attn::causal_mask_additive_naive: (T, T)");
  // The seed's np.triu(np.ones((T, T)), k=1) * float('-inf'), kept verbatim: above the diagonal
  // 1 * -inf = -inf as intended, but on and below it 0 * -inf = NaN (IEEE 754), so every score
  // a query is allowed to see becomes NaN once this mask is added.
  Matrix naive = xt::triu(xt::ones<float>({T, T}), 1) * -kInf;  // (T, T)
  return naive;
}

// (..., T, S) scores on float or double: the body of masked_softmax and of its float64 twin.
template <std::size_t N, class Real>
xt::xtensor<Real, N> masked_softmax_of(const xt::xtensor<Real, N>& scores, const Mask& allowed) {
  static_assert(N >= 2, "masked_softmax needs scores of shape (..., T, S)");
  const std::size_t slice = check_mask_shape(scores, allowed);
  const std::size_t T = allowed.shape()[0];
  const std::size_t S = allowed.shape()[1];
  xt::xtensor<Real, N> out(scores.shape());  // (..., T, S)
  if (out.size() == 0) return out;
  const std::size_t slices = out.size() / slice;  // product of the leading axes, e.g. B * H
  const bool* ok = allowed.data();
  for (std::size_t b = 0; b < slices; ++b) {
    for (std::size_t t = 0; t < T; ++t) {
      const Real* in = scores.data() + b * slice + t * S;  // row t of slice b: (S,)
      Real* row = out.data() + b * slice + t * S;
      const bool* keep = ok + t * S;  // which keys query t may see: (S,)
      // 1. The maximum over the allowed keys only: a masked score (even inf or NaN) must not
      //    take part in anything. A NaN among the allowed scores becomes the maximum, so it
      //    shows up in the output instead of being silently dropped.
      Real m = -std::numeric_limits<Real>::infinity();
      for (std::size_t s = 0; s < S; ++s) {
        if (!keep[s]) continue;
        if (std::isnan(in[s])) {
          m = in[s];
          break;
        }
        if (in[s] > m) m = in[s];
      }
      // 2. No allowed key (or every allowed score -inf): a row of zeros, by definition.
      if (m == -std::numeric_limits<Real>::infinity()) {
        for (std::size_t s = 0; s < S; ++s) row[s] = Real(0);
        continue;
      }
      // 3. Exponentiate the allowed scores minus m. Masked keys get exactly 0, written rather
      //    than computed: their score may be anything, even NaN or +inf.
      Real sum = Real(0);
      for (std::size_t s = 0; s < S; ++s) {
        row[s] = keep[s] ? std::exp(in[s] - m) : Real(0);
        sum += row[s];
      }
      // 4. Normalise the allowed entries; the masked zeros stay zeros.
      const Real inv = Real(1) / sum;
      for (std::size_t s = 0; s < S; ++s)
        if (keep[s]) row[s] *= inv;
    }
  }
  return out;
}

template <std::size_t N>
Tensor<N> masked_softmax(const Tensor<N>& scores, const Mask& allowed) {
  return masked_softmax_of<N>(scores, allowed);
}
template <std::size_t N, std::same_as<double> Real>
xt::xtensor<Real, N> masked_softmax(const xt::xtensor<Real, N>& scores, const Mask& allowed) {
  return masked_softmax_of<N>(scores, allowed);
}

template <std::size_t N>
Tensor<N> masked_softmax(const Tensor<N>& scores, const Matrix& additive_mask) {
  static_assert(N >= 2, "masked_softmax needs scores of shape (..., T, S)");
  const std::size_t slice = check_mask_shape(scores, additive_mask);
  // 1. scores + mask, the (T, S) mask broadcast over the leading axes: (..., T, S) + (T, S).
  //    Nothing is special-cased: a NaN in the mask (the naive triu * -inf) becomes a NaN score.
  Tensor<N> out = scores;
  if (out.size() == 0) return out;
  const std::size_t slices = out.size() / slice;  // product of the leading axes, e.g. B * H
  const float* add = additive_mask.data();
  for (std::size_t b = 0; b < slices; ++b) {
    float* s = out.data() + b * slice;  // one (T, S) slice
    for (std::size_t k = 0; k < slice; ++k) s[k] += add[k];
  }
  // 2. The ordinary stable softmax over the last axis: -inf entries get exactly 0 and a row
  //    that is entirely -inf gives zeros.
  const std::size_t S = additive_mask.shape()[1];
  softmax_rows(out.data(), out.size() / S, S);
  return out;
}

// Backward (chapter 08): the same Jacobian-vector product as softmax's. A masked entry has
// y = 0, so dx = y (dy - dot) = 0 there whatever dy is: no gradient reaches a future key.
template <std::size_t N, class Real>
xt::xtensor<Real, N> masked_softmax_backward_of(const xt::xtensor<Real, N>& y,
                                                const xt::xtensor<Real, N>& dy) {
  static_assert(N >= 2, "masked_softmax_backward needs (..., T, S)");
  if (y.shape() != dy.shape()) {
    shape_error("attn::masked_softmax_backward",
                "dy of the same shape as y " + shape_str(y.shape()), "dy " + shape_str(dy.shape()));
  }
  xt::xtensor<Real, N> dx(y.shape());  // (..., T, S)
  const std::size_t S = y.shape()[N - 1];
  if (dx.size() == 0) return dx;
  softmax_rows_backward(y.data(), dy.data(), dx.data(), dx.size() / S, S);
  return dx;
}

template <std::size_t N>
Tensor<N> masked_softmax_backward(const Tensor<N>& y, const Tensor<N>& dy) {
  return masked_softmax_backward_of<N>(y, dy);
}
template <std::size_t N, std::same_as<double> Real>
xt::xtensor<Real, N> masked_softmax_backward(const xt::xtensor<Real, N>& y,
                                             const xt::xtensor<Real, N>& dy) {
  return masked_softmax_backward_of<N>(y, dy);
}

template Tensor<2> masked_softmax_backward<2>(const Tensor<2>&, const Tensor<2>&);
template Tensor<3> masked_softmax_backward<3>(const Tensor<3>&, const Tensor<3>&);
template Tensor<4> masked_softmax_backward<4>(const Tensor<4>&, const Tensor<4>&);

template Tensor<2> masked_softmax<2>(const Tensor<2>&, const Mask&);
template Tensor<3> masked_softmax<3>(const Tensor<3>&, const Mask&);
template Tensor<4> masked_softmax<4>(const Tensor<4>&, const Mask&);
template Tensor<2> masked_softmax<2>(const Tensor<2>&, const Matrix&);
template Tensor<3> masked_softmax<3>(const Tensor<3>&, const Matrix&);
template Tensor<4> masked_softmax<4>(const Tensor<4>&, const Matrix&);
template Tensor64<2> masked_softmax<2, double>(const Tensor64<2>&, const Mask&);
template Tensor64<2> masked_softmax_backward<2, double>(const Tensor64<2>&, const Tensor64<2>&);

}  // namespace attn
