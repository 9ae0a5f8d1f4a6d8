// attn/ops/mask.hpp: causal masks and masked softmax (chapters 02-03).
// A decoder must not look at the future: query t may attend to keys 0..t only. The seeds write
// that rule two ways, and we provide both:
//   - boolean: tril(ones(T, T)), true where attention is allowed (used with masked_fill);
//   - additive: 0 where allowed, -inf where not (added to the scores before softmax).
// Build the additive form with where(allowed, 0, -inf). Never as triu(ones, 1) * -inf: the
// zeros times -inf are NaN (IEEE 754: 0 * inf is NaN), and every allowed score becomes NaN.
#pragma once

#include <concepts>
#include <cstddef>

#include "attn/core/xt.hpp"

namespace attn {

Mask causal_mask(std::size_t T);             // (T, T), true on and below the diagonal
Matrix causal_mask_additive(std::size_t T);  // (T, T), 0 on and below, -inf above

// The trap from the seeds, kept so chapter 03 can show it: triu(ones(T, T), 1) * -inf.
// Every entry on and below the diagonal is 0 * -inf = NaN.
Matrix causal_mask_additive_naive(std::size_t T);

// softmax over the last axis of `scores` (..., T, S) where `allowed` (T, S) is true, weight 0
// elsewhere. A query with no allowed key gets a row of zeros (documented, never NaN).
// Throws std::invalid_argument naming both shapes if the last two axes of scores are not (T, S).
template <std::size_t N>
Tensor<N> masked_softmax(const Tensor<N>& scores, const Mask& allowed);
// Same, with an additive mask (T, S) of 0 / -inf, the form most papers write.
template <std::size_t N>
Tensor<N> masked_softmax(const Tensor<N>& scores, const Matrix& additive_mask);

extern template Tensor<2> masked_softmax<2>(const Tensor<2>&, const Mask&);
extern template Tensor<3> masked_softmax<3>(const Tensor<3>&, const Mask&);
extern template Tensor<4> masked_softmax<4>(const Tensor<4>&, const Mask&);
extern template Tensor<2> masked_softmax<2>(const Tensor<2>&, const Matrix&);
extern template Tensor<3> masked_softmax<3>(const Tensor<3>&, const Matrix&);
extern template Tensor<4> masked_softmax<4>(const Tensor<4>&, const Matrix&);

// Backward of masked_softmax (chapter 08): the softmax backward on y = masked_softmax(...).
// Masked entries have y = 0, so their gradient is exactly 0: nothing flows to the future.
template <std::size_t N>
Tensor<N> masked_softmax_backward(const Tensor<N>& y, const Tensor<N>& dy);

// The float64 twins, for the gradient checks of chapter 08: the same code on double.
template <std::size_t N, std::same_as<double> Real>
xt::xtensor<Real, N> masked_softmax(const xt::xtensor<Real, N>& scores, const Mask& allowed);
template <std::size_t N, std::same_as<double> Real>
xt::xtensor<Real, N> masked_softmax_backward(const xt::xtensor<Real, N>& y,
                                             const xt::xtensor<Real, N>& dy);
extern template Tensor64<2> masked_softmax<2, double>(const Tensor64<2>&, const Mask&);
extern template Tensor64<2> masked_softmax_backward<2, double>(const Tensor64<2>&,
                                                               const Tensor64<2>&);

}  // namespace attn
