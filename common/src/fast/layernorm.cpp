// fast/layernorm.cpp: LayerNorm forward and backward on the model's fast path (chapters 06-10).
// The math is the reference's (ops/layernorm.cpp, page 06 and 08); here it is written for speed:
// row sums in four interleaved double lanes, SIMD clones, fixed chunks of rows over the threads,
// no allocation in a training loop. Tested equal to the reference.
#include "attn/fast/layernorm.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attn/core/check.hpp"
#include "../ops/layernorm_checks.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/simd.hpp"

namespace attn::fast {

namespace {

// Tokens per chunk when a LayerNorm is split over the threads (fixed, so results do not depend
// on the thread count): 256 rows of C = 512 are ~0.1 ms of work, well above a thread's start.
constexpr std::size_t kLnRows = 256;
// Partial sums kept side by side in the row loops: four doubles fill one AVX2 register.
constexpr std::size_t kLanes = 4;

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

// One token: y = (x - mean) * rstd * gamma + beta over its C features, through raw pointers
// (lazy xtensor reducers with keep_dims give wrong numbers in xtensor 0.24, see
// docs/xtensor-for-numpy-users.md, pitfall 1; and a plain loop is also the fastest). Gives the
// row's mean and rstd for the backward.
ATTN_SIMD_CLONES void normalise_row(const float* in, std::size_t C, const float* g, const float* b,
                                    float eps, float* out, double& mean, double& rstd) {
  const double inv_C = 1.0 / static_cast<double>(C);
  // 1. mean = (1/C) sum_j x_j.
  mean = sum_double(in, C) * inv_C;
  // 2. var = (1/C) sum_j (x_j - mean)^2: the biased variance (divide by C, not C - 1), like
  //    PyTorch. Two passes (mean first, then deviations) instead of E[x^2] - E[x]^2: for a
  //    token near 1e4 with spread 0.01, E[x^2] = 1e8 and the variance 1e-4 would be lost in
  //    the rounding of the difference.
  const double var = sum_squared_deviations(in, C, mean) * inv_C;
  // 3. rstd = 1 / sqrt(var + eps). eps (1e-5) keeps a (nearly) constant token from dividing
  //    by zero: a constant row gives x - mean = 0, so y = beta instead of NaN.
  rstd = 1.0 / std::sqrt(var + static_cast<double>(eps));
  // 4. y_j = (x_j - mean) * rstd * gamma_j + beta_j. The subtraction is done in double: mean
  //    rounded to float could be off by 5e-4 near 1e4, a large error next to a spread of 0.01.
  //    (In chunks of kLanes, read into locals before anything is written: SIMD instructions.)
  std::size_t j = 0;
  for (; j + kLanes <= C; j += kLanes) {
    double v[kLanes];
    for (std::size_t u = 0; u < kLanes; ++u) {
      const double normed = (static_cast<double>(in[j + u]) - mean) * rstd;
      v[u] = normed * static_cast<double>(g[j + u]) + static_cast<double>(b[j + u]);
    }
    for (std::size_t u = 0; u < kLanes; ++u) out[j + u] = static_cast<float>(v[u]);
  }
  for (; j < C; ++j) {
    const double normed = (static_cast<double>(in[j]) - mean) * rstd;
    out[j] = static_cast<float>(normed * static_cast<double>(g[j]) + static_cast<double>(b[j]));
  }
}

}  // namespace

void layer_norm_rows(const float* x, std::size_t rows, std::size_t C, const float* g,
                     const float* b, float eps, float* y) {
  for (std::size_t r = 0; r < rows; ++r) {
    double mean = 0.0, rstd = 0.0;
    normalise_row(x + r * C, C, g, b, eps, y + r * C, mean, rstd);
  }
}

namespace {

// The forward of both public overloads. mean_out / rstd_out: null, or (rows,) buffers that get
// each row's mean and 1/sqrt(var + eps) (the backward's cache).
template <std::size_t N>
void layer_norm_impl(const Tensor<N>& x, const Vector& gamma, const Vector& beta, float eps,
                     float* mean_out, float* rstd_out, Tensor<N>& y) {
  static_assert(N >= 1, "layer_norm needs at least one axis");
  detail::check_layer_norm(x, gamma, beta, eps);
  const std::size_t C = x.shape()[N - 1];

  // y (..., C): row-major, so the C features of a token are contiguous. Resized only when its
  // shape differs (a training loop writes into the same buffer every step).
  if (y.shape() != x.shape()) y.resize(x.shape());
  const std::size_t rows = x.size() / C;
  const float* g = gamma.data();
  const float* b = beta.data();
  // Rows are independent: big inputs are cut into fixed chunks of kLnRows tokens shared by the
  // library's threads (each row is computed the same way on any thread).
  const std::size_t chunks = (rows + kLnRows - 1) / kLnRows;
  auto normalise_rows = [&](std::size_t first, std::size_t last, std::size_t) {
    for (std::size_t r = first * kLnRows; r < std::min(rows, last * kLnRows); ++r) {
      double mean = 0.0, rstd = 0.0;
      normalise_row(x.data() + r * C, C, g, b, eps, y.data() + r * C, mean, rstd);
      if (mean_out != nullptr) {
        mean_out[r] = static_cast<float>(mean);
        rstd_out[r] = static_cast<float>(rstd);
      }
    }
  };
  detail::run_parts(chunks, detail::worker_count(chunks), normalise_rows);
}

// Row r's mean in double, recomputed from x (see layer_norm_backward).
double row_mean(const float* row, std::size_t C) {
  return sum_double(row, C) / static_cast<double>(C);
}

// The backward of rows [r0, r1), with rstd per row given (float) and the mean recomputed in
// double. Overwrites dx; adds this range's sums of dy * xhat and dy to dg, db (double, (C,)).
ATTN_SIMD_CLONES void layer_norm_backward_range(const float* dy, const float* x, const float* gamma,
                                                const float* rstd, std::size_t r0, std::size_t r1,
                                                std::size_t C, float* dx, double* dg, double* db) {
  const double inv_C = 1.0 / static_cast<double>(C);
  for (std::size_t r = r0; r < r1; ++r) {
    const float* in = x + r * C;     // (C,)
    const float* g_in = dy + r * C;  // (C,)
    float* out = dx + r * C;         // (C,)
    // 1. xhat_j = (x_j - mean) rstd, the normalised input, in double like the forward: the mean
    //    is recomputed from x in double (a float mean near 1e4 is off by up to 5e-4, a large error
    //    next to a spread of 0.01); rstd, a ratio, is kept to float precision in the cache.
    const double mean = row_mean(in, C);
    const double rs = static_cast<double>(rstd[r]);
    const auto xhat = [&](std::size_t j) { return (static_cast<double>(in[j]) - mean) * rs; };
    const auto dy_at = [&](std::size_t j) { return static_cast<double>(g_in[j]); };
    const auto g = [&](std::size_t j) { return static_cast<double>(gamma[j]) * dy_at(j); };
    // Every loop below handles kLanes features at a time (the inner u loops), then the last
    // C mod kLanes one by one: the compiler turns each group of kLanes into SIMD instructions.
    const std::size_t C_lanes = C - C % kLanes;
    // 2. g_j = gamma_j dy_j is the gradient reaching xhat. The two row means of the formula:
    //      a = mean_j g_j,   b = mean_j g_j xhat_j
    //    each summed in kLanes interleaved partial sums (lane u takes j = u, u + kLanes, ...)
    //    added up at the end: independent chains that the CPU runs side by side.
    // 3. In the same pass, the parameters: dgamma_j collects dy_j xhat_j and dbeta_j collects
    //    dy_j over the rows.
    double pa[kLanes] = {}, pb[kLanes] = {};
    for (std::size_t j = 0; j < C_lanes; j += kLanes) {
      for (std::size_t u = 0; u < kLanes; ++u) {
        const double xh = xhat(j + u);
        pa[u] += g(j + u);
        pb[u] += g(j + u) * xh;
        dg[j + u] += dy_at(j + u) * xh;
        db[j + u] += dy_at(j + u);
      }
    }
    double a = 0.0, b = 0.0;
    for (std::size_t j = C_lanes; j < C; ++j) {
      a += g(j);
      b += g(j) * xhat(j);
      dg[j] += dy_at(j) * xhat(j);
      db[j] += dy_at(j);
    }
    a = (a + (pa[0] + pa[1]) + (pa[2] + pa[3])) * inv_C;
    b = (b + (pb[0] + pb[1]) + (pb[2] + pb[3])) * inv_C;
    // 4. The three terms: dx_j = rstd (g_j - a - xhat_j b). g_j is the direct path; -a because
    //    every x_j moves the mean; -xhat_j b because every x_j moves the variance. (out may be
    //    g_in: each group is read before it is written.)
    for (std::size_t j = 0; j < C_lanes; j += kLanes) {
      double v[kLanes];
      for (std::size_t u = 0; u < kLanes; ++u) v[u] = rs * (g(j + u) - a - xhat(j + u) * b);
      for (std::size_t u = 0; u < kLanes; ++u) out[j + u] = static_cast<float>(v[u]);
    }
    for (std::size_t j = C_lanes; j < C; ++j)
      out[j] = static_cast<float>(rs * (g(j) - a - xhat(j) * b));
  }
}

// All rows, in fixed chunks of kLnRows over the threads. Each chunk sums its dgamma, dbeta
// terms on its own (double); the chunks' sums are then added in chunk order, so the result does
// not depend on the thread count.
void layer_norm_backward_rows(const float* dy, const float* x, const float* gamma,
                              const float* rstd, std::size_t rows, std::size_t C, float* dx,
                              float* dgamma, float* dbeta, Workspace& ws) {
  const std::size_t chunks = (rows + kLnRows - 1) / kLnRows;
  double* sums = at_least(ws.sums, chunks * 2 * C);  // (chunks, 2C), the caller's
  std::fill(sums, sums + chunks * 2 * C, 0.0);
  detail::run_parts(
      chunks, detail::worker_count(chunks), [&](std::size_t first, std::size_t last, std::size_t) {
        for (std::size_t k = first; k < last; ++k) {
          double* part = sums + k * 2 * C;
          layer_norm_backward_range(dy, x, gamma, rstd, k * kLnRows,
                                    std::min(rows, (k + 1) * kLnRows), C, dx, part, part + C);
        }
      });
  for (std::size_t j = 0; j < C; ++j) {
    double dg = 0.0, db = 0.0;
    for (std::size_t k = 0; k < chunks; ++k) {
      dg += sums[k * 2 * C + j];
      db += sums[k * 2 * C + C + j];
    }
    dgamma[j] = static_cast<float>(static_cast<double>(dgamma[j]) + dg);
    dbeta[j] = static_cast<float>(static_cast<double>(dbeta[j]) + db);
  }
}

}  // namespace

template <std::size_t N>
Tensor<N> layer_norm(const Tensor<N>& x, const Vector& gamma, const Vector& beta, float eps) {
  Tensor<N> y;
  layer_norm_impl(x, gamma, beta, eps, nullptr, nullptr, y);
  return y;
}

template <std::size_t N>
void layer_norm(const Tensor<N>& x, const Vector& gamma, const Vector& beta, float eps,
                LayerNormCache& cache, Tensor<N>& out) {
  require(&out != &x, "attn::layer_norm", "out must not be x");
  const std::size_t C = x.shape()[N - 1];
  const std::size_t rows = C == 0 ? 0 : x.size() / C;
  if (cache.mean.size() != rows) cache.mean.resize({rows});
  if (cache.rstd.size() != rows) cache.rstd.resize({rows});
  layer_norm_impl(x, gamma, beta, eps, cache.mean.data(), cache.rstd.data(), out);
}

template <std::size_t N>
void layer_norm_backward(const Tensor<N>& dy, const Tensor<N>& x, const Vector& gamma,
                         const LayerNormCache& cache, Tensor<N>& dx, Vector& dgamma, Vector& dbeta,
                         Workspace& ws) {
  detail::check_layer_norm_backward(dy, x, gamma, cache.rstd, dgamma, dbeta);
  const std::size_t C = x.shape()[N - 1];
  const std::size_t rows = x.size() / C;
  if (dx.shape() != x.shape()) dx.resize(x.shape());
  layer_norm_backward_rows(dy.data(), x.data(), gamma.data(), cache.rstd.data(), rows, C, dx.data(),
                           dgamma.data(), dbeta.data(), ws);
}

template <std::size_t N>
void layer_norm_backward(const Tensor<N>& dy, const Tensor<N>& x, const Vector& gamma,
                         const LayerNormCache& cache, Tensor<N>& dx, Vector& dgamma,
                         Vector& dbeta) {
  Workspace ws;
  layer_norm_backward(dy, x, gamma, cache, dx, dgamma, dbeta, ws);
}

template Tensor<2> layer_norm<2>(const Tensor<2>&, const Vector&, const Vector&, float);
template Tensor<3> layer_norm<3>(const Tensor<3>&, const Vector&, const Vector&, float);
template void layer_norm<2>(const Tensor<2>&, const Vector&, const Vector&, float, LayerNormCache&,
                            Tensor<2>&);
template void layer_norm<3>(const Tensor<3>&, const Vector&, const Vector&, float, LayerNormCache&,
                            Tensor<3>&);
template void layer_norm_backward<2>(const Tensor<2>&, const Tensor<2>&, const Vector&,
                                     const LayerNormCache&, Tensor<2>&, Vector&, Vector&);
template void layer_norm_backward<3>(const Tensor<3>&, const Tensor<3>&, const Vector&,
                                     const LayerNormCache&, Tensor<3>&, Vector&, Vector&);
template void layer_norm_backward<2>(const Tensor<2>&, const Tensor<2>&, const Vector&,
                                     const LayerNormCache&, Tensor<2>&, Vector&, Vector&,
                                     Workspace&);
template void layer_norm_backward<3>(const Tensor<3>&, const Tensor<3>&, const Vector&,
                                     const LayerNormCache&, Tensor<3>&, Vector&, Vector&,
                                     Workspace&);

}  // namespace attn::fast
