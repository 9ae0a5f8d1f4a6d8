// linear.cpp: the linear layer y = x @ W (+ b) and its backward, the reference (chapters 04-08).
// Plain loops in the page's order: every output is one dot product, every gradient one sum over
// the B*T rows. The model's fast path runs the same math as BLAS GEMMs
// (common/src/fast/linear.cpp).
#include "attn/ops/linear.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "attn/core/check.hpp"

namespace attn {

namespace {

// x (B, T, in) and w (in, out) must agree on `in`.
template <class Real>
void check_linear(const xt::xtensor<Real, 3>& x, const xt::xtensor<Real, 2>& w) {
  if (x.shape()[2] != w.shape()[0]) {
    shape_error("attn::linear", "x (B, T, in) @ w (in, out) with the same in",
                "x " + shape_str(x.shape()) + " @ w " + shape_str(w.shape()));
  }
}

// y (rows, out) = x (rows, in) @ w (in, out) + bias (out,), bias null for none.
//   y[r, o] = b[o] + sum_i x[r, i] w[i, o]
// A linear layer acts on each position on its own, so (B, T) are just B*T rows: a row-major
// (B, T, in) tensor is a (B*T, in) matrix in memory. Every sum of this file is taken in double
// and rounded once: the reference then does not depend on the order of its additions, and the
// fast side's float GEMMs are tested against the more accurate number.
template <class Real>
void linear_rows(const Real* x, const Real* w, const Real* bias, Real* y, std::size_t rows,
                 std::size_t in, std::size_t out) {
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t o = 0; o < out; ++o) {
      double sum = bias != nullptr ? static_cast<double>(bias[o]) : 0.0;
      for (std::size_t i = 0; i < in; ++i)
        sum += static_cast<double>(x[r * in + i]) * static_cast<double>(w[i * out + o]);
      y[r * out + o] = static_cast<Real>(sum);
    }
  }
}

// The bodies, on float or double (the float64 twins of chapter 08's gradient checks).
template <class Real>
xt::xtensor<Real, 3> linear_of(const xt::xtensor<Real, 3>& x, const xt::xtensor<Real, 2>& w) {
  check_linear(x, w);
  const std::size_t B = x.shape()[0], T = x.shape()[1];
  const std::size_t in = w.shape()[0], out = w.shape()[1];
  xt::xtensor<Real, 3> y(typename xt::xtensor<Real, 3>::shape_type{B, T, out});
  // (B*T, in) @ (in, out) -> (B*T, out)
  linear_rows<Real>(x.data(), w.data(), nullptr, y.data(), B * T, in, out);
  return y;
}

template <class Real>
xt::xtensor<Real, 3> linear_of(const xt::xtensor<Real, 3>& x, const xt::xtensor<Real, 2>& w,
                               const xt::xtensor<Real, 1>& b) {
  check_linear(x, w);
  if (b.shape()[0] != w.shape()[1]) {
    shape_error("attn::linear", "bias (out,) matching w (in, out)",
                "w " + shape_str(w.shape()) + " and bias " + shape_str(b.shape()));
  }
  const std::size_t B = x.shape()[0], T = x.shape()[1];
  const std::size_t in = w.shape()[0], out = w.shape()[1];
  xt::xtensor<Real, 3> y(typename xt::xtensor<Real, 3>::shape_type{B, T, out});
  // (B*T, in) @ (in, out) + (out,) -> (B*T, out), the bias broadcast over the rows
  linear_rows<Real>(x.data(), w.data(), b.data(), y.data(), B * T, in, out);
  return y;
}

// ---- Backward (chapter 08) ----

template <class Real>
void linear_backward_of(const xt::xtensor<Real, 3>& dy, const xt::xtensor<Real, 3>& x,
                        const xt::xtensor<Real, 2>& w, xt::xtensor<Real, 3>& dx,
                        xt::xtensor<Real, 2>& dw, xt::xtensor<Real, 1>* db) {
  constexpr const char* kFn = "attn::linear_backward";
  const std::size_t B = x.shape()[0], T = x.shape()[1];
  const std::size_t in = w.shape()[0], out = w.shape()[1];
  if (x.shape()[2] != in) {
    shape_error(kFn, "x (B, T, in) and w (in, out) with the same in",
                "x " + shape_str(x.shape()) + " and w " + shape_str(w.shape()));
  }
  const std::array<std::size_t, 3> want{B, T, out};
  if (!std::equal(want.begin(), want.end(), dy.shape().begin())) {
    shape_error(kFn, "dy of shape " + shape_str(want) + " (like y = x @ w)",
                "dy " + shape_str(dy.shape()));
  }
  if (dw.shape() != w.shape()) {
    shape_error(kFn, "dw shaped like w " + shape_str(w.shape()), "dw " + shape_str(dw.shape()));
  }
  if (db != nullptr && (db->dimension() != 1 || db->shape()[0] != out)) {
    shape_error(kFn, "db of shape (" + std::to_string(out) + ",)", "db " + shape_str(db->shape()));
  }
  if (dx.shape() != x.shape()) dx.resize(x.shape());
  const std::size_t rows = B * T;
  const Real* X = x.data();    // (B*T, in)
  const Real* dY = dy.data();  // (B*T, out)
  const Real* W = w.data();    // (in, out)
  // 1. dx = dy @ W^T: input i reached output o through w[i, o], so
  //      dx[r, i] = sum_o dy[r, o] w[i, o]        (B*T, out) @ (out, in) -> (B*T, in)
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t i = 0; i < in; ++i) {
      double sum = 0.0;
      for (std::size_t o = 0; o < out; ++o)
        sum += static_cast<double>(dY[r * out + o]) * static_cast<double>(W[i * out + o]);
      dx.data()[r * in + i] = static_cast<Real>(sum);
    }
  }
  // 2. dW += x^T @ dy: w[i, o] met x[r, i] in every one of the B*T rows, so
  //      dW[i, o] += sum_r x[r, i] dy[r, o]       (in, B*T) @ (B*T, out) -> (in, out)
  for (std::size_t i = 0; i < in; ++i) {
    for (std::size_t o = 0; o < out; ++o) {
      double sum = 0.0;
      for (std::size_t r = 0; r < rows; ++r)
        sum += static_cast<double>(X[r * in + i]) * static_cast<double>(dY[r * out + o]);
      dw(i, o) = static_cast<Real>(static_cast<double>(dw(i, o)) + sum);
    }
  }
  // 3. db += sum_r dy[r, o]: the bias was added to every row. (The same sums, in the same order,
  //    as the fast side's bias_backward: the two agree bit for bit.)
  if (db == nullptr) return;
  for (std::size_t o = 0; o < out; ++o) {
    double sum = 0.0;
    for (std::size_t r = 0; r < rows; ++r) sum += static_cast<double>(dY[r * out + o]);
    (*db)(o) = static_cast<Real>(static_cast<double>((*db)(o)) + sum);
  }
}

template <class Real>
LinearGradsOf<Real> linear_backward_of(const xt::xtensor<Real, 3>& dy,
                                       const xt::xtensor<Real, 3>& x,
                                       const xt::xtensor<Real, 2>& w) {
  LinearGradsOf<Real> g;
  g.dw = xt::zeros<Real>(w.shape());
  g.db = xt::zeros<Real>({w.shape()[1]});
  linear_backward_of<Real>(dy, x, w, g.dx, g.dw, &g.db);
  return g;
}

}  // namespace

Tensor<3> linear(const Tensor<3>& x, const Matrix& w) { return linear_of(x, w); }
Tensor<3> linear(const Tensor<3>& x, const Matrix& w, const Vector& b) {
  return linear_of(x, w, b);
}
void linear_backward(const Tensor<3>& dy, const Tensor<3>& x, const Matrix& w, Tensor<3>& dx,
                     Matrix& dw, Vector* db) {
  linear_backward_of(dy, x, w, dx, dw, db);
}
LinearGrads linear_backward(const Tensor<3>& dy, const Tensor<3>& x, const Matrix& w) {
  return linear_backward_of(dy, x, w);
}

template <std::same_as<double> Real>
xt::xtensor<Real, 3> linear(const xt::xtensor<Real, 3>& x, const xt::xtensor<Real, 2>& w) {
  return linear_of(x, w);
}
template <std::same_as<double> Real>
xt::xtensor<Real, 3> linear(const xt::xtensor<Real, 3>& x, const xt::xtensor<Real, 2>& w,
                            const xt::xtensor<Real, 1>& b) {
  return linear_of(x, w, b);
}
template <std::same_as<double> Real>
void linear_backward(const xt::xtensor<Real, 3>& dy, const xt::xtensor<Real, 3>& x,
                     const xt::xtensor<Real, 2>& w, xt::xtensor<Real, 3>& dx,
                     xt::xtensor<Real, 2>& dw, xt::xtensor<Real, 1>* db) {
  linear_backward_of(dy, x, w, dx, dw, db);
}
template <std::same_as<double> Real>
LinearGradsOf<Real> linear_backward(const xt::xtensor<Real, 3>& dy, const xt::xtensor<Real, 3>& x,
                                    const xt::xtensor<Real, 2>& w) {
  return linear_backward_of(dy, x, w);
}
template Tensor64<3> linear<double>(const Tensor64<3>&, const Tensor64<2>&);
template Tensor64<3> linear<double>(const Tensor64<3>&, const Tensor64<2>&, const Tensor64<1>&);
template void linear_backward<double>(const Tensor64<3>&, const Tensor64<3>&, const Tensor64<2>&,
                                      Tensor64<3>&, Tensor64<2>&, Tensor64<1>*);
template LinearGrads64 linear_backward<double>(const Tensor64<3>&, const Tensor64<3>&,
                                               const Tensor64<2>&);

}  // namespace attn
