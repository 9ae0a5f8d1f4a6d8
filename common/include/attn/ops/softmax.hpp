// attn/ops/softmax.hpp: softmax over the last axis, the numerically stable way (chapter 03).
//   softmax(z)_i = exp(z_i - m) / sum_j exp(z_j - m),  m = max_j z_j
// Subtracting the row maximum changes nothing mathematically (it cancels) but keeps every
// exponent <= 0, so exp never overflows: softmax([1000, 1001]) is [0.2689, 0.7311], where the
// naive formula gives inf / inf = NaN.
// Masked entries are -inf and get weight exactly 0. A row that is entirely -inf (every key
// masked) has no valid distribution; we define its result as all zeros, never NaN.
#pragma once

#include <concepts>
#include <cstddef>
#include <span>

#include "attn/core/xt.hpp"

namespace attn {

// The kernel: in place, over `rows` contiguous rows of length `cols`.
void softmax_rows(float* data, std::size_t rows, std::size_t cols);

// Any rank >= 1, over the last axis. Throws std::invalid_argument if the last axis is empty.
template <std::size_t N>
Tensor<N> softmax(const Tensor<N>& x);

// exp(z_i) / sum_j exp(z_j) without the max shift: overflows to inf/NaN for logits above ~88.
// Only here so chapter 03 can show what goes wrong.
template <std::size_t N>
Tensor<N> softmax_naive(const Tensor<N>& x);

// log(softmax(x)) computed stably as x - m - log(sum exp(x - m)); -inf stays -inf.
template <std::size_t N>
Tensor<N> log_softmax(const Tensor<N>& x);

// Backward (chapter 08). With y = softmax(x) over a row and dy = dL/dy, the Jacobian-vector product
//   dx_i = y_i (dy_i - sum_j dy_j y_j)
// costs O(cols) per row; the (cols, cols) Jacobian is never formed. Only y is needed, not x.
// Masked entries (y = 0) get dx = 0. dx may alias dy. Rows of length cols, contiguous.
void softmax_rows_backward(const float* y, const float* dy, float* dx, std::size_t rows,
                           std::size_t cols);
// Any rank >= 1, over the last axis. Throws std::invalid_argument when the shapes differ.
template <std::size_t N>
Tensor<N> softmax_backward(const Tensor<N>& y, const Tensor<N>& dy);

// The float64 twins, for the gradient checks of chapter 08 (attn::check_gradients): the same
// code instantiated on double. (Constrained to double, so a float call never picks them.)
// (The raw-pointer kernels are templates too, so softmax_rows(nullptr, 0, n) stays the float one.)
template <std::same_as<double> Real>
void softmax_rows(Real* data, std::size_t rows, std::size_t cols);
template <std::same_as<double> Real>
void softmax_rows_backward(const Real* y, const Real* dy, Real* dx, std::size_t rows,
                           std::size_t cols);
template <std::size_t N, std::same_as<double> Real>
xt::xtensor<Real, N> softmax(const xt::xtensor<Real, N>& x);
template <std::size_t N, std::same_as<double> Real>
xt::xtensor<Real, N> softmax_backward(const xt::xtensor<Real, N>& y,
                                      const xt::xtensor<Real, N>& dy);

extern template Tensor<1> softmax<1>(const Tensor<1>&);
extern template Tensor<2> softmax<2>(const Tensor<2>&);
extern template Tensor<3> softmax<3>(const Tensor<3>&);
extern template Tensor<4> softmax<4>(const Tensor<4>&);
extern template Tensor<1> softmax_naive<1>(const Tensor<1>&);
extern template Tensor<2> softmax_naive<2>(const Tensor<2>&);
extern template Tensor<1> log_softmax<1>(const Tensor<1>&);
extern template Tensor<2> log_softmax<2>(const Tensor<2>&);
extern template void softmax_rows<double>(double*, std::size_t, std::size_t);
extern template void softmax_rows_backward<double>(const double*, const double*, double*,
                                                   std::size_t, std::size_t);
extern template Tensor64<2> softmax<2, double>(const Tensor64<2>&);
extern template Tensor64<4> softmax<4, double>(const Tensor64<4>&);
extern template Tensor64<2> softmax_backward<2, double>(const Tensor64<2>&, const Tensor64<2>&);
extern template Tensor64<4> softmax_backward<4, double>(const Tensor64<4>&, const Tensor64<4>&);

}  // namespace attn
