// attn/ops/linear.hpp: the linear layer y = x @ W (+ b) and its backward (chapters 04-08).
// Convention (PyTorch-compatible): W has shape (in, out), so y = x @ W; every position (b, t) of
// x is mapped on its own. These are the reference versions, plain loops in the page's order;
// the model's fast path uses attn::fast::linear (attn/fast/linear.hpp: one BLAS GEMM over all
// B*T rows), tested equal to these in tests/common/test_fast_ops.cpp.
#pragma once

#include <concepts>
#include <cstddef>

#include "attn/core/xt.hpp"

namespace attn {

// x (B, T, in) @ w (in, out) [+ b (out,)] -> (B, T, out).
// Throws std::invalid_argument naming both shapes when `in` (or the bias length) disagrees.
Tensor<3> linear(const Tensor<3>& x, const Matrix& w);
Tensor<3> linear(const Tensor<3>& x, const Matrix& w, const Vector& b);

// Backward of y = x @ W + b (chapter 08). With dy = dL/dy (B, T, out):
//   dx = dy @ W^T      (B, T, in)     overwritten (resized if needed)
//   dW += x^T @ dy     (in, out)      accumulated over all B*T rows
//   db += sum_rows dy  (out,)         accumulated; skipped when db is null
// Gradients of parameters accumulate (+=), so a weight used twice collects both uses; zero them
// before a step. Throws std::invalid_argument naming mismatched shapes.
void linear_backward(const Tensor<3>& dy, const Tensor<3>& x, const Matrix& w, Tensor<3>& dx,
                     Matrix& dw, Vector* db = nullptr);
// The same, returning fresh gradients (for the chapters and tests).
template <class Real>
struct LinearGradsOf {
  xt::xtensor<Real, 3> dx;  // (B, T, in)
  xt::xtensor<Real, 2> dw;  // (in, out)
  xt::xtensor<Real, 1> db;  // (out,)
};
using LinearGrads = LinearGradsOf<float>;
using LinearGrads64 = LinearGradsOf<double>;
LinearGrads linear_backward(const Tensor<3>& dy, const Tensor<3>& x, const Matrix& w);

// The float64 twins, for the gradient checks of chapter 08 (attn::check_gradients): the same
// code instantiated on double. (Constrained to double, so a float call never picks them.)
template <std::same_as<double> Real>
xt::xtensor<Real, 3> linear(const xt::xtensor<Real, 3>& x, const xt::xtensor<Real, 2>& w);
template <std::same_as<double> Real>
xt::xtensor<Real, 3> linear(const xt::xtensor<Real, 3>& x, const xt::xtensor<Real, 2>& w,
                            const xt::xtensor<Real, 1>& b);
template <std::same_as<double> Real>
void linear_backward(const xt::xtensor<Real, 3>& dy, const xt::xtensor<Real, 3>& x,
                     const xt::xtensor<Real, 2>& w, xt::xtensor<Real, 3>& dx,
                     xt::xtensor<Real, 2>& dw, xt::xtensor<Real, 1>* db = nullptr);
template <std::same_as<double> Real>
LinearGradsOf<Real> linear_backward(const xt::xtensor<Real, 3>& dy, const xt::xtensor<Real, 3>& x,
                                    const xt::xtensor<Real, 2>& w);
extern template Tensor64<3> linear<double>(const Tensor64<3>&, const Tensor64<2>&);
extern template Tensor64<3> linear<double>(const Tensor64<3>&, const Tensor64<2>&,
                                           const Tensor64<1>&);
extern template void linear_backward<double>(const Tensor64<3>&, const Tensor64<3>&,
                                             const Tensor64<2>&, Tensor64<3>&, Tensor64<2>&,
                                             Tensor64<1>*);
extern template LinearGrads64 linear_backward<double>(const Tensor64<3>&, const Tensor64<3>&,
                                                      const Tensor64<2>&);

}  // namespace attn
