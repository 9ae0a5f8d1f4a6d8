// loss.cpp: cross-entropy and its hand-derived gradient, the reference (chapter 01; every
// training chapter). For each row: m = the row's max, s = sum_v exp(l_v - m), then
//   loss_n = log(s) - (l[y_n] - m)                    = -log softmax(l_n)[y_n]
//   grad[n, v] = (exp(l_v - m) / s - [v == y_n]) / N  = (softmax(l_n) - onehot(y_n)) / N
// The training step runs the same numbers with the rows split over threads
// (common/src/fast/loss.cpp).
#include "attn/ops/loss.hpp"

#include <cmath>
#include <string>

#include "attn/core/check.hpp"
#include "loss_checks.hpp"

namespace attn {

namespace {

// What one row of logits (V,) needs for both the loss and the gradient:
//   m = max_v l_v (so every exponent is <= 0, as in softmax), and
//   s = sum_v exp(l_v - m), in double; s >= 1 because the max term is exactly 1.
template <class Real>  // float, or double for the float64 twins
struct RowSums {
  Real m;
  double s;
};
template <class Real>
RowSums<Real> row_sums(const Real* row, std::size_t V) {
  Real m = row[0];
  for (std::size_t v = 1; v < V; ++v)
    if (row[v] > m) m = row[v];
  double s = 0.0;
  for (std::size_t v = 0; v < V; ++v) s += static_cast<double>(std::exp(row[v] - m));
  return {m, s};
}

// The mean of -log softmax(l_n)[y_n] over the N rows, accumulated in double.
template <class Real>
double mean_loss(const xt::xtensor<Real, 2>& logits, std::span<const int> targets) {
  const std::size_t N = logits.shape()[0], V = logits.shape()[1];
  double total = 0.0;
  for (std::size_t n = 0; n < N; ++n) {
    const Real* row = logits.data() + n * V;  // (V,)
    const RowSums<Real> r = row_sums(row, V);
    const auto y = static_cast<std::size_t>(targets[n]);
    // -log(exp(l_y - m) / s) = log(s) - (l_y - m): a tiny probability stays a finite number.
    total += std::log(r.s) - (static_cast<double>(row[y]) - static_cast<double>(r.m));
  }
  return total / static_cast<double>(N);
}

// grad (N, V) = (softmax(l_n) - onehot(y_n)) / N, row by row. grad may be logits' own buffer:
// each row's sums are taken before the row is overwritten.
template <class Real>
void loss_grad(const Real* logits, std::span<const int> targets, std::size_t N, std::size_t V,
               Real* grad) {
  const double inv_n = 1.0 / static_cast<double>(N);
  for (std::size_t n = 0; n < N; ++n) {
    const Real* row = logits + n * V;  // (V,)
    const RowSums<Real> r = row_sums(row, V);
    const auto y = static_cast<std::size_t>(targets[n]);
    Real* g = grad + n * V;  // (V,)
    for (std::size_t v = 0; v < V; ++v) {
      const double p = static_cast<double>(std::exp(row[v] - r.m)) / r.s;  // softmax(l_n)[v]
      g[v] = static_cast<Real>((v == y ? p - 1.0 : p) * inv_n);
    }
  }
}

}  // namespace

double cross_entropy(const Matrix& logits, std::span<const int> targets) {
  detail::check_loss_inputs(logits, targets, "attn::cross_entropy");
  return mean_loss(logits, targets);
}

Matrix cross_entropy_grad(const Matrix& logits, std::span<const int> targets) {
  detail::check_loss_inputs(logits, targets, "attn::cross_entropy_grad");
  Matrix grad(logits.shape());  // (N, V)
  loss_grad(logits.data(), targets, logits.shape()[0], logits.shape()[1], grad.data());
  return grad;
}

LossGrad cross_entropy_with_grad(const Matrix& logits, std::span<const int> targets) {
  detail::check_loss_inputs(logits, targets, "attn::cross_entropy_with_grad");
  LossGrad out{mean_loss(logits, targets), Matrix(logits.shape())};
  loss_grad(logits.data(), targets, logits.shape()[0], logits.shape()[1], out.grad.data());
  return out;
}

double cross_entropy_backward_inplace(Matrix& logits, std::span<const int> targets) {
  detail::check_loss_inputs(logits, targets, "attn::cross_entropy_backward_inplace");
  const double loss = mean_loss(logits, targets);  // before the logits are overwritten
  loss_grad(logits.data(), targets, logits.shape()[0], logits.shape()[1], logits.data());
  return loss;
}

template <std::same_as<double> Real>
double cross_entropy(const xt::xtensor<Real, 2>& logits, std::span<const int> targets) {
  detail::check_loss_inputs(logits, targets, "attn::cross_entropy");
  return mean_loss(logits, targets);
}

template <std::same_as<double> Real>
xt::xtensor<Real, 2> cross_entropy_grad(const xt::xtensor<Real, 2>& logits,
                                        std::span<const int> targets) {
  detail::check_loss_inputs(logits, targets, "attn::cross_entropy_grad");
  xt::xtensor<Real, 2> grad(logits.shape());  // (N, V)
  loss_grad(logits.data(), targets, logits.shape()[0], logits.shape()[1], grad.data());
  return grad;
}

template double cross_entropy<double>(const Tensor64<2>&, std::span<const int>);
template Tensor64<2> cross_entropy_grad<double>(const Tensor64<2>&, std::span<const int>);

}  // namespace attn
