// ffn.cpp (fast side): the position-wise feed-forward network and its activations as the
// model runs them (chapters 06-09). The reference, in plain loops and double-precision formulas,
// is common/src/ops/ffn.cpp; tests/common/test_fast_ops.cpp proves the two agree.
//   FFN(x) = act(x @ w1 + b1) @ w2 + b2: two GEMMs around an element-wise activation, applied
// to every token on its own. In the benchmark block (B*T = 4096 tokens, F = 2048) the
// activation runs on 8.4M values per forward, so GELU gets a vectorised kernel, and the tokens
// go through in chunks that keep the hidden values in cache, spread over the library's threads.
#include "attn/fast/ffn.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/fast/linear.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/simd.hpp"
#include "vec8.hpp"

namespace attn::fast {

namespace {

// ---- The activation kernels: vec8.hpp's 8-float vectors (why: see there) ---------------------
using namespace detail8;  // f32x8, splat, abs8, exp8, ATTN_KERNEL

// x with +-inf replaced by +-1e30, for the products x * h below (inf * 0 would be NaN). A NaN
// lane becomes -1e30 here, so the callers use it only where x itself also enters the result.
ATTN_KERNEL f32x8 clamp_inf(f32x8 x) {
  x = x > -1e30f ? x : splat(-1e30f);
  return x < 1e30f ? x : splat(1e30f);
}

// Both GELUs are x * P(x) with P a smooth step from 0 to 1 and P(-x) = 1 - P(x). With
// h = P(-|x|) in [0, 1/2]:
//   x < 0:  GELU(x) = x h       h is small there and computed to a small relative error, so
//                               there is no cancellation as in 1 + erf(x / sqrt 2) -> 0;
//   x >= 0: GELU(x) = x - x h   which rounds better than x (1 - h).
ATTN_KERNEL f32x8 gelu_from_tail(f32x8 x, f32x8 h) {
  const f32x8 xh = clamp_inf(x) * h;
  return x < 0.0f ? xh : x - xh;
}

// Exact GELU: P = Phi, the standard normal CDF, and h = Phi(-|x|) = erfc(|x| / sqrt 2) / 2.
// erfc(z), z >= 0, from Numerical Recipes (Press et al., 2nd ed., section 6.2, erfcc):
//   erfc(z) = t exp(-z^2 - 1.26551223 + t (1.00002368 + ... + t 0.17087277)),  t = 1 / (1 + z/2)
// with a fractional error below 1.2e-7 for every z. Measured against 0.5 x erfc(-x / sqrt 2) in
// double on [-20, 20] (step 1e-4): max absolute error 2.4e-7 at x = 4.16 (half a float step
// there), 1.4e-7 on [-3, 3]; tested in test_fast_ops.cpp. Speed on the course's 2-core test
// machine, 8.4M values on one thread: 20.5 ms with AVX2 (61.5 ms at 4 lanes on SSE2, ~84 ms for a
// std::erf loop); PyTorch's F.gelu took 43 ms there.
ATTN_KERNEL f32x8 gelu8(f32x8 x) {
  const f32x8 z = abs8(x) * 0.70710678118654752f;  // |x| / sqrt 2
  const f32x8 t = 1.0f / (1.0f + 0.5f * z);
  const f32x8 poly =
      -1.26551223f +
      t * (1.00002368f +
           t * (0.37409196f +
                t * (0.09678418f +
                     t * (-0.18628806f +
                          t * (0.27886807f +
                               t * (-1.13520398f +
                                    t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
  const f32x8 h = 0.5f * (t * exp8(-z * z + poly));  // Phi(-|x|) = erfc(z) / 2
  return gelu_from_tail(x, h);
}

// GELU, tanh approximation: P(x) = (1 + tanh(u)) / 2 with u = sqrt(2/pi) (x + 0.044715 x^3).
// (1 + tanh(u)) / 2 is the logistic sigmoid of 2u, so h = P(-|x|) = e / (1 + e), e = e^(-2|u|)
// (u has the sign of x, and e <= 1 never overflows).
ATTN_KERNEL f32x8 gelu_tanh8(f32x8 x) {
  const f32x8 xc = clamp_inf(x);  // x^3 of a huge x is inf, harmless; of inf, also fine
  const f32x8 u = 0.7978845608028654f * (xc + 0.044715f * xc * xc * xc);
  const f32x8 e = exp8(-2.0f * abs8(u));
  return gelu_from_tail(x, e / (1.0f + e));
}

// ReLU: max(0, x), NaN stays NaN.
ATTN_KERNEL f32x8 relu8(f32x8 x) { return x < 0.0f ? splat(0.0f) : x; }

// out[0, n) = kernel(in[0, n)), 8 values at a time; the last 1-7 values go through the same
// kernel padded with zeros. out may be in (in place). One function per kernel, each compiled for
// SSE2 and AVX2.
#define ATTN_APPLY8(NAME, KERNEL)                                          \
  ATTN_SIMD_CLONES void NAME(const float* in, float* out, std::size_t n) { \
    std::size_t i = 0;                                                     \
    for (; i + 8 <= n; i += 8) {                                           \
      f32x8 x;                                                             \
      std::memcpy(&x, in + i, sizeof x); /* unaligned load */              \
      x = KERNEL(x);                                                       \
      std::memcpy(out + i, &x, sizeof x);                                  \
    }                                                                      \
    if (i < n) {                                                           \
      f32x8 x = splat(0.0f);                                               \
      std::memcpy(&x, in + i, (n - i) * sizeof(float));                    \
      x = KERNEL(x);                                                       \
      std::memcpy(out + i, &x, (n - i) * sizeof(float));                   \
    }                                                                      \
  }
ATTN_APPLY8(apply_relu, relu8)
ATTN_APPLY8(apply_gelu, gelu8)
ATTN_APPLY8(apply_gelu_tanh, gelu_tanh8)
#undef ATTN_APPLY8

// ---- Their derivatives (chapter 08) -----------------------------------------------------------
// dx = dy * act'(x), same 8-lane style. x is clamped to [-100, 100] in the tail terms x * p(x)
// (p a Gaussian or logistic density, exactly 0 beyond |x| ~ 14): without the clamp x^3 of a huge
// x would be inf and inf * 0 NaN. A NaN x gives a NaN gradient.
ATTN_KERNEL f32x8 clamp100(f32x8 x) {
  x = x > -100.0f ? x : splat(-100.0f);
  return x < 100.0f ? x : splat(100.0f);
}
ATTN_KERNEL f32x8 keep_nan(f32x8 x, f32x8 d) { return x == x ? d : x; }

// ReLU' = [x > 0] (0 at x = 0, like PyTorch).
ATTN_KERNEL f32x8 relu_grad8(f32x8 x, f32x8 dy) { return keep_nan(x, x > 0.0f ? dy : splat(0.0f)); }

// GELU'(x) = Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi). Phi from the same erfc as
// the forward (h = Phi(-|x|), Phi(x) = h for x < 0, 1 - h otherwise).
ATTN_KERNEL f32x8 gelu_grad8(f32x8 x, f32x8 dy) {
  const f32x8 z = abs8(x) * 0.70710678118654752f;  // |x| / sqrt 2
  const f32x8 t = 1.0f / (1.0f + 0.5f * z);
  const f32x8 poly =
      -1.26551223f +
      t * (1.00002368f +
           t * (0.37409196f +
                t * (0.09678418f +
                     t * (-0.18628806f +
                          t * (0.27886807f +
                               t * (-1.13520398f +
                                    t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
  const f32x8 h = 0.5f * (t * exp8(-z * z + poly));  // Phi(-|x|)
  const f32x8 cdf = x < 0.0f ? h : 1.0f - h;         // Phi(x)
  const f32x8 xc = clamp100(x);
  const f32x8 pdf = 0.3989422804014327f * exp8(-0.5f * xc * xc);  // phi(x)
  return keep_nan(x, dy * (cdf + xc * pdf));
}

// tanh GELU: with s = sigmoid(2u) = (1 + tanh u) / 2 and u = sqrt(2/pi) (x + 0.044715 x^3),
//   d/dx [x s] = s + x s (1 - s) 2 u',   u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
// using 1 - tanh^2 u = 4 s (1 - s). With h = sigmoid(-2|u|) as in the forward, s = h or 1 - h
// and s (1 - s) = h (1 - h) either way: no cancellation for large |u|.
ATTN_KERNEL f32x8 gelu_tanh_grad8(f32x8 x, f32x8 dy) {
  const f32x8 xc = clamp100(x);
  const f32x8 u = 0.7978845608028654f * (xc + 0.044715f * xc * xc * xc);
  const f32x8 e = exp8(-2.0f * abs8(u));
  const f32x8 h = e / (1.0f + e);
  const f32x8 s = x < 0.0f ? h : 1.0f - h;
  const f32x8 du = 0.7978845608028654f * (1.0f + 0.134145f * xc * xc);
  return keep_nan(x, dy * (s + xc * (h * (1.0f - h)) * (2.0f * du)));
}

// dx[0, n) = kernel(x, dy), 8 at a time, the tail padded with zeros.
#define ATTN_APPLY8_GRAD(NAME, KERNEL)                                                    \
  ATTN_SIMD_CLONES void NAME(const float* x, const float* dy, float* dx, std::size_t n) { \
    std::size_t i = 0;                                                                    \
    for (; i + 8 <= n; i += 8) {                                                          \
      f32x8 a, g;                                                                         \
      std::memcpy(&a, x + i, sizeof a);                                                   \
      std::memcpy(&g, dy + i, sizeof g);                                                  \
      a = KERNEL(a, g);                                                                   \
      std::memcpy(dx + i, &a, sizeof a);                                                  \
    }                                                                                     \
    if (i < n) {                                                                          \
      f32x8 a = splat(0.0f), g = splat(0.0f);                                             \
      std::memcpy(&a, x + i, (n - i) * sizeof(float));                                    \
      std::memcpy(&g, dy + i, (n - i) * sizeof(float));                                   \
      a = KERNEL(a, g);                                                                   \
      std::memcpy(dx + i, &a, (n - i) * sizeof(float));                                   \
    }                                                                                     \
  }
ATTN_APPLY8_GRAD(apply_relu_grad, relu_grad8)
ATTN_APPLY8_GRAD(apply_gelu_grad, gelu_grad8)
ATTN_APPLY8_GRAD(apply_gelu_tanh_grad, gelu_tanh_grad8)
#undef ATTN_APPLY8_GRAD
#undef ATTN_KERNEL

// "w2 is (32, 7), expected (32, 8)" when a weight does not have its shape.
template <std::size_t R>
void check_shape(std::string_view function, std::string_view name, const Tensor<R>& t,
                 const std::array<std::size_t, R>& want) {
  if (t.shape() != want) {
    require(false, function, [&] {
      return std::string(name) + " is " + shape_str(t.shape()) + ", expected " + shape_str(want);
    });
  }
}

// Tokens per chunk of ffn_forward. Measured on the (32, 128, 512, 8) benchmark block: 128 rows
// keep the single-threaded GEMMs near full speed while the (128, F) hidden chunk (1 MB at
// F = 2048) stays in the cache.
constexpr std::size_t kFfnRows = 128;
constexpr std::size_t kMaxBlasSize = static_cast<std::size_t>(INT_MAX);

}  // namespace

namespace {

// out[0, n) = act(in[0, n)); out may be in.
void activate_into(const float* in, float* out, std::size_t n, Activation a) {
  switch (a) {
    case Activation::relu:
      return apply_relu(in, out, n);
    case Activation::gelu:
      return apply_gelu(in, out, n);
    case Activation::gelu_tanh:
      return apply_gelu_tanh(in, out, n);
  }
  throw std::invalid_argument("attn::fast::activate: unknown activation");
}

}  // namespace

void activate(std::span<float> values, Activation a) {
  activate_into(values.data(), values.data(), values.size(), a);
}

Tensor<3> ffn_forward(const Tensor<3>& x, const FfnWeights& w, Activation a) {
  const std::size_t C = x.shape()[2];
  const std::size_t F = w.w1.shape()[1];
  check_shape<2>("attn::fast::ffn_forward", "w1", w.w1, {C, F});
  check_shape<1>("attn::fast::ffn_forward", "b1", w.b1, {F});
  check_shape<2>("attn::fast::ffn_forward", "w2", w.w2, {F, C});
  check_shape<1>("attn::fast::ffn_forward", "b2", w.b2, {C});
  const std::size_t rows = x.shape()[0] * x.shape()[1];  // B*T tokens
  Tensor<3> y(x.shape());                                // (B, T, C)
  if (y.size() == 0) return y;
  // Nothing may throw inside the worker threads: check what gemm and activate would.
  require(C <= kMaxBlasSize && F <= kMaxBlasSize, "attn::fast::ffn_forward", [&] {
    return "C = " + std::to_string(C) + ", F = " + std::to_string(F) + " too large for BLAS (int)";
  });
  require(a == Activation::relu || a == Activation::gelu || a == Activation::gelu_tanh,
          "attn::fast::ffn_forward", "unknown activation");
  // Each token goes through the FFN on its own, so the B*T tokens are processed kFfnRows at a
  // time: the chunk's hidden activations (kFfnRows, F) stay in cache between the two GEMMs and
  // the activation, instead of a (B, T, F) tensor (32 MB in the benchmark) that goes to memory
  // and back three times. Chunks are independent, so they are also split over the threads
  // (parallel.hpp); the thread count does not change a bit of the result (test_fast_ops.cpp).
  const std::size_t chunks = (rows + kFfnRows - 1) / kFfnRows;
  const std::size_t n_threads = detail::worker_count(chunks);
  std::vector<float> hidden(n_threads * std::min(rows, kFfnRows) * F);  // one chunk per thread
  detail::run_parts(chunks, n_threads, [&](std::size_t begin, std::size_t end, std::size_t part) {
    float* h = hidden.data() + part * std::min(rows, kFfnRows) * F;  // (n, F)
    for (std::size_t chunk = begin; chunk < end; ++chunk) {
      const std::size_t r0 = chunk * kFfnRows;
      const std::size_t n = std::min(kFfnRows, rows - r0);  // tokens in this chunk
      const float* xc = x.data() + r0 * C;                  // (n, C)
      float* yc = y.data() + r0 * C;                        // (n, C)
      // 1. Expand: every token to F (usually 4C) features. The bias goes in first and the GEMM
      //    adds the product to it (beta = 1), like fast::linear.
      //    (n, C) @ (C, F) + (F,) -> (n, F)
      for (std::size_t r = 0; r < n; ++r) std::copy(w.b1.begin(), w.b1.end(), h + r * F);
      gemm(n, F, C, 1.0f, xc, false, w.w1.data(), false, 1.0f, h);
      // 2. The non-linearity, in place. Without it the two products would collapse into a
      //    single (C, C) matrix and the FFN could only compute linear maps.
      fast::activate(std::span<float>(h, n * F), a);
      // 3. Project back to the model width.
      //    (n, F) @ (F, C) + (C,) -> (n, C)
      for (std::size_t r = 0; r < n; ++r) std::copy(w.b2.begin(), w.b2.end(), yc + r * C);
      gemm(n, C, F, 1.0f, h, false, w.w2.data(), false, 1.0f, yc);
    }
  });
  return y;
}

// ---- Backward (chapter 08) ----

void activate_backward(std::span<const float> x, std::span<const float> dy, std::span<float> dx,
                       Activation a) {
  require(x.size() == dy.size() && x.size() == dx.size(), "attn::fast::activate_backward", [&] {
    return "x, dy and dx must have the same size, got " + std::to_string(x.size()) + ", " +
           std::to_string(dy.size()) + " and " + std::to_string(dx.size());
  });
  switch (a) {
    case Activation::relu:
      return apply_relu_grad(x.data(), dy.data(), dx.data(), x.size());
    case Activation::gelu:
      return apply_gelu_grad(x.data(), dy.data(), dx.data(), x.size());
    case Activation::gelu_tanh:
      return apply_gelu_tanh_grad(x.data(), dy.data(), dx.data(), x.size());
  }
  throw std::invalid_argument("attn::fast::activate_backward: unknown activation");
}

namespace {

// t takes `shape`, reallocating only when the shape changes (caches reused between steps).
void ensure_shape(Tensor<3>& t, const std::array<std::size_t, 3>& shape) {
  if (!std::equal(shape.begin(), shape.end(), t.shape().begin())) t.resize(shape);
}

void check_ffn(const char* fn, const Tensor<3>& x, const FfnWeights& w) {
  const std::size_t C = x.shape()[2];
  const std::size_t F = w.w1.shape()[1];
  check_shape<2>(fn, "w1", w.w1, {C, F});
  check_shape<1>(fn, "b1", w.b1, {F});
  check_shape<2>(fn, "w2", w.w2, {F, C});
  check_shape<1>(fn, "b2", w.b2, {C});
  require(C <= kMaxBlasSize && F <= kMaxBlasSize, fn, [&] {
    return "C = " + std::to_string(C) + ", F = " + std::to_string(F) + " too large for BLAS (int)";
  });
}

}  // namespace

Tensor<3> ffn_forward(const Tensor<3>& x, const FfnWeights& w, Activation a, FfnCache& cache) {
  Tensor<3> y;
  fast::ffn_forward(x, w, a, cache, y);
  return y;
}

void ffn_forward(const Tensor<3>& x, const FfnWeights& w, Activation a, FfnCache& cache,
                 Tensor<3>& y) {
  constexpr const char* kFn = "attn::fast::ffn_forward";
  check_ffn(kFn, x, w);
  require(&y != &x, kFn, "the output must not be x");
  require(a == Activation::relu || a == Activation::gelu || a == Activation::gelu_tanh, kFn,
          "unknown activation");
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  const std::size_t F = w.w1.shape()[1];
  const std::size_t rows = B * T;
  // The backward needs the input (for dW1), the pre-activation (for act') and the activation
  // (for dW2): (B, T, C), (B, T, F), (B, T, F), reused when the shapes repeat.
  ensure_shape(cache.x, {B, T, C});
  ensure_shape(cache.pre, {B, T, F});
  ensure_shape(cache.act, {B, T, F});
  // (Nothing to copy when the caller computed x straight into cache.x, as block_forward does.)
  if (&x != &cache.x) std::copy(x.begin(), x.end(), cache.x.begin());
  ensure_shape(y, {B, T, C});
  if (y.size() == 0) return;
  // The same chunks of kFfnRows tokens as ffn_forward, so the output is the same bit for bit;
  // only the (n, F) hidden values are written to the cache instead of a scratch block.
  const std::size_t chunks = (rows + kFfnRows - 1) / kFfnRows;
  detail::run_parts(chunks, detail::worker_count(chunks),
                    [&](std::size_t begin, std::size_t end, std::size_t) {
                      for (std::size_t chunk = begin; chunk < end; ++chunk) {
                        const std::size_t r0 = chunk * kFfnRows;
                        const std::size_t n = std::min(kFfnRows, rows - r0);
                        const float* xc = x.data() + r0 * C;     // (n, C)
                        float* pre = cache.pre.data() + r0 * F;  // (n, F)
                        float* act = cache.act.data() + r0 * F;  // (n, F)
                        float* yc = y.data() + r0 * C;           // (n, C)
                        // 1. pre = x @ w1 + b1: (n, C) @ (C, F) + (F,) -> (n, F)
                        for (std::size_t r = 0; r < n; ++r)
                          std::copy(w.b1.begin(), w.b1.end(), pre + r * F);
                        gemm(n, F, C, 1.0f, xc, false, w.w1.data(), false, 1.0f, pre);
                        // 2. act = act(pre), kept beside pre
                        activate_into(pre, act, n * F, a);
                        // 3. y = act @ w2 + b2: (n, F) @ (F, C) + (C,) -> (n, C)
                        for (std::size_t r = 0; r < n; ++r)
                          std::copy(w.b2.begin(), w.b2.end(), yc + r * C);
                        gemm(n, C, F, 1.0f, act, false, w.w2.data(), false, 1.0f, yc);
                      }
                    });
}

void ffn_backward(const Tensor<3>& dy, const FfnCache& cache, const FfnWeights& w, Activation a,
                  Tensor<3>& dx, FfnWeights& grads, Workspace& ws) {
  constexpr const char* kFn = "attn::fast::ffn_backward";
  check_ffn(kFn, cache.x, w);
  const std::size_t B = cache.x.shape()[0], T = cache.x.shape()[1], C = cache.x.shape()[2];
  const std::size_t F = w.w1.shape()[1];
  if (dy.shape() != cache.x.shape()) {
    shape_error(kFn, "dy of shape " + shape_str(cache.x.shape()) + " (like the forward's input)",
                "dy " + shape_str(dy.shape()));
  }
  check_shape<2>(kFn, "grads.w1", grads.w1, {C, F});
  check_shape<1>(kFn, "grads.b1", grads.b1, {F});
  check_shape<2>(kFn, "grads.w2", grads.w2, {F, C});
  check_shape<1>(kFn, "grads.b2", grads.b2, {C});
  // The cache is read at w's width F: one filled by another FFN's forward would be read past.
  check_shape<3>(kFn, "cache.pre", cache.pre, {B, T, F});
  check_shape<3>(kFn, "cache.act", cache.act, {B, T, F});
  const std::size_t rows = B * T;
  ensure_shape(dx, {B, T, C});
  if (rows == 0) return;
  // One (B*T, F) buffer for dact / dpre, in the caller's workspace.
  float* dh = at_least(ws.buffer, rows * F);  // (B*T, F)
  // Steps 1-3 act on each token on its own, so they run in the forward's chunks of kFfnRows
  // tokens, spread over the threads; every chunk is computed the same way on any thread count.
  const std::size_t chunks = (rows + kFfnRows - 1) / kFfnRows;
  detail::run_parts(
      chunks, detail::worker_count(chunks), [&](std::size_t begin, std::size_t end, std::size_t) {
        detail::WorkerScope scope;  // one BLAS call per chunk on any thread count
        for (std::size_t chunk = begin; chunk < end; ++chunk) {
          const std::size_t r0 = chunk * kFfnRows;
          const std::size_t n = std::min(kFfnRows, rows - r0);
          float* dhc = dh + r0 * F;  // (n, F)
          // 1. Through the second linear layer y = act @ w2 + b2:
          //    dact = dy @ w2^T   (n, C) @ (C, F) -> (n, F)
          gemm(n, F, C, 1.0f, dy.data() + r0 * C, false, w.w2.data(), true, 0.0f, dhc);
          // 2. The activation, element-wise: dpre = dact * act'(pre), in place.
          fast::activate_backward(std::span<const float>(cache.pre.data() + r0 * F, n * F),
                                  std::span<const float>(dhc, n * F), std::span<float>(dhc, n * F),
                                  a);
          // 3. Through the first linear layer pre = x @ w1 + b1:
          //    dx = dpre @ w1^T   (n, F) @ (F, C) -> (n, C)
          gemm(n, C, F, 1.0f, dhc, false, w.w1.data(), true, 0.0f, dx.data() + r0 * C);
        }
      });
  // 4. The parameters, summed over all B*T tokens. The two weight gradients are independent
  //    GEMMs: their tiles share the threads in one region (each computed the same way on any
  //    thread count); then the two bias sums:
  //    dw2 += act^T @ dy     (F, B*T) @ (B*T, C) -> (F, C)
  //    dw1 += x^T @ dpre     (C, B*T) @ (B*T, F) -> (C, F)
  //    db2 += sum_rows dy (C,),  db1 += sum_rows dpre (F,)
  const std::array<GemmJob, 2> jobs{
      GemmJob{F, C, rows, 1.0f, cache.act.data(), F, true, dy.data(), C, false, 1.0f,
              grads.w2.data(), C},
      GemmJob{C, F, rows, 1.0f, cache.x.data(), C, true, dh, F, false, 1.0f, grads.w1.data(), F}};
  gemm_many(jobs);
  // The bias sums in blocks of kBiasCols columns of either bias, shared out over the threads
  // (every column is summed over the rows in row order, whichever thread takes it).
  constexpr std::size_t kBiasCols = 128;
  const std::size_t blocks2 = (C + kBiasCols - 1) / kBiasCols;
  const std::size_t blocks = blocks2 + (F + kBiasCols - 1) / kBiasCols;
  detail::run_parts(blocks, detail::worker_count(blocks),
                    [&](std::size_t begin, std::size_t end, std::size_t) {
                      for (std::size_t k = begin; k < end; ++k) {
                        const bool second = k < blocks2;  // db2 first, then db1
                        const std::size_t j0 = (second ? k : k - blocks2) * kBiasCols;
                        const std::size_t width = second ? C : F;
                        const std::size_t n = std::min(kBiasCols, width - j0);
                        const float* from = second ? dy.data() : dh;
                        float* to = second ? grads.b2.data() : grads.b1.data();
                        bias_backward_strided(from + j0, rows, n, width, to + j0);
                      }
                    });
}

void ffn_backward(const Tensor<3>& dy, const FfnCache& cache, const FfnWeights& w, Activation a,
                  Tensor<3>& dx, FfnWeights& grads) {
  Workspace ws;
  ffn_backward(dy, cache, w, a, dx, grads, ws);
}

}  // namespace attn::fast
