// softmax.cpp: softmax over the last axis, stable and naive (chapter 03; used from chapter 01 on).
// Every softmax of the course runs through softmax_rows, one contiguous row at a time: a raw
// loop is both the clearest code and the fastest here (docs/xtensor-for-numpy-users.md, "Why the
// library loops over rows").
#include "attn/ops/softmax.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "attn/core/check.hpp"

namespace attn {

namespace {

template <class Real>
constexpr Real kNegInf = -std::numeric_limits<Real>::infinity();

// The last axis is the one softmax normalises; an empty one has no distribution at all.
template <std::size_t N, class Real>
std::size_t last_axis_or_throw(const xt::xtensor<Real, N>& x, const char* function) {
  static_assert(N >= 1, "softmax needs at least one axis");
  const std::size_t cols = x.shape()[N - 1];
  if (cols == 0) shape_error(function, "a non-empty last axis", "shape " + shape_str(x.shape()));
  return cols;
}

// The largest value of a row, or NaN if the row holds a NaN. NaN never wins a `>` comparison,
// so we look for it explicitly: otherwise a row like [-inf, NaN] would have maximum -inf and be
// turned into zeros, hiding the NaN. NaN in, NaN out.
template <class Real>
Real row_max(const Real* row, std::size_t cols) {
  Real m = row[0];
  for (std::size_t j = 0; j < cols; ++j) {
    if (std::isnan(row[j])) return row[j];
    if (row[j] > m) m = row[j];
  }
  return m;
}

// The kernels on float or double (the float64 twins of chapter 08's gradient checks): the same
// steps, every float of the float version a Real.
template <class Real>
void softmax_rows_of(Real* data, std::size_t rows, std::size_t cols) {
  if (rows == 0) return;
  require(cols > 0, "attn::softmax_rows", "rows must not be empty (cols = 0)");
  for (std::size_t r = 0; r < rows; ++r) {
    Real* row = data + r * cols;  // (cols,)
    // 1. m = max_j z_j. Subtracting it cancels in the ratio, but makes every exponent <= 0, so
    //    exp(z_j - m) lies in [0, 1]: no overflow, and the largest term is exactly 1, so the
    //    sum is >= 1 and never underflows to 0 either.
    const Real m = row_max(row, cols);
    // 2. A row with every entry -inf (every key masked) has no distribution. We define its
    //    result as zeros; the formula would give exp(-inf - -inf) = exp(NaN) = NaN.
    if (m == kNegInf<Real>) {
      for (std::size_t j = 0; j < cols; ++j) row[j] = Real(0);
      continue;
    }
    // 3. Exponentiate the shifted scores and sum them. -inf entries become exactly 0.
    Real sum = Real(0);
    for (std::size_t j = 0; j < cols; ++j) {
      row[j] = std::exp(row[j] - m);
      sum += row[j];
    }
    // 4. Normalise so the row sums to 1.
    const Real inv = Real(1) / sum;
    for (std::size_t j = 0; j < cols; ++j) row[j] *= inv;
  }
}

template <std::size_t N, class Real>
xt::xtensor<Real, N> softmax_of(const xt::xtensor<Real, N>& x) {
  const std::size_t cols = last_axis_or_throw(x, "attn::softmax");
  xt::xtensor<Real, N> out = x;  // same shape; xtensor containers are row-major: rows contiguous
  softmax_rows_of(out.data(), out.size() / cols, cols);
  return out;
}

}  // namespace

void softmax_rows(float* data, std::size_t rows, std::size_t cols) {
  softmax_rows_of(data, rows, cols);
}
template <std::same_as<double> Real>
void softmax_rows(Real* data, std::size_t rows, std::size_t cols) {
  softmax_rows_of(data, rows, cols);
}

template <std::size_t N>
Tensor<N> softmax(const Tensor<N>& x) {
  return softmax_of<N>(x);
}
template <std::size_t N, std::same_as<double> Real>
xt::xtensor<Real, N> softmax(const xt::xtensor<Real, N>& x) {
  return softmax_of<N>(x);
}

template <std::size_t N>
Tensor<N> softmax_naive(const Tensor<N>& x) {
  const std::size_t cols = last_axis_or_throw(x, "attn::softmax_naive");
  Tensor<N> out = x;
  const std::size_t rows = out.size() / cols;
  for (std::size_t r = 0; r < rows; ++r) {
    float* row = out.data() + r * cols;
    // 1. exp(z_j) straight away: exp(89) is already above the float maximum (3.4e38) -> inf.
    float sum = 0.0f;
    for (std::size_t j = 0; j < cols; ++j) {
      row[j] = std::exp(row[j]);
      sum += row[j];
    }
    // 2. Divide by the sum: inf / inf = NaN. That is the failure chapter 03 shows.
    for (std::size_t j = 0; j < cols; ++j) row[j] /= sum;
  }
  return out;
}

template <std::size_t N>
Tensor<N> log_softmax(const Tensor<N>& x) {
  const std::size_t cols = last_axis_or_throw(x, "attn::log_softmax");
  Tensor<N> out = x;
  const std::size_t rows = out.size() / cols;
  for (std::size_t r = 0; r < rows; ++r) {
    float* row = out.data() + r * cols;
    // 1. m = row max, for the same reason as in softmax.
    const float m = row_max(row, cols);
    // 2. Every entry -inf: softmax gives zeros, and log(0) = -inf, so the row stays -inf.
    if (m == kNegInf<float>) continue;
    // 3. log softmax(z)_j = z_j - m - log(sum_k exp(z_k - m)). Taking the log of the sum (>= 1)
    //    instead of the log of each probability means a tiny probability is still a finite
    //    log-probability (-120, say) instead of log(0) = -inf.
    float sum = 0.0f;
    for (std::size_t j = 0; j < cols; ++j) sum += std::exp(row[j] - m);
    //    Subtract m first: (z_j - m) is exact-ish and small, where m + log(sum) would round
    //    away the fraction for large logits such as 1000.
    const float log_sum = std::log(sum);
    for (std::size_t j = 0; j < cols; ++j) row[j] = (row[j] - m) - log_sum;
  }
  return out;
}

// ---- Backward (chapter 08) ----

namespace {

template <class Real>
void softmax_rows_backward_of(const Real* y, const Real* dy, Real* dx, std::size_t rows,
                              std::size_t cols) {
  for (std::size_t r = 0; r < rows; ++r) {
    const Real* yr = y + r * cols;    // (cols,) the forward's output
    const Real* dyr = dy + r * cols;  // (cols,) dL/dy
    Real* dxr = dx + r * cols;        // (cols,) dL/dx, may be dyr itself
    // 1. The Jacobian of softmax is dy_i/dx_j = y_i ([i == j] - y_j), so
    //      dx_j = sum_i dy_i y_i ([i == j] - y_j) = y_j (dy_j - sum_i dy_i y_i).
    //    The (cols, cols) Jacobian is never formed: one dot product per row. In double, so a
    //    long row's sum does not depend on the order of its float additions.
    double dot = 0.0;
    for (std::size_t j = 0; j < cols; ++j)
      dot += static_cast<double>(dyr[j]) * static_cast<double>(yr[j]);
    // 2. dx_j = y_j (dy_j - dot). A masked entry (y_j = 0) gets exactly 0.
    for (std::size_t j = 0; j < cols; ++j)
      dxr[j] = static_cast<Real>(static_cast<double>(yr[j]) * (static_cast<double>(dyr[j]) - dot));
  }
}

template <std::size_t N, class Real>
xt::xtensor<Real, N> softmax_backward_of(const xt::xtensor<Real, N>& y,
                                         const xt::xtensor<Real, N>& dy) {
  if (y.shape() != dy.shape()) {
    shape_error("attn::softmax_backward", "dy of the same shape as y " + shape_str(y.shape()),
                "dy " + shape_str(dy.shape()));
  }
  xt::xtensor<Real, N> dx(y.shape());
  const std::size_t cols = y.shape()[N - 1];
  if (dx.size() == 0) return dx;
  softmax_rows_backward_of(y.data(), dy.data(), dx.data(), dx.size() / cols, cols);
  return dx;
}

}  // namespace

void softmax_rows_backward(const float* y, const float* dy, float* dx, std::size_t rows,
                           std::size_t cols) {
  softmax_rows_backward_of(y, dy, dx, rows, cols);
}
template <std::same_as<double> Real>
void softmax_rows_backward(const Real* y, const Real* dy, Real* dx, std::size_t rows,
                           std::size_t cols) {
  softmax_rows_backward_of(y, dy, dx, rows, cols);
}

template <std::size_t N>
Tensor<N> softmax_backward(const Tensor<N>& y, const Tensor<N>& dy) {
  return softmax_backward_of<N>(y, dy);
}
template <std::size_t N, std::same_as<double> Real>
xt::xtensor<Real, N> softmax_backward(const xt::xtensor<Real, N>& y,
                                      const xt::xtensor<Real, N>& dy) {
  return softmax_backward_of<N>(y, dy);
}

template Tensor<1> softmax_backward<1>(const Tensor<1>&, const Tensor<1>&);
template Tensor<2> softmax_backward<2>(const Tensor<2>&, const Tensor<2>&);
template Tensor<3> softmax_backward<3>(const Tensor<3>&, const Tensor<3>&);
template Tensor<4> softmax_backward<4>(const Tensor<4>&, const Tensor<4>&);

template Tensor<1> softmax<1>(const Tensor<1>&);
template Tensor<2> softmax<2>(const Tensor<2>&);
template Tensor<3> softmax<3>(const Tensor<3>&);
template Tensor<4> softmax<4>(const Tensor<4>&);
template Tensor<1> softmax_naive<1>(const Tensor<1>&);
template Tensor<2> softmax_naive<2>(const Tensor<2>&);
template Tensor<1> log_softmax<1>(const Tensor<1>&);
template Tensor<2> log_softmax<2>(const Tensor<2>&);
template void softmax_rows<double>(double*, std::size_t, std::size_t);
template void softmax_rows_backward<double>(const double*, const double*, double*, std::size_t,
                                            std::size_t);
template Tensor64<2> softmax<2, double>(const Tensor64<2>&);
template Tensor64<4> softmax<4, double>(const Tensor64<4>&);
template Tensor64<2> softmax_backward<2, double>(const Tensor64<2>&, const Tensor64<2>&);
template Tensor64<4> softmax_backward<4, double>(const Tensor64<4>&, const Tensor64<4>&);

}  // namespace attn
