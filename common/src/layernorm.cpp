// layernorm.cpp: layer normalisation over the last axis (chapter 06), as in PyTorch's
// nn.LayerNorm. The transformer block (block.cpp) applies it before (pre-norm) or after
// (post-norm) each sub-layer, so the activations keep a unit scale however many blocks we stack.
#include "attn/layernorm.hpp"

#include <cmath>
#include <string>

#include "attn/check.hpp"

namespace attn {

namespace {

// sum_j row[j], accumulated in double. Four partial sums instead of one: the additions of one
// chain wait for each other, four independent chains keep the FPU busy. Double, because a float
// sum of 512 values near 1e4 reaches 5e6, where one float step is 0.5: the mean of such a row
// drifts by up to ~1.5e-3 (measured), 15% of the spread of a 1e4 + N(0, 0.01^2) token.
double sum_double(const float* row, std::size_t C) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  std::size_t j = 0;
  for (; j + 4 <= C; j += 4) {
    s0 += static_cast<double>(row[j]);
    s1 += static_cast<double>(row[j + 1]);
    s2 += static_cast<double>(row[j + 2]);
    s3 += static_cast<double>(row[j + 3]);
  }
  for (; j < C; ++j) s0 += static_cast<double>(row[j]);
  return (s0 + s1) + (s2 + s3);
}

// sum_j (row[j] - mean)^2 in double, the second pass of the two-pass variance.
double sum_squared_deviations(const float* row, std::size_t C, double mean) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  std::size_t j = 0;
  for (; j + 4 <= C; j += 4) {
    const double d0 = static_cast<double>(row[j]) - mean;
    const double d1 = static_cast<double>(row[j + 1]) - mean;
    const double d2 = static_cast<double>(row[j + 2]) - mean;
    const double d3 = static_cast<double>(row[j + 3]) - mean;
    s0 += d0 * d0;
    s1 += d1 * d1;
    s2 += d2 * d2;
    s3 += d3 * d3;
  }
  for (; j < C; ++j) {
    const double d = static_cast<double>(row[j]) - mean;
    s0 += d * d;
  }
  return (s0 + s1) + (s2 + s3);
}

}  // namespace

void layer_norm_rows(const float* x, std::size_t rows, std::size_t C, const float* g,
                     const float* b, float eps, float* y) {
  const double inv_C = 1.0 / static_cast<double>(C);
  // One token (row of C features) at a time, through raw pointers: lazy xtensor reducers with
  // keep_dims are wrong in xtensor 0.24 (XTENSOR_NOTES.md, section 1), and a plain loop is
  // also the fastest.
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = x + r * C;  // (C,)
    float* out = y + r * C;       // (C,)
    // 1. mean = (1/C) sum_j x_j.
    const double mean = sum_double(in, C) * inv_C;
    // 2. var = (1/C) sum_j (x_j - mean)^2: the biased variance (divide by C, not C - 1), like
    //    PyTorch. Two passes (mean first, then deviations) instead of E[x^2] - E[x]^2: for a
    //    token near 1e4 with spread 0.01, E[x^2] = 1e8 and the variance 1e-4 would be lost in
    //    the rounding of the difference.
    const double var = sum_squared_deviations(in, C, mean) * inv_C;
    // 3. rstd = 1 / sqrt(var + eps). eps (1e-5) keeps a (nearly) constant token from dividing
    //    by zero: a constant row gives x - mean = 0, so y = beta instead of NaN.
    const double rstd = 1.0 / std::sqrt(var + static_cast<double>(eps));
    // 4. y_j = (x_j - mean) * rstd * gamma_j + beta_j. The subtraction is done in double: mean
    //    rounded to float could be off by 5e-4 near 1e4, a large error next to a spread of 0.01.
    for (std::size_t j = 0; j < C; ++j) {
      const double normed = (static_cast<double>(in[j]) - mean) * rstd;
      out[j] = static_cast<float>(normed * static_cast<double>(g[j]) + static_cast<double>(b[j]));
    }
  }
}

template <std::size_t N>
Tensor<N> layer_norm(const Tensor<N>& x, const Vector& gamma, const Vector& beta, float eps) {
  static_assert(N >= 1, "layer_norm needs at least one axis");
  const std::size_t C = x.shape()[N - 1];
  if (C == 0 || gamma.size() != C || beta.size() != C) {
    shape_error("attn::layer_norm", "x (..., C) with C > 0, gamma (C,) and beta (C,)",
                "x " + shape_str(x.shape()) + ", gamma " + shape_str(gamma.shape()) + ", beta " +
                    shape_str(beta.shape()));
  }
  require(eps >= 0.0f, "attn::layer_norm", "eps must be >= 0, got " + std::to_string(eps));

  Tensor<N> y(x.shape());  // (..., C): row-major, so the C features of a token are contiguous
  layer_norm_rows(x.data(), x.size() / C, C, gamma.data(), beta.data(), eps, y.data());
  return y;
}

template Tensor<2> layer_norm<2>(const Tensor<2>&, const Vector&, const Vector&, float);
template Tensor<3> layer_norm<3>(const Tensor<3>&, const Vector&, const Vector&, float);

}  // namespace attn
