// ladder.cpp: chapter 12's ladder, one causal attention head made fast one change at a
// time (docs/12-fast-attention.md). Every rung computes out = softmax(mask(q k^T / sqrt(hs))) v
// for q, k, v of shape (T, hs); each differs from the one before by a single idea:
//   1 naive loops     2 BLAS products     3 fused softmax     4 causal blocks skipped
//   5 tiles + online softmax (no (T, T) matrix)     6 SIMD lanes     7 threads
// Rungs 1-6 run on one thread; only rung 7 adds threads. Tested equal to the reference
// (tests/common/test_ladder.cpp).
#include "ladder.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/fast/gemm.hpp"
#include "attn/ops/online_softmax.hpp"
#include "attn/ops/softmax.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/simd.hpp"
#include "attn/fast/exp_nonpositive.hpp"

#pragma GCC diagnostic ignored "-Wpsabi"  // 32-byte vectors passed by value, inlined

namespace ch12::ladder {

using attn::require;
using attn::Vector;
namespace detail = attn::detail;
using attn::softmax_rows;
using attn::fast::gemm;
using attn::fast::gemm_strided;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr std::size_t kLanes = 8;  // floats in one AVX2 register
constexpr std::size_t kGroup = 4;  // rung 6: query rows whose scores are computed together

// Rung 6's register: 8 floats, one AVX2 instruction per operation (two SSE2 ones in the plain
// x86-64 clone). GCC's vector extension: the same IEEE operations lane by lane.
using f32x8 = float __attribute__((vector_size(32)));
[[gnu::always_inline]] inline f32x8 load8(const float* p) {
  f32x8 x;
  std::memcpy(&x, p, sizeof x);
  return x;
}
[[gnu::always_inline]] inline void store8(float* p, f32x8 x) { std::memcpy(p, &x, sizeof x); }

float scale_of(std::size_t hs) { return 1.0f / std::sqrt(static_cast<float>(hs)); }

// q, k, v of one shape (T, hs) and a tile of at least 1: the library's check for one head.
void check(const char* fn, const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile) {
  attn::check_head_and_tile(fn, q, k, v, tile);
}

// Query t sees keys 0..t; of the `cols` keys starting at j0, how many.
std::size_t visible(std::size_t t, std::size_t j0, std::size_t cols) {
  return t < j0 ? 0 : std::min(cols, t + 1 - j0);
}

// The fused pass of rungs 3 and 4 over one row of raw scores: x_j = s_j * scale for the
// `vis` visible keys, p_j = exp(x_j - max) / sum, and exactly 0 for keys vis..end-1.
void fused_row(float* s, std::size_t vis, std::size_t end, float scale) {
  float m = kNegInf;
  for (std::size_t j = 0; j < vis; ++j) {
    s[j] *= scale;
    m = std::max(m, s[j]);
  }
  float sum = 0.0f;
  for (std::size_t j = 0; j < vis; ++j) {
    s[j] = std::exp(s[j] - m);
    sum += s[j];
  }
  const float inv = 1.0f / sum;
  for (std::size_t j = 0; j < vis; ++j) s[j] *= inv;
  std::fill(s + vis, s + end, 0.0f);
}

// ---- Rungs 5-7: one tile of queries [i0, i1) against key tiles with the online softmax.
struct TileScratch {
  float* s;    // (kGroup, ldt) rows of scores, then p (ldt: tile rounded up to whole lanes)
  float* acc;  // (tile, hs)   partial outputs
  float* kt;   // (hs, ldt)    rung 6: the key tile transposed, padded to whole lanes
  float* m;    // (tile,)      running max
  float* l;    // (tile,)      running sum
};
std::size_t lanes_up(std::size_t n) { return (n + kLanes - 1) / kLanes * kLanes; }
std::size_t tile_scratch_floats(std::size_t tile, std::size_t hs) {
  return kGroup * lanes_up(tile) + tile * hs + hs * lanes_up(tile) + 2 * tile;
}
TileScratch carve(float* base, std::size_t tile, std::size_t hs) {
  TileScratch t;
  t.s = base;
  t.acc = t.s + kGroup * lanes_up(tile);
  t.kt = t.acc + tile * hs;
  t.m = t.kt + hs * lanes_up(tile);
  t.l = t.m + tile;
  return t;
}

// The online-softmax update of one row after its scores s[0, vis) are known, and the
// accumulation of p v (the same code for rungs 5 and 6, so both give the same bits):
//   m' = max(m, max_j s_j),  a = exp(m - m'),  p_j = exp(s_j - m'),
//   l = a l + sum_j p_j,     acc = a acc + sum_j p_j v_j
inline void online_update(float* s, std::size_t vis, float& m, float& l, float* acc, const float* v,
                          std::size_t hs) {
  // The max and the sum in 8 lanes (8 independent chains instead of one): the loops vectorise
  // in rung 6's AVX2 clone; rung 5 runs the same code, so both sum in the same order.
  float lane[kLanes];
  for (std::size_t u = 0; u < kLanes; ++u) lane[u] = m;
  std::size_t j = 0;
  for (; j + kLanes <= vis; j += kLanes)
    for (std::size_t u = 0; u < kLanes; ++u) lane[u] = s[j + u] > lane[u] ? s[j + u] : lane[u];
  float m_new = m;
  for (; j < vis; ++j) m_new = std::max(m_new, s[j]);
  for (std::size_t u = 0; u < kLanes; ++u) m_new = std::max(m_new, lane[u]);
  if (m_new == kNegInf) return;  // only -inf scores so far: nothing to add
  const float a = detail::exp_nonpositive(m - m_new);
  for (j = 0; j < vis; ++j) s[j] = detail::exp_nonpositive(s[j] - m_new);
  for (std::size_t u = 0; u < kLanes; ++u) lane[u] = 0.0f;
  for (j = 0; j + kLanes <= vis; j += kLanes)
    for (std::size_t u = 0; u < kLanes; ++u) lane[u] += s[j + u];
  float sum = 0.0f;
  for (; j < vis; ++j) sum += s[j];
  for (std::size_t u = 0; u < kLanes; ++u) sum += lane[u];
  l = a * l + sum;
  m = m_new;
  for (std::size_t d = 0; d < hs; ++d) acc[d] *= a;
  for (j = 0; j < vis; ++j)
    for (std::size_t d = 0; d < hs; ++d) acc[d] += s[j] * v[j * hs + d];
}

// Rung 6's update: online_update's operations in the same order, on 8-float registers (the
// max and the 8 partial sums lane by lane, each acc chunk kept in a register over the keys).
[[gnu::always_inline]] inline void online_update_simd(float* s, std::size_t vis, float& m, float& l,
                                                      float* acc, const float* v, std::size_t hs) {
  f32x8 mx = f32x8{} + m;
  std::size_t j = 0;
  for (; j + kLanes <= vis; j += kLanes) {
    const f32x8 x = load8(s + j);
    mx = x > mx ? x : mx;
  }
  float m_new = m;
  for (; j < vis; ++j) m_new = std::max(m_new, s[j]);
  for (std::size_t u = 0; u < kLanes; ++u) m_new = std::max(m_new, mx[u]);
  if (m_new == kNegInf) return;
  const float a = detail::exp_nonpositive(m - m_new);
  for (j = 0; j < vis; ++j) s[j] = detail::exp_nonpositive(s[j] - m_new);
  f32x8 lanes{};
  for (j = 0; j + kLanes <= vis; j += kLanes) lanes += load8(s + j);
  float sum = 0.0f;
  for (; j < vis; ++j) sum += s[j];
  for (std::size_t u = 0; u < kLanes; ++u) sum += lanes[u];
  l = a * l + sum;
  m = m_new;
  std::size_t d = 0;
  for (; d + kLanes <= hs; d += kLanes) {
    f32x8 o = load8(acc + d) * a;
    for (j = 0; j < vis; ++j) o += s[j] * load8(v + j * hs + d);
    store8(acc + d, o);
  }
  for (; d < hs; ++d) {
    float o = acc[d] * a;
    for (j = 0; j < vis; ++j) o += s[j] * v[j * hs + d];
    acc[d] = o;
  }
}

// out rows [i0, i1) = acc / l.
void finish_tile(const TileScratch& w, std::size_t i0, std::size_t i1, std::size_t hs, float* out) {
  for (std::size_t r = 0; r < i1 - i0; ++r)
    for (std::size_t d = 0; d < hs; ++d) out[(i0 + r) * hs + d] = w.acc[r * hs + d] / w.l[r];
}

// Rung 5: each score one inner product, a plain loop over d.
void scalar_tile(const float* q, const float* k, const float* v, float* out, std::size_t T,
                 std::size_t hs, std::size_t tile, std::size_t i0, const TileScratch& w) {
  const std::size_t i1 = std::min(T, i0 + tile), rows = i1 - i0;
  const float scale = scale_of(hs);
  std::fill(w.acc, w.acc + rows * hs, 0.0f);
  std::fill(w.m, w.m + rows, kNegInf);
  std::fill(w.l, w.l + rows, 0.0f);
  for (std::size_t j0 = 0; j0 < i1; j0 += tile) {  // key tiles after i1 are all masked
    const std::size_t cols = std::min(tile, T - j0);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t vis = visible(i0 + r, j0, cols);
      const float* qr = q + (i0 + r) * hs;
      for (std::size_t c = 0; c < vis; ++c) {
        float dot = 0.0f;
        for (std::size_t d = 0; d < hs; ++d) dot += qr[d] * k[(j0 + c) * hs + d];
        w.s[c] = dot * scale;
      }
      online_update(w.s, vis, w.m[r], w.l[r], w.acc + r * hs, v + j0 * hs, hs);
    }
  }
  finish_tile(w, i0, i1, hs, out);
}

// Rung 6: the key tile transposed once, kt (hs, cols), so that 8 consecutive keys' inner
// products run side by side in the 8 lanes of one register: lane u adds q_d * k_{c+u, d} for
// d = 0, 1, ... in the same order as rung 5's loop, so each score has the same bits. The exp and
// the p v accumulation vectorise too (online_update is inlined here, in the AVX2 clone).
ATTN_SIMD_CLONES void simd_tile(const float* q, const float* k, const float* v, float* out,
                                std::size_t T, std::size_t hs, std::size_t tile, std::size_t i0,
                                const TileScratch& w) {
  const std::size_t i1 = std::min(T, i0 + tile), rows = i1 - i0;
  const std::size_t ldt = lanes_up(tile);
  const float scale = scale_of(hs);
  std::fill(w.acc, w.acc + rows * hs, 0.0f);
  std::fill(w.m, w.m + rows, kNegInf);
  std::fill(w.l, w.l + rows, 0.0f);
  for (std::size_t j0 = 0; j0 < i1; j0 += tile) {
    const std::size_t cols = std::min(tile, T - j0);
    for (std::size_t d = 0; d < hs; ++d) {  // kt = k[j0 : j0 + cols]^T, zero-padded
      for (std::size_t c = 0; c < cols; ++c) w.kt[d * ldt + c] = k[(j0 + c) * hs + d];
      std::fill(w.kt + d * ldt + cols, w.kt + d * ldt + ldt, 0.0f);
    }
    // kGroup query rows at a time: their kGroup x 8 sums are independent, so the processor
    // overlaps them instead of waiting for each add to finish before the next (one chain of
    // adds per register would leave the SIMD units idle most of the time). A partial group
    // repeats its last row; scores past a row's visible keys are computed and ignored.
    for (std::size_t r0 = 0; r0 < rows; r0 += kGroup) {
      const std::size_t g = std::min(kGroup, rows - r0);
      const std::size_t most = visible(i0 + r0 + g - 1, j0, cols);  // the group's last row
      for (std::size_t c0 = 0; c0 < most; c0 += kLanes) {
        f32x8 lane[kGroup] = {};
        for (std::size_t d = 0; d < hs; ++d) {
          const f32x8 kd = load8(w.kt + d * ldt + c0);  // keys c0..c0+7, feature d
          for (std::size_t gi = 0; gi < kGroup; ++gi)
            lane[gi] += q[(i0 + r0 + std::min(gi, g - 1)) * hs + d] * kd;
        }
        for (std::size_t gi = 0; gi < g; ++gi) store8(w.s + gi * ldt + c0, lane[gi] * scale);
      }
      for (std::size_t gi = 0; gi < g; ++gi) {
        const std::size_t r = r0 + gi;
        online_update_simd(w.s + gi * ldt, visible(i0 + r, j0, cols), w.m[r], w.l[r],
                           w.acc + r * hs, v + j0 * hs, hs);
      }
    }
  }
  finish_tile(w, i0, i1, hs, out);
}

// Rungs 5-7 share the walk over query tiles; `threads` > 1 splits the tiles (rung 7).
template <class TileFn>
Matrix online(const char* fn, const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile,
              bool threads, TileFn tile_fn) {
  check(fn, q, k, v, tile);
  const std::size_t T = q.shape()[0], hs = q.shape()[1];
  tile = std::min(tile, T);
  const std::size_t tiles = (T + tile - 1) / tile;
  const std::size_t n_threads = threads ? detail::worker_count(tiles) : 1;
  const std::size_t per_thread = tile_scratch_floats(tile, hs);
  std::vector<float> scratch(n_threads * per_thread);
  Matrix out(Matrix::shape_type{T, hs});
  float* base = scratch.data();
  float* o = out.data();
  // Causal tiles grow with i0: handed out as 0, n-1, 1, n-2, ... so halves carry equal work.
  detail::run_parts(tiles, n_threads, [&](std::size_t begin, std::size_t end, std::size_t part) {
    const TileScratch w = carve(base + part * per_thread, tile, hs);
    for (std::size_t p = begin; p < end; ++p) {
      const std::size_t t = p % 2 == 0 ? p / 2 : tiles - 1 - p / 2;
      tile_fn(q.data(), k.data(), v.data(), o, T, hs, tile, t * tile, w);
    }
  });
  return out;
}

}  // namespace

// 1. s_tj = (q_t . k_j) / sqrt(hs) by a loop over d; -inf above the diagonal; each row's stable
//    softmax; o_t = sum_j p_tj v_j. The reference's steps in the reference's order, each sum in
//    float where attn::attention_ref sums in double.   (T, T) scores in memory.
Matrix naive(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile) {
  check("ch12::ladder::naive", q, k, v, tile);
  const std::size_t T = q.shape()[0], hs = q.shape()[1];
  const float scale = scale_of(hs);
  Matrix p(Matrix::shape_type{T, T});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t j = 0; j < T; ++j) {
      float dot = 0.0f;
      for (std::size_t d = 0; d < hs; ++d) dot += q(t, d) * k(j, d);
      p(t, j) = j <= t ? dot * scale : kNegInf;
    }
  for (std::size_t t = 0; t < T; ++t) {
    float m = kNegInf;
    for (std::size_t j = 0; j < T; ++j) m = std::max(m, p(t, j));
    float sum = 0.0f;
    for (std::size_t j = 0; j < T; ++j) {
      p(t, j) = std::exp(p(t, j) - m);
      sum += p(t, j);
    }
    const float inv = 1.0f / sum;
    for (std::size_t j = 0; j < T; ++j) p(t, j) *= inv;
  }
  Matrix out(Matrix::shape_type{T, hs});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t d = 0; d < hs; ++d) {
      float o = 0.0f;
      for (std::size_t j = 0; j < T; ++j) o += p(t, j) * v(j, d);
      out(t, d) = o;
    }
  return out;
}

// 2. The same three steps, the products by BLAS: S = q k^T (T, hs) @ (hs, T), O = P v
//    (T, T) @ (T, hs). Scale, mask and softmax are three passes over the (T, T) matrix.
Matrix gemm_scores(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile) {
  check("ch12::ladder::gemm_scores", q, k, v, tile);
  const detail::WorkerScope one_thread;  // the products on this thread only (rung 7 adds threads)
  const std::size_t T = q.shape()[0], hs = q.shape()[1];
  Matrix s(Matrix::shape_type{T, T});
  gemm(T, T, hs, 1.0f, q.data(), false, k.data(), true, 0.0f, s.data());
  float* sd = s.data();
  const float scale = scale_of(hs);
  for (std::size_t i = 0; i < T * T; ++i) sd[i] *= scale;  // pass 1: scale
  for (std::size_t t = 0; t < T; ++t)                      // pass 2: mask
    std::fill(sd + t * T + t + 1, sd + (t + 1) * T, kNegInf);
  softmax_rows(sd, T, T);  // pass 3: softmax
  Matrix out(Matrix::shape_type{T, hs});
  gemm(T, hs, T, 1.0f, sd, false, v.data(), false, 0.0f, out.data());
  return out;
}

// 3. One pass per row instead of three: scale, max, exp, sum, normalise, all while the row is
//    in cache; the masked entries are written 0, never exp-ed.
Matrix fused_softmax(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile) {
  check("ch12::ladder::fused_softmax", q, k, v, tile);
  const detail::WorkerScope one_thread;
  const std::size_t T = q.shape()[0], hs = q.shape()[1];
  Matrix s(Matrix::shape_type{T, T});
  gemm(T, T, hs, 1.0f, q.data(), false, k.data(), true, 0.0f, s.data());
  for (std::size_t t = 0; t < T; ++t) fused_row(s.data() + t * T, t + 1, T, scale_of(hs));
  Matrix out(Matrix::shape_type{T, hs});
  gemm(T, hs, T, 1.0f, s.data(), false, v.data(), false, 0.0f, out.data());
  return out;
}

// 4. Blocks of `tile` queries [i0, i1): their keys stop at i1 - 1, so each block's products are
//    (rows, hs) @ (hs, i1) and (rows, i1) @ (i1, hs): about half the FLOPs of rung 3.
Matrix causal_blocks(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile) {
  check("ch12::ladder::causal_blocks", q, k, v, tile);
  const detail::WorkerScope one_thread;
  const std::size_t T = q.shape()[0], hs = q.shape()[1];
  Matrix s(Matrix::shape_type{T, T});
  Matrix out(Matrix::shape_type{T, hs});
  for (std::size_t i0 = 0; i0 < T; i0 += tile) {
    const std::size_t i1 = std::min(T, i0 + tile), rows = i1 - i0;
    float* sb = s.data() + i0 * T;  // (rows, i1), rows T floats apart
    gemm_strided(rows, i1, hs, 1.0f, q.data() + i0 * hs, hs, false, k.data(), hs, true, 0.0f, sb,
                 T);
    for (std::size_t r = 0; r < rows; ++r) fused_row(sb + r * T, i0 + r + 1, i1, scale_of(hs));
    gemm_strided(rows, hs, i1, 1.0f, sb, T, false, v.data(), hs, false, 0.0f, out.data() + i0 * hs,
                 hs);
  }
  return out;
}

// 5. Tiles with the online softmax: no (T, T) matrix, a tile of scores at a time.
Matrix tiled_online(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile) {
  return online("ch12::ladder::tiled_online", q, k, v, tile, false, scalar_tile);
}

// 6. The same with 8 inner products per instruction.
Matrix simd_online(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile) {
  return online("ch12::ladder::simd_online", q, k, v, tile, false, simd_tile);
}

// 7. The same over the library's threads, query tiles shared out.
Matrix threaded_online(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile) {
  return online("ch12::ladder::threaded_online", q, k, v, tile, true, simd_tile);
}

const RungInfo& rung(std::size_t index) {
  static const std::array<RungInfo, kRungs> rungs{{
      {"naive loops", &naive},
      {"scores by GEMM", &gemm_scores},
      {"fused softmax", &fused_softmax},
      {"causal blocks", &causal_blocks},
      {"tiles + online softmax", &tiled_online},
      {"SIMD inner products", &simd_online},
      {"threads over tiles", &threaded_online},
  }};
  require(index < kRungs, "ch12::ladder::rung", "index must be below 7");
  return rungs[index];
}

double rung_flops(std::size_t index, std::size_t T, std::size_t hs, std::size_t tile) {
  const double t = static_cast<double>(T), d = static_cast<double>(hs);
  if (index < 3) return 4.0 * t * t * d;  // both products over the full (T, T)
  if (index == 3) {                       // blocks: (rows, i1) scores and (rows, i1) @ (i1, hs)
    double f = 0.0;
    for (std::size_t i0 = 0; i0 < T; i0 += tile) {
      const std::size_t i1 = std::min(T, i0 + tile);
      f += 4.0 * static_cast<double>(i1 - i0) * static_cast<double>(i1) * d;
    }
    return f;
  }
  return 4.0 * t * (t + 1.0) / 2.0 * d;  // the visible scores only
}

double rung_floats(std::size_t index, std::size_t T, std::size_t hs, std::size_t tile,
                   std::size_t threads) {
  if (index < 4) return static_cast<double>(T) * static_cast<double>(T);
  tile = std::min(tile, T);
  const double per = static_cast<double>(tile_scratch_floats(tile, hs));
  return per * static_cast<double>(index == 6 ? threads : 1);
}

}  // namespace ch12::ladder
