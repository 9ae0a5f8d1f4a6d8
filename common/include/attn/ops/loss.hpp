// attn/ops/loss.hpp: cross-entropy, the loss every chapter trains with (chapter 01).
// For N predictions with logits l_n (V scores) and targets y_n:
//   loss = -(1/N) sum_n log softmax(l_n)[y_n]
//   dloss/dl_n = (softmax(l_n) - onehot(y_n)) / N
// The gradient is derived by hand in docs/01-bigram.md and checked by finite differences in
// tests/common/test_loss.cpp. These are the reference versions, one plain loop per row; the
// training step uses attn::fast:: (attn/fast/loss.hpp), tested equal to these.
#pragma once

#include <concepts>
#include <span>

#include "attn/core/xt.hpp"

namespace attn {

// logits (N, V), targets N ids in [0, V). The mean is accumulated in double. Throws
// std::invalid_argument for mismatched N, N == 0, or a target outside [0, V).
double cross_entropy(const Matrix& logits, std::span<const int> targets);

// The gradient with respect to the logits, (N, V).
Matrix cross_entropy_grad(const Matrix& logits, std::span<const int> targets);

// Both at once, sharing the softmax.
struct LossGrad {
  double loss;
  Matrix grad;  // (N, V)
};
LossGrad cross_entropy_with_grad(const Matrix& logits, std::span<const int> targets);

// The same in place, for training loops that reuse their buffers: returns the mean loss and
// overwrites logits (N, V) with dloss/dlogits (the same numbers as cross_entropy_with_grad).
double cross_entropy_backward_inplace(Matrix& logits, std::span<const int> targets);

// The float64 twins, for the gradient checks of chapter 08: the same code on double.
template <std::same_as<double> Real>
double cross_entropy(const xt::xtensor<Real, 2>& logits, std::span<const int> targets);
template <std::same_as<double> Real>
xt::xtensor<Real, 2> cross_entropy_grad(const xt::xtensor<Real, 2>& logits,
                                        std::span<const int> targets);
extern template double cross_entropy<double>(const Tensor64<2>&, std::span<const int>);
extern template Tensor64<2> cross_entropy_grad<double>(const Tensor64<2>&, std::span<const int>);

}  // namespace attn
