// fast/swiglu.cpp: SwiGLU on the fast path (chapter 11). The reference (ops/swiglu.cpp) computes
// each step over the whole batch in double; here each chunk of tokens goes through its GEMMs and
// one fused element-wise pass while it is in cache, chunks spread over the library's threads.
#include "attn/fast/swiglu.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/fast/gemm.hpp"
#include "../ops/linear_any.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/simd.hpp"
#include "vec8.hpp"

namespace attn::fast {

namespace {

// Tokens per chunk: each chunk is its own GEMMs, so any thread count gives the same result.
constexpr std::size_t kSwigluRows = 128;

void check_swiglu(const char* fn, const Tensor<3>& x, const SwigluWeights<float>& w) {
  const std::size_t C = x.shape()[2], F = w.w_gate.shape()[1];
  const auto bad = [&](const char* name, const Matrix& m, std::size_t r, std::size_t c) {
    if (m.shape()[0] == r && m.shape()[1] == c) return;
    require(false, fn, [&] {
      return std::string(name) + " is " + shape_str(m.shape()) + ", expected (" +
             std::to_string(r) + ", " + std::to_string(c) + ")";
    });
  };
  require(C >= 1 && F >= 1, fn, "C and F must be at least 1");
  bad("w_gate", w.w_gate, C, F);
  bad("w_up", w.w_up, C, F);
  bad("w_down", w.w_down, F, C);
}

void ensure_shape(Tensor<3>& t, const std::array<std::size_t, 3>& shape) {
  if (!std::equal(shape.begin(), shape.end(), t.shape().begin())) t.resize(shape);
}

// ---- The gate, 8 floats at a time (vec8.hpp: g++ does not vectorise the scalar formulas) ----
using namespace detail8;  // f32x8, splat, abs8, exp8, load8, store8, ATTN_KERNEL

// sigmoid(a) from e = exp(-|a|) <= 1 (no overflow): 1 / (1 + e) for a >= 0, e / (1 + e) below.
ATTN_KERNEL f32x8 sigmoid8(f32x8 a) {
  const f32x8 e = exp8(-abs8(a));
  const f32x8 inv = 1.0f / (1.0f + e);
  return a < 0.0f ? e * inv : inv;
}

// h = silu(a) * u = a sigmoid(a) u, for 8 values.
ATTN_KERNEL f32x8 gate8(f32x8 a, f32x8 u) { return a * sigmoid8(a) * u; }

// From g = dh: du = g silu(a), da = g u silu'(a), silu'(a) = sigmoid(a) (1 + a (1 - sigmoid(a))).
ATTN_KERNEL void gate_grad8(f32x8 a, f32x8 u, f32x8 g, f32x8& da, f32x8& du) {
  const f32x8 s = sigmoid8(a);
  du = g * (a * s);
  da = g * u * (s * (1.0f + a * (1.0f - s)));
}

// Loads `lanes` (<= 8) floats from p, zeros after them, and stores `lanes` back: the last
// partial group of a buffer goes through the same vector code as the others.
ATTN_KERNEL f32x8 load_part(const float* p, std::size_t lanes) {
  float tmp[8] = {};
  for (std::size_t l = 0; l < lanes; ++l) tmp[l] = p[l];
  return load8(tmp);
}
ATTN_KERNEL void store_part(float* p, f32x8 v, std::size_t lanes) {
  float tmp[8];
  store8(tmp, v);
  for (std::size_t l = 0; l < lanes; ++l) p[l] = tmp[l];
}

// h = silu(a) * u, n values.
ATTN_SIMD_CLONES void gate_forward(const float* a, const float* u, float* h, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) store8(h + i, gate8(load8(a + i), load8(u + i)));
  if (i < n) store_part(h + i, gate8(load_part(a + i, n - i), load_part(u + i, n - i)), n - i);
}

// From dh: da = dh * u * silu'(a) (written over dh), du = dh * silu(a), n values.
ATTN_SIMD_CLONES void gate_backward(const float* a, const float* u, float* dh_da, float* du,
                                    std::size_t n) {
  f32x8 da, dun;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    gate_grad8(load8(a + i), load8(u + i), load8(dh_da + i), da, dun);
    store8(dh_da + i, da);
    store8(du + i, dun);
  }
  if (i == n) return;
  const std::size_t lanes = n - i;
  gate_grad8(load_part(a + i, lanes), load_part(u + i, lanes), load_part(dh_da + i, lanes), da,
             dun);
  store_part(dh_da + i, da, lanes);
  store_part(du + i, dun, lanes);
}

// Runs work(r0, n) for each chunk of kSwigluRows tokens over the threads, one BLAS call per GEMM.
template <class Work>
void for_chunks(std::size_t rows, const Work& work) {
  const std::size_t chunks = (rows + kSwigluRows - 1) / kSwigluRows;
  detail::run_parts(chunks, detail::worker_count(chunks),
                    [&](std::size_t begin, std::size_t end, std::size_t) {
                      detail::WorkerScope scope;
                      for (std::size_t chunk = begin; chunk < end; ++chunk) {
                        const std::size_t r0 = chunk * kSwigluRows;
                        work(r0, std::min(kSwigluRows, rows - r0));
                      }
                    });
}

}  // namespace

void swiglu_forward(const Tensor<3>& x, const SwigluWeights<float>& w, SwigluCache<float>& cache,
                    Tensor<3>& y) {
  constexpr const char* kFn = "attn::fast::swiglu_forward";
  check_swiglu(kFn, x, w);
  require(&y != &x, kFn, "the output must not be x");
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  const std::size_t F = w.w_gate.shape()[1], rows = B * T;
  ensure_shape(cache.x, {B, T, C});
  ensure_shape(cache.a, {B, T, F});
  ensure_shape(cache.u, {B, T, F});
  ensure_shape(cache.h, {B, T, F});
  if (&x != &cache.x) std::copy(x.begin(), x.end(), cache.x.begin());
  ensure_shape(y, {B, T, C});
  for_chunks(rows, [&](std::size_t r0, std::size_t n) {
    const float* xc = x.data() + r0 * C;  // (n, C)
    float* a = cache.a.data() + r0 * F;   // (n, F)
    float* u = cache.u.data() + r0 * F;   // (n, F)
    float* h = cache.h.data() + r0 * F;   // (n, F)
    // 1. a = x @ w_gate, u = x @ w_up: (n, C) @ (C, F) -> (n, F), twice
    gemm(n, F, C, 1.0f, xc, false, w.w_gate.data(), false, 0.0f, a);
    gemm(n, F, C, 1.0f, xc, false, w.w_up.data(), false, 0.0f, u);
    // 2. h = silu(a) * u, one pass
    gate_forward(a, u, h, n * F);
    // 3. y = h @ w_down: (n, F) @ (F, C) -> (n, C)
    gemm(n, C, F, 1.0f, h, false, w.w_down.data(), false, 0.0f, y.data() + r0 * C);
  });
}

Tensor<3> swiglu_forward(const Tensor<3>& x, const SwigluWeights<float>& w) {
  SwigluCache<float> cache;  // a, u, h for this call (like y, allocated per call)
  Tensor<3> y;
  swiglu_forward(x, w, cache, y);
  return y;
}

void swiglu_backward(const Tensor<3>& dy, const SwigluCache<float>& cache,
                     const SwigluWeights<float>& w, Tensor<3>& dx, SwigluWeights<float>& grads,
                     Workspace& ws) {
  constexpr const char* kFn = "attn::fast::swiglu_backward";
  check_swiglu(kFn, cache.x, w);
  const std::size_t B = cache.x.shape()[0], T = cache.x.shape()[1], C = cache.x.shape()[2];
  const std::size_t F = w.w_gate.shape()[1], rows = B * T;
  if (dy.shape() != cache.x.shape() || cache.h.size() != rows * F || cache.a.size() != rows * F ||
      cache.u.size() != rows * F) {
    shape_error(kFn, "dy " + shape_str(cache.x.shape()) + " and a cache from swiglu_forward",
                "dy " + shape_str(dy.shape()) + ", cache.h " + shape_str(cache.h.shape()));
  }
  // The gradients are added into by GEMMs sized by w's C and F, so each is checked against w (the
  // reference's messages), not against its own F: a narrower F would be written past.
  detail::check_weight_shape(kFn, "grads.w_gate", grads.w_gate, C, F);
  detail::check_weight_shape(kFn, "grads.w_up", grads.w_up, C, F);
  detail::check_weight_shape(kFn, "grads.w_down", grads.w_down, F, C);
  ensure_shape(dx, {B, T, C});
  // In the caller's workspace: da (B*T, F) and du (B*T, F).
  float* da = at_least(ws.buffer, 2 * rows * F);
  float* du = da + rows * F;
  for_chunks(rows, [&](std::size_t r0, std::size_t n) {
    float* dac = da + r0 * F;  // (n, F)
    float* duc = du + r0 * F;  // (n, F)
    // 1. dh = dy @ w_down^T: (n, C) @ (C, F) -> (n, F), into da's place
    gemm(n, F, C, 1.0f, dy.data() + r0 * C, false, w.w_down.data(), true, 0.0f, dac);
    // 2. da = dh * u * silu'(a), du = dh * silu(a), one pass
    gate_backward(cache.a.data() + r0 * F, cache.u.data() + r0 * F, dac, duc, n * F);
    // 3. dx = da @ w_gate^T + du @ w_up^T: (n, F) @ (F, C) -> (n, C), twice
    float* dxc = dx.data() + r0 * C;
    gemm(n, C, F, 1.0f, dac, false, w.w_gate.data(), true, 0.0f, dxc);
    gemm(n, C, F, 1.0f, duc, false, w.w_up.data(), true, 1.0f, dxc);
  });
  // 4. The weights, summed over all B*T tokens: three independent GEMMs, their tiles sharing
  //    the threads in one region.
  //    dw_down += h^T dy (F, C);  dw_gate += x^T da (C, F);  dw_up += x^T du (C, F)
  const std::array<GemmJob, 3> jobs{
      GemmJob{F, C, rows, 1.0f, cache.h.data(), F, true, dy.data(), C, false, 1.0f,
              grads.w_down.data(), C},
      GemmJob{C, F, rows, 1.0f, cache.x.data(), C, true, da, F, false, 1.0f, grads.w_gate.data(),
              F},
      GemmJob{C, F, rows, 1.0f, cache.x.data(), C, true, du, F, false, 1.0f, grads.w_up.data(), F}};
  gemm_many(jobs);
}

void swiglu_backward(const Tensor<3>& dy, const SwigluCache<float>& cache,
                     const SwigluWeights<float>& w, Tensor<3>& dx, SwigluWeights<float>& grads) {
  Workspace ws;
  swiglu_backward(dy, cache, w, dx, grads, ws);
}

}  // namespace attn::fast
