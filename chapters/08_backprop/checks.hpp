// chapters/08_backprop/checks.hpp: the run around the lesson of chapter 08. Which backward
// passes the sections call (the reference, or with --mine the learner's exercises), and the
// gradient check of every op (section 3), whose per-op setup lives in checks.cpp.
#pragma once

#include "attn/core/random.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/linear.hpp"
#include "exercises.hpp"
#include "show.hpp"

namespace ch08 {

// The backward passes this chapter's exercises mirror: from attn:: (the reference) or, with
// --mine, from the learner's ex08:: exercises.
struct Kernels {
  Matrix (*softmax_backward)(const Matrix& y, const Matrix& dy);         // (N, S) -> (N, S)
  Matrix (*masked_softmax_backward)(const Matrix& y, const Matrix& dy);  // the same, y has zeros
  attn::LinearGrads (*linear_backward)(const Tensor<3>& dy, const Tensor<3>& x, const Matrix& w);
  attn::LayerNormGrads<3> (*layer_norm_backward)(const Tensor<3>& dy, const Tensor<3>& x,
                                                 const Vector& gamma, float eps);
  ex08::AttentionGrads (*attention_backward)(const Matrix& dout, const Matrix& q, const Matrix& k,
                                             const Matrix& v, bool causal);  // one head
  std::vector<double> (*central_differences)(  // (n,) the numerical gradient of f at x, step h
      const std::function<double(std::span<const double>)>& f, std::span<const double> x, double h);
  attn::TiedEmbeddingGrads (*tied_embedding_backward)(  // dwte (V, C), dh (N, C)
      const Tensor<3>& dx, const xt::xtensor<int, 2>& tokens, const Matrix& dlogits,
      const Matrix& h, const Matrix& wte);
};
Kernels reference_kernels();
Kernels learner_kernels();

// 3. The gradient check of every op, in float64: each backward of the course (the float64 twins
// of the reference ops, or with `mine` the learner's kernels in k; the library's float backward of
// the block and the model) against central differences of a double forward of
// L = sum(out * R), R random; then wrong gradients on purpose, one only 0.1% off, and the same
// check through a float forward, to show why float64.
GradientChecks gradient_checks(const Kernels& k, bool mine, attn::Rng& rng);

// The checker's core on a function whose gradient is known exactly: central differences (the
// kernel's, ex08.5 with --mine) against forward differences.
CentralDifferenceDemo central_difference_demo(const Kernels& k);

// The tied embedding's backward (ex08.6 with --mine): the gradients of wte (read by the lookup
// and by the output head) and of h, checked in float64 like the other float backwards.
std::vector<CheckRow> tied_embedding_check(const Kernels& k, attn::Rng& rng);

}  // namespace ch08
