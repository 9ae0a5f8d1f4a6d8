// fast/flash.cpp: flash-style attention (chapter 12). The reference (ops/attention.cpp) forms
// the (T, S) scores of a head, takes their softmax and multiplies by v: (T, S) floats per head,
// 8.6 GB at T = 16384 with 8 heads. Here a tile of queries meets one tile of keys at a time:
//
//   for each tile of keys:  s = q k^T / sqrt(hs)               (tile, tile), in cache
//                           m' = max(m, rowmax s)               running max
//                           p = exp(s - m'),  a = exp(m - m')   a rescales what came before
//                           l = a l + rowsum p                  running sum
//                           o = a o + p v                       partial (unnormalised) output
//   at the end:             out = o / l,  L = m + log l         L: the row's log-sum-exp
//
// so every exponent is <= 0 and the result equals the two-pass softmax up to rounding
// (docs/12-fast-attention.md derives it). Memory: the output, L and a few tiles per thread
// (plus, for heads read in place from a (B, T, 3C) projection, a contiguous copy of the rows of
// the one head a thread works on: flash_forward says why).
// Tested equal to the reference (tests/common/test_flash.cpp).
#include "attn/fast/flash.hpp"

#include <cblas.h>  // OpenBLAS's; only .cpp files include it (target attn_openblas)

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/fast/gemm.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/simd.hpp"
#include "../ops/attention_checks.hpp"
#include "attn/fast/exp_nonpositive.hpp"
#include "flash_mha.hpp"

namespace attn::fast {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Head h of batch b starts at data + b * batch + h * head; its rows are `row` floats apart (a
// contiguous (B, H, T, hs) tensor, or the column blocks of a (B, T, 3C) projection read in place).
template <class F>
struct Heads {
  F* data;
  std::size_t batch, head, row;
  F* at(std::size_t b, std::size_t h) const { return data + b * batch + h * head; }
};
template <class F>
Heads<F> contiguous(F* data, std::size_t H, std::size_t rows, std::size_t width) {
  return {data, H * rows * width, rows * width, width};
}
template <class F>
Heads<F> columns(F* data, std::size_t rows, std::size_t row_width, std::size_t hs) {
  return {data, rows * row_width, hs, row_width};
}

struct Dims {
  std::size_t B, H, T, S, hs, hv, tile;
  bool causal;
};

// The same dimensions with the tile no larger than the sequence: one tile covers it either way
// (the same products, the same bits), and the scratch of a short sequence stays small.
Dims clamped(Dims n) {
  n.tile = std::max<std::size_t>(1, std::min(n.tile, std::max(n.T, n.S)));
  return n;
}

void check_blas_size(const char* fn, std::size_t n) {
  require(n <= static_cast<std::size_t>(INT_MAX), fn,
          [&] { return "size " + std::to_string(n) + " is too large for BLAS (int)"; });
}
void check_tile(const char* fn, std::size_t tile) {
  require(tile >= 1 && tile <= kMaxFlashTile, fn, [&] {
    return "tile must be in [1, " + std::to_string(kMaxFlashTile) + "], got " +
           std::to_string(tile);
  });
}

// c (M, N) = alpha * op(a) @ op(b) + beta * c on this worker thread (sizes checked before the
// split). op(a) = a^T when a is stored (K, M); op(b) = b^T when b is stored (N, K).
void tile_gemm(std::size_t M, std::size_t N, std::size_t K, float alpha, const float* a,
               std::size_t lda, bool trans_a, const float* b, std::size_t ldb, bool trans_b,
               float beta, float* c, std::size_t ldc) {
  if (M == 0 || N == 0 || K == 0) {
    if (beta == 0.0f)
      for (std::size_t i = 0; i < M; ++i) std::fill(c + i * ldc, c + i * ldc + N, 0.0f);
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(M), static_cast<int>(N),
              static_cast<int>(K), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

// How many keys of the tile starting at j0 (cols of them) query t may see.
std::size_t visible_keys(bool causal, std::size_t t, std::size_t j0, std::size_t cols) {
  if (!causal) return cols;
  return t < j0 ? 0 : std::min(cols, t + 1 - j0);
}

// Item `pos` of `tiles` tiles of a head, in the order 0, n-1, 1, n-2, ...: with the causal mask
// tiles near one end do more work than those near the other, so contiguous ranges of items then
// carry about equal work.
std::size_t interleaved(std::size_t pos, std::size_t tiles) {
  return pos % 2 == 0 ? pos / 2 : tiles - 1 - pos / 2;
}

// ---------------------------------------------------------------------------------------------
// Forward
// ---------------------------------------------------------------------------------------------

// The online-softmax update of one query row for one tile of keys. s: the row's `cols` scaled
// scores, of which the first `visible` are unmasked; on return s holds p = exp(s - m') (0 for
// masked keys), and m, l and the partial output acc (hv floats) are updated:
//   m' = max(m, max_j s_j),  a = exp(m - m'),  l = a l + sum_j p_j,  acc = a acc.
// (acc += p v is the caller's product, for the whole tile at once.) Compiled for SSE2 and AVX2.
ATTN_SIMD_CLONES void online_softmax_row(float* s, std::size_t visible, std::size_t cols, float& m,
                                         float& l, float* acc, std::size_t hv) {
  constexpr std::size_t W = 8;
  float mx[W];
  for (std::size_t u = 0; u < W; ++u) mx[u] = m;
  std::size_t j = 0;
  for (; j + W <= visible; j += W)
    for (std::size_t u = 0; u < W; ++u) mx[u] = s[j + u] > mx[u] ? s[j + u] : mx[u];
  float m_new = m;
  for (; j < visible; ++j) m_new = s[j] > m_new ? s[j] : m_new;
  for (std::size_t u = 0; u < W; ++u) m_new = mx[u] > m_new ? mx[u] : m_new;
  // Nothing visible yet (or only -inf scores, from infinite inputs): no weight anywhere.
  if (m_new == kNegInf) {
    std::fill(s, s + cols, 0.0f);
    return;
  }
  const float a = detail::exp_nonpositive(m - m_new);  // exp(-inf) = 0 on the first tile
  // 8 exps at a time (lane u of partial sums the keys j = u mod 8).
  detail::float8 partial = detail::splat8(0.0f);
  const detail::float8 shift = detail::splat8(m_new);
  for (j = 0; j + W <= visible; j += W) {
    detail::float8 e;
    std::memcpy(&e, s + j, sizeof e);
    e = detail::exp_nonpositive8(e - shift);
    std::memcpy(s + j, &e, sizeof e);
    partial += e;
  }
  float sum = 0.0f;
  for (; j < visible; ++j) {
    s[j] = detail::exp_nonpositive(s[j] - m_new);
    sum += s[j];
  }
  for (std::size_t u = 0; u < W; ++u) sum += partial[u];
  std::fill(s + visible, s + cols, 0.0f);
  l = a * l + sum;
  if (a != 1.0f)
    for (std::size_t d = 0; d < hv; ++d) acc[d] *= a;
  m = m_new;
}

// Floats of scratch one thread of the forward needs: the scores of a tile, the partial outputs,
// m and l; with `gather`, also room for one head's keys and values (gather_head).
std::size_t forward_scratch(const Dims& n, bool gather) {
  return n.tile * n.tile + n.tile * n.hv + 2 * n.tile + (gather ? n.S * (n.hs + n.hv) : 0);
}

// The keys or values of head (b, h), `width` floats a row, copied into contiguous rows at `to`:
// (S, width).
void gather_head(Heads<const float> from, std::size_t b, std::size_t h, std::size_t S,
                 std::size_t width, float* to) {
  const float* row = from.at(b, h);
  for (std::size_t j = 0; j < S; ++j)
    std::copy(row + j * from.row, row + j * from.row + width, to + j * width);
}

// One query tile [i0, i1) of head (b, h): out rows and L (lse may be null) of those queries.
void forward_tile(const Dims& n, Heads<const float> q, Heads<const float> k, Heads<const float> v,
                  Heads<float> out, float* lse, std::size_t b, std::size_t h, std::size_t i0,
                  std::size_t i1, float* scratch) {
  const std::size_t rows = i1 - i0, tile = n.tile, hv = n.hv;
  float* s = scratch;            // (rows, tile) scores, then p
  float* acc = s + tile * tile;  // (rows, hv) partial output
  float* m = acc + tile * hv;    // (rows,) running max
  float* l = m + tile;           // (rows,) running sum
  std::fill(acc, acc + rows * hv, 0.0f);
  std::fill(m, m + rows, kNegInf);
  std::fill(l, l + rows, 0.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(n.hs));
  const float* qt = q.at(b, h) + i0 * q.row;  // (rows, hs)
  const float* kh = k.at(b, h);               // (S, hs)
  const float* vh = v.at(b, h);               // (S, hv)
  // Causal: keys after the tile's last query are never seen, so those tiles are skipped.
  const std::size_t key_end = n.causal ? i1 : n.S;
  for (std::size_t j0 = 0; j0 < key_end; j0 += tile) {
    const std::size_t cols = std::min(tile, key_end - j0);
    // 1. s = q k^T / sqrt(hs): (rows, hs) @ (hs, cols) -> (rows, cols)
    tile_gemm(rows, cols, n.hs, scale, qt, q.row, false, kh + j0 * k.row, k.row, true, 0.0f, s,
              tile);
    // 2. The online softmax of each row: p = exp(s - m'), l and acc rescaled.
    for (std::size_t r = 0; r < rows; ++r)
      online_softmax_row(s + r * tile, visible_keys(n.causal, i0 + r, j0, cols), cols, m[r], l[r],
                         acc + r * hv, hv);
    // 3. acc += p v: (rows, cols) @ (cols, hv) -> (rows, hv)
    tile_gemm(rows, hv, cols, 1.0f, s, tile, false, vh + j0 * v.row, v.row, false, 1.0f, acc, hv);
  }
  // 4. out = acc / l; L = m + log l. A row that saw no finite score gets zeros (the reference's
  //    softmax of an all -inf row) and L = -inf.
  float* ot = out.at(b, h) + i0 * out.row;
  for (std::size_t r = 0; r < rows; ++r) {
    const bool any = l[r] > 0.0f;
    const float inv = any ? 1.0f / l[r] : 0.0f;
    for (std::size_t d = 0; d < hv; ++d) ot[r * out.row + d] = acc[r * hv + d] * inv;
    if (lse != nullptr) lse[(b * n.H + h) * n.T + i0 + r] = any ? m[r] + std::log(l[r]) : kNegInf;
  }
}

// Every (b, h, query tile) over the library's threads. With the causal mask the last tiles of a
// head do more work than the first: tiles are handed out in the order 0, n-1, 1, n-2, ... so
// that contiguous ranges of items carry about equal work. Each tile is computed the same way
// whichever thread runs it.
//
// Read in place from the (B, T, 3C) projection, a head's rows are 3C floats apart (6 KiB at
// C = 512): a tile of 256 keys then spans 256 memory pages of 4 KiB, and BLAS, packing each tile
// of keys and values for its product, walks the page tables for most rows (the query tile, the
// same through a whole sweep over the keys, stays in the translation cache). So each thread
// first copies the keys and values of the head it works on into contiguous rows of its scratch
// (T (hs + hv) floats, 8 MiB at T = 16,384): 4-7% less time at T = 8,192-32,768. The products
// read the same numbers either way, so the bits are the same.
void flash_forward(const Dims& dims, Heads<const float> q, Heads<const float> k,
                   Heads<const float> v, Heads<float> out, float* lse) {
  const Dims n = clamped(dims);
  const std::size_t tiles = (n.T + n.tile - 1) / n.tile;
  const std::size_t items = n.B * n.H * tiles;
  if (items == 0) return;
  const bool gather = k.row != n.hs || v.row != n.hv;
  const std::size_t n_threads = detail::worker_count(items);
  const std::size_t per_thread = forward_scratch(n, gather);
  std::vector<float> scratch(n_threads * per_thread);
  float* base = scratch.data();
  detail::run_parts(items, n_threads, [&](std::size_t begin, std::size_t end, std::size_t part) {
    float* mine = base + part * per_thread;
    float* keys = mine + forward_scratch(n, false);  // (S, hs), then (S, hv) values
    float* values = keys + n.S * n.hs;
    std::size_t held = items;  // the (b, h) whose keys and values are in `keys`: none yet
    for (std::size_t item = begin; item < end; ++item) {
      const std::size_t bh = item / tiles, pos = item % tiles, b = bh / n.H, h = bh % n.H;
      const std::size_t i0 = interleaved(pos, tiles) * n.tile, i1 = std::min(n.T, i0 + n.tile);
      if (!gather) {
        forward_tile(n, q, k, v, out, lse, b, h, i0, i1, mine);
        continue;
      }
      if (bh != held) {
        gather_head(k, b, h, n.S, n.hs, keys);
        gather_head(v, b, h, n.S, n.hv, values);
        held = bh;
      }
      // Views of the one head held: every (b, h) reads it.
      forward_tile(n, q, Heads<const float>{keys, 0, 0, n.hs},
                   Heads<const float>{values, 0, 0, n.hv}, out, lse, b, h, i0, i1, mine);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Backward
// ---------------------------------------------------------------------------------------------
//
// With P = exp(S - L) recomputed tile by tile (S = q k^T / sqrt(hs)):
//   dV = P^T dO,  dP = dO V^T,  dS = P * (dP - D) with D_t = sum_j P_tj dP_tj = dO_t . O_t,
//   dQ = dS K / sqrt(hs),  dK = dS^T Q / sqrt(hs).
// D from dO . O is the trick that spares a pass over the row: sum_j P_tj (dO_t . v_j) =
// dO_t . (sum_j P_tj v_j) = dO_t . O_t.
//
// Every sum has one fixed order, whatever thread computes it: dK and dV of a key tile add up the
// query tiles in order, dQ of a query tile adds up the key tiles in order. Two ways to split the
// work over threads keep that order (flash_backward picks one by the shapes and the thread
// count; the bits are the same):
//   whole heads: one (b, h) per item, keys tile by tile in the outer loop, dK, dV of a key tile
//     finished in one sweep over the query tiles while dQ accumulates: five products per pair
//     of tiles;
//   tiles: (b, h, key tile) items for dK, dV, then (b, h, query tile) items for dQ, each
//     recomputing P and dS: seven products per pair of tiles, but B * H * T / tile items, so a
//     few heads still spread over every thread.

struct BackwardArgs {
  Heads<const float> q, k, v, dout;
  const float* lse;  // (B, H, T)
  const float* D;    // (B, H, T) dO_t . O_t
  Heads<float> dq, dk, dv;
};

// Floats of scratch one thread of the backward needs: p and dS of a tile; with `gather`, room
// for the rows of one head it copies (flash_backward): q, dO and dQ (T (2 hs + hv) floats), or
// k and v (S (hs + hv)).
std::size_t backward_scratch(const Dims& n, bool gather) {
  const std::size_t rows = gather ? std::max(n.T * (2 * n.hs + n.hv), n.S * (n.hs + n.hv)) : 0;
  return 2 * n.tile * n.tile + rows;
}

// A view of one head's contiguous rows at `data` (width floats each), whatever (b, h) asks.
template <class F>
Heads<F> one_head(F* data, std::size_t width) {
  return {data, 0, 0, width};
}

// The other way from gather_head: rows (T, width) at `from` into head (b, h) of `to`.
void scatter_head(const float* from, std::size_t T, std::size_t width, Heads<float> to,
                  std::size_t b, std::size_t h) {
  float* row = to.at(b, h);
  for (std::size_t t = 0; t < T; ++t)
    std::copy(from + t * width, from + (t + 1) * width, row + t * to.row);
}

// D_t = dO_t . O_t of every query of head (b, h), summed in double: (T,).
void row_dots(const Dims& n, Heads<const float> out, Heads<const float> dout, std::size_t b,
              std::size_t h, float* D) {
  const float* oh = out.at(b, h);
  const float* doh = dout.at(b, h);
  for (std::size_t t = 0; t < n.T; ++t) {
    double sum = 0.0;
    for (std::size_t d = 0; d < n.hv; ++d)
      sum += static_cast<double>(doh[t * dout.row + d]) * static_cast<double>(oh[t * out.row + d]);
    D[t] = static_cast<float>(sum);
  }
}

// One row of P: p_j = exp(s_j - L) for the first `visible` of `cols` scores, 0 after them (and
// everywhere for a row that saw no finite score, L = -inf). Compiled for SSE2 and AVX2, like
// online_softmax_row: 8 exps per instruction on AVX2, the same bits as one at a time. Written in
// blocks of 8 as online_softmax_row is: GCC vectorises the 8 exps of a block (a plain loop over j
// stayed scalar, one exp at a time, and took a sixth of the backward's time).
ATTN_SIMD_CLONES void exp_row_minus(float* p, std::size_t visible, std::size_t cols, float L) {
  if (L == kNegInf) visible = 0;
  constexpr std::size_t W = 8;
  std::size_t j = 0;
  const detail::float8 shift = detail::splat8(L);
  for (; j + W <= visible; j += W) {
    detail::float8 e;
    std::memcpy(&e, p + j, sizeof e);
    e = detail::exp_nonpositive8(e - shift);
    std::memcpy(p + j, &e, sizeof e);
  }
  for (; j < visible; ++j) p[j] = detail::exp_nonpositive(p[j] - L);
  std::fill(p + visible, p + cols, 0.0f);
}

// One row of dS = P * (dP - D), in place over dP.
ATTN_SIMD_CLONES void ds_row(float* ds, const float* p, std::size_t cols, float D) {
  for (std::size_t j = 0; j < cols; ++j) ds[j] = p[j] * (ds[j] - D);
}

// P and dS of query tile [i0, i0 + rows) against key tile [j0, j0 + cols) of head (b, h), into
// p and ds ((rows, cols) each, row stride tile); 0 where masked.
void tile_p_and_ds(const Dims& n, const BackwardArgs& a, std::size_t b, std::size_t h,
                   std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols, float* p,
                   float* ds) {
  const std::size_t hs = n.hs, hv = n.hv, tile = n.tile;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const float* L = a.lse + (b * n.H + h) * n.T;
  const float* D = a.D + (b * n.H + h) * n.T;
  // 1. P = exp(q k^T / sqrt(hs) - L), 0 where masked: (rows, hs) @ (hs, cols)
  tile_gemm(rows, cols, hs, scale, a.q.at(b, h) + i0 * a.q.row, a.q.row, false,
            a.k.at(b, h) + j0 * a.k.row, a.k.row, true, 0.0f, p, tile);
  for (std::size_t r = 0; r < rows; ++r)
    exp_row_minus(p + r * tile, visible_keys(n.causal, i0 + r, j0, cols), cols, L[i0 + r]);
  // 2. dP = dO V^T: (rows, hv) @ (hv, cols) -> (rows, cols)
  tile_gemm(rows, cols, hv, 1.0f, a.dout.at(b, h) + i0 * a.dout.row, a.dout.row, false,
            a.v.at(b, h) + j0 * a.v.row, a.v.row, true, 0.0f, ds, tile);
  // 3. dS = P * (dP - D)
  for (std::size_t r = 0; r < rows; ++r) ds_row(ds + r * tile, p + r * tile, cols, D[i0 + r]);
}

// dQ += dS K / sqrt(hs) for one pair of tiles: (rows, cols) @ (cols, hs) -> (rows, hs)
void add_dq(const Dims& n, const BackwardArgs& a, std::size_t b, std::size_t h, std::size_t i0,
            std::size_t rows, std::size_t j0, std::size_t cols, const float* ds) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(n.hs));
  tile_gemm(rows, n.hs, cols, scale, ds, n.tile, false, a.k.at(b, h) + j0 * a.k.row, a.k.row, false,
            1.0f, a.dq.at(b, h) + i0 * a.dq.row, a.dq.row);
}

void zero_rows(Heads<float> t, std::size_t b, std::size_t h, std::size_t r0, std::size_t r1,
               std::size_t width) {
  for (std::size_t r = r0; r < r1; ++r) std::fill_n(t.at(b, h) + r * t.row, width, 0.0f);
}

// dK and dV of key tile [j0, j0 + cols) of head (b, h), over the query tiles in order; with_dq:
// dQ of each query tile gets this key tile's share too (the whole-heads split).
void key_tile_backward(const Dims& n, const BackwardArgs& a, std::size_t b, std::size_t h,
                       std::size_t j0, bool with_dq, float* scratch) {
  const std::size_t tile = n.tile, cols = std::min(tile, n.S - j0);
  const float scale = 1.0f / std::sqrt(static_cast<float>(n.hs));
  float* p = scratch;           // (tile, tile)
  float* ds = p + tile * tile;  // (tile, tile)
  zero_rows(a.dk, b, h, j0, j0 + cols, n.hs);
  zero_rows(a.dv, b, h, j0, j0 + cols, n.hv);
  // Causal: queries before j0 never saw these keys.
  for (std::size_t i0 = n.causal ? j0 : 0; i0 < n.T; i0 += tile) {
    const std::size_t rows = std::min(tile, n.T - i0);
    tile_p_and_ds(n, a, b, h, i0, rows, j0, cols, p, ds);
    // dV += P^T dO: (cols, rows) @ (rows, hv) -> (cols, hv)
    tile_gemm(cols, n.hv, rows, 1.0f, p, tile, true, a.dout.at(b, h) + i0 * a.dout.row, a.dout.row,
              false, 1.0f, a.dv.at(b, h) + j0 * a.dv.row, a.dv.row);
    if (with_dq) add_dq(n, a, b, h, i0, rows, j0, cols, ds);
    // dK += dS^T Q / sqrt(hs): (cols, rows) @ (rows, hs) -> (cols, hs)
    tile_gemm(cols, n.hs, rows, scale, ds, tile, true, a.q.at(b, h) + i0 * a.q.row, a.q.row, false,
              1.0f, a.dk.at(b, h) + j0 * a.dk.row, a.dk.row);
  }
}

// dQ of query tile [i0, i0 + rows) of head (b, h), over the key tiles it sees, in order.
void query_tile_dq(const Dims& n, const BackwardArgs& a, std::size_t b, std::size_t h,
                   std::size_t i0, float* scratch) {
  const std::size_t tile = n.tile, rows = std::min(tile, n.T - i0);
  float* p = scratch;
  float* ds = p + tile * tile;
  zero_rows(a.dq, b, h, i0, i0 + rows, n.hs);
  const std::size_t key_end = n.causal ? i0 + rows : n.S;
  for (std::size_t j0 = 0; j0 < key_end; j0 += tile) {
    const std::size_t cols = std::min(tile, n.S - j0);
    tile_p_and_ds(n, a, b, h, i0, rows, j0, cols, p, ds);
    add_dq(n, a, b, h, i0, rows, j0, cols, ds);
  }
}

// Whole heads per thread unless that leaves threads idle for long: the heaviest thread's share
// of whole heads (ceil(pairs / threads) heads of 5 products) against an even share of tiles
// (pairs / threads heads of 7 products).
bool split_into_tiles(std::size_t pairs, std::size_t threads) {
  const std::size_t heaviest = (pairs + threads - 1) / threads;
  return 5 * heaviest * threads > 7 * pairs;
}

// dq, dk, dv of every (b, h) over the library's threads, the same bits on any thread count.
void flash_backward(const Dims& dims, Heads<const float> q, Heads<const float> k,
                    Heads<const float> v, Heads<const float> out, Heads<const float> dout,
                    const float* lse, Heads<float> dq, Heads<float> dk, Heads<float> dv) {
  const Dims n = clamped(dims);
  const std::size_t pairs = n.B * n.H;
  if (pairs == 0 || n.T == 0) return;
  // 1. D = dO . O for every query: (B, H, T).
  std::vector<float> D(pairs * n.T);
  detail::run_parts(pairs, detail::worker_count(pairs),
                    [&](std::size_t begin, std::size_t end, std::size_t) {
                      for (std::size_t bh = begin; bh < end; ++bh)
                        row_dots(n, out, dout, bh / n.H, bh % n.H, D.data() + bh * n.T);
                    });
  const BackwardArgs a{q, k, v, dout, lse, D.data(), dq, dk, dv};
  const std::size_t key_tiles = (n.S + n.tile - 1) / n.tile;
  const std::size_t query_tiles = (n.T + n.tile - 1) / n.tile;
  const std::size_t threads = detail::worker_count(pairs * std::max(key_tiles, query_tiles));
  // Read in place from the (B, T, 3C) projection, rows of a head are 3C floats apart: as in
  // flash_forward, the rows a thread sweeps tile after tile (the queries' q, dO and dQ, or the
  // keys' k and v) are copied into contiguous rows of its scratch first, the same numbers.
  const bool gather =
      q.row != n.hs || k.row != n.hs || v.row != n.hv || dout.row != n.hv || dq.row != n.hs;
  const std::size_t per_thread = backward_scratch(n, gather);
  std::vector<float> scratch(threads * per_thread);
  float* base = scratch.data();
  // The args with the query side (q, dO; dQ with `dq_too`) of head (b, h) read from copies in
  // `rows` (T (2 hs + hv) floats).
  const auto query_copies = [&](std::size_t b, std::size_t h, float* rows, bool dq_too) {
    BackwardArgs c = a;
    gather_head(q, b, h, n.T, n.hs, rows);
    gather_head(dout, b, h, n.T, n.hv, rows + n.T * n.hs);
    c.q = one_head<const float>(rows, n.hs);
    c.dout = one_head<const float>(rows + n.T * n.hs, n.hv);
    if (dq_too) c.dq = one_head(rows + n.T * (n.hs + n.hv), n.hs);
    return c;
  };
  // 2a. Whole heads: dK, dV key tile by key tile, dQ accumulating on the way.
  if (!split_into_tiles(pairs, threads)) {
    const std::size_t parts = std::min(threads, pairs);
    detail::run_parts(pairs, parts, [&](std::size_t begin, std::size_t end, std::size_t part) {
      float* mine = base + part * per_thread;
      float* rows = mine + backward_scratch(n, false);
      for (std::size_t bh = begin; bh < end; ++bh) {
        const std::size_t b = bh / n.H, h = bh % n.H;
        const BackwardArgs c = gather ? query_copies(b, h, rows, /*dq_too=*/true) : a;
        zero_rows(c.dq, b, h, 0, n.T, n.hs);
        for (std::size_t j0 = 0; j0 < n.S; j0 += n.tile)
          key_tile_backward(n, c, b, h, j0, /*with_dq=*/true, mine);
        if (gather) scatter_head(c.dq.at(b, h), n.T, n.hs, dq, b, h);
      }
    });
    return;
  }
  // 2b. Tiles: dK, dV per (b, h, key tile), then dQ per (b, h, query tile). A thread copies the
  //     rows of a head once for its run of that head's items.
  const std::size_t key_items = pairs * key_tiles, query_items = pairs * query_tiles;
  detail::run_parts(key_items, std::min(threads, key_items),
                    [&](std::size_t begin, std::size_t end, std::size_t part) {
                      float* mine = base + part * per_thread;
                      float* rows = mine + backward_scratch(n, false);
                      BackwardArgs c = a;
                      std::size_t held = pairs;  // the (b, h) copied into `rows`: none yet
                      for (std::size_t item = begin; item < end; ++item) {
                        const std::size_t bh = item / key_tiles, b = bh / n.H, h = bh % n.H;
                        const std::size_t j0 = interleaved(item % key_tiles, key_tiles) * n.tile;
                        if (gather && bh != held) {
                          c = query_copies(b, h, rows, /*dq_too=*/false);
                          held = bh;
                        }
                        key_tile_backward(n, c, b, h, j0, /*with_dq=*/false, mine);
                      }
                    });
  detail::run_parts(query_items, std::min(threads, query_items),
                    [&](std::size_t begin, std::size_t end, std::size_t part) {
                      float* mine = base + part * per_thread;
                      float* rows = mine + backward_scratch(n, false);
                      BackwardArgs c = a;
                      std::size_t held = pairs;
                      for (std::size_t item = begin; item < end; ++item) {
                        const std::size_t bh = item / query_tiles, b = bh / n.H, h = bh % n.H;
                        const std::size_t i0 =
                            interleaved(item % query_tiles, query_tiles) * n.tile;
                        if (gather && bh != held) {
                          gather_head(k, b, h, n.S, n.hs, rows);
                          gather_head(v, b, h, n.S, n.hv, rows + n.S * n.hs);
                          c.k = one_head<const float>(rows, n.hs);
                          c.v = one_head<const float>(rows + n.S * n.hs, n.hv);
                          held = bh;
                        }
                        query_tile_dq(n, c, b, h, i0, mine);
                      }
                    });
}

void check_sizes(const char* fn, const Dims& n, std::initializer_list<std::size_t> strides) {
  check_tile(fn, n.tile);
  for (std::size_t size : {n.T, n.S, n.hs, n.hv}) check_blas_size(fn, size);
  for (std::size_t size : strides) check_blas_size(fn, size);
}

template <std::size_t N>
void ensure_shape(Tensor<N>& t, const std::array<std::size_t, N>& shape) {
  if (!std::equal(shape.begin(), shape.end(), t.shape().begin())) t.resize(shape);
}

// 1. q | k | v = x @ w_q | w_k | w_v into a (B, T, 3C) buffer: (B, T, C) @ (C, C) -> (B, T, C) x 3
void project_qkv(const Tensor<3>& x, const MhaWeights& w, float* qkv) {
  const std::size_t rows = x.shape()[0] * x.shape()[1], C = x.shape()[2];
  gemm_strided(rows, C, C, 1.0f, x.data(), C, false, w.w_q.data(), C, false, 0.0f, qkv, 3 * C);
  gemm_strided(rows, C, C, 1.0f, x.data(), C, false, w.w_k.data(), C, false, 0.0f, qkv + C, 3 * C);
  gemm_strided(rows, C, C, 1.0f, x.data(), C, false, w.w_v.data(), C, false, 0.0f, qkv + 2 * C,
               3 * C);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------

FlashResult flash_attention(const Tensor<4>& q, const Tensor<4>& k, const Tensor<4>& v, bool causal,
                            std::size_t tile) {
  const char* fn = "attn::fast::flash_attention";
  detail::check_sdpa(fn, q, k, v, causal);
  const auto& qs = q.shape();  // (B, H, T, hs)
  const Dims n{qs[0], qs[1], qs[2], k.shape()[2], qs[3], v.shape()[3], tile, causal};
  check_sizes(fn, n, {});
  FlashResult r{Tensor<4>(Tensor<4>::shape_type{n.B, n.H, n.T, n.hv}),
                Tensor<3>(Tensor<3>::shape_type{n.B, n.H, n.T})};
  flash_forward(n, contiguous(q.data(), n.H, n.T, n.hs), contiguous(k.data(), n.H, n.S, n.hs),
                contiguous(v.data(), n.H, n.S, n.hv), contiguous(r.out.data(), n.H, n.T, n.hv),
                r.lse.data());
  return r;
}

AttentionGrads flash_attention_backward(const Tensor<4>& dout, const Tensor<4>& q,
                                        const Tensor<4>& k, const Tensor<4>& v,
                                        const Tensor<4>& out, const Tensor<3>& lse, bool causal,
                                        std::size_t tile) {
  const char* fn = "attn::fast::flash_attention_backward";
  detail::check_sdpa(fn, q, k, v, causal);
  const auto& qs = q.shape();
  const Dims n{qs[0], qs[1], qs[2], k.shape()[2], qs[3], v.shape()[3], tile, causal};
  const std::array<std::size_t, 4> o_shape{n.B, n.H, n.T, n.hv};
  const std::array<std::size_t, 3> l_shape{n.B, n.H, n.T};
  if (!std::equal(o_shape.begin(), o_shape.end(), out.shape().begin()) ||
      !std::equal(o_shape.begin(), o_shape.end(), dout.shape().begin()) ||
      !std::equal(l_shape.begin(), l_shape.end(), lse.shape().begin())) {
    shape_error(
        fn,
        "out and dout " + shape_str(o_shape) + ", lse " + shape_str(l_shape) + " (the forward's)",
        "out " + shape_str(out.shape()) + ", dout " + shape_str(dout.shape()) + ", lse " +
            shape_str(lse.shape()));
  }
  check_sizes(fn, n, {});
  // Zeros: with T = 0 no query reaches the keys, and their dk, dv stay 0.
  AttentionGrads g{xt::zeros<float>(qs), xt::zeros<float>(k.shape()), xt::zeros<float>(v.shape())};
  flash_backward(n, contiguous(q.data(), n.H, n.T, n.hs), contiguous(k.data(), n.H, n.S, n.hs),
                 contiguous(v.data(), n.H, n.S, n.hv), contiguous(out.data(), n.H, n.T, n.hv),
                 contiguous(dout.data(), n.H, n.T, n.hv), lse.data(),
                 contiguous(g.dq.data(), n.H, n.T, n.hs), contiguous(g.dk.data(), n.H, n.S, n.hs),
                 contiguous(g.dv.data(), n.H, n.S, n.hv));
  return g;
}

Tensor<3> mha_flash_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads,
                            bool causal, std::size_t tile) {
  const char* fn = "attn::fast::mha_flash_forward";
  detail::check_mha(fn, x, w, n_heads, /*allow_no_proj=*/true);
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  const Dims n{B, n_heads, T, T, C / n_heads, C / n_heads, tile, causal};
  check_sizes(fn, n, {3 * C});
  // 1. Projections into one (B, T, 3C) buffer [q | k | v].
  Tensor<3> qkv(Tensor<3>::shape_type{B, T, 3 * C});
  project_qkv(x, w, qkv.data());
  // 2-3. Heads read in place; each query tile's output is written over its own q rows once they
  //      have been read for the last time (the tile's last key tile), which saves a (B, T, C)
  //      buffer: merged heads land in the q columns.
  float* qp = qkv.data();
  flash_forward(
      n, columns<const float>(qp, T, 3 * C, n.hs), columns<const float>(qp + C, T, 3 * C, n.hs),
      columns<const float>(qp + 2 * C, T, 3 * C, n.hs), columns(qp, T, 3 * C, n.hs), nullptr);
  // 4. Output projection (B, T, C) @ (C, C) -> (B, T, C), or the merged heads without w_o.
  Tensor<3> out(Tensor<3>::shape_type{B, T, C});
  if (w.w_o.size() == 0) {
    for (std::size_t r = 0; r < B * T; ++r)
      std::copy(qp + r * 3 * C, qp + r * 3 * C + C, out.data() + r * C);
    return out;
  }
  gemm_strided(B * T, C, C, 1.0f, qp, 3 * C, false, w.w_o.data(), C, false, 0.0f, out.data(), C);
  return out;
}

void flash_mha_attend(const char* fn, std::size_t B, std::size_t T, std::size_t C, std::size_t H,
                      bool causal, const float* qkv, float* heads, float* lse, std::size_t tile) {
  const Dims n{B, H, T, T, C / H, C / H, tile, causal};
  check_sizes(fn, n, {3 * C});
  flash_forward(n, columns<const float>(qkv, T, 3 * C, n.hs),
                columns<const float>(qkv + C, T, 3 * C, n.hs),
                columns<const float>(qkv + 2 * C, T, 3 * C, n.hs), columns(heads, T, C, n.hs), lse);
}

void flash_mha_attend_backward(const char* fn, std::size_t B, std::size_t T, std::size_t C,
                               std::size_t H, bool causal, const float* qkv, const float* heads,
                               const float* dheads, const float* lse, float* dqkv,
                               std::size_t tile) {
  const Dims n{B, H, T, T, C / H, C / H, tile, causal};
  check_sizes(fn, n, {3 * C});
  flash_backward(
      n, columns<const float>(qkv, T, 3 * C, n.hs), columns<const float>(qkv + C, T, 3 * C, n.hs),
      columns<const float>(qkv + 2 * C, T, 3 * C, n.hs), columns<const float>(heads, T, C, n.hs),
      columns<const float>(dheads, T, C, n.hs), lse, columns(dqkv, T, 3 * C, n.hs),
      columns(dqkv + C, T, 3 * C, n.hs), columns(dqkv + 2 * C, T, 3 * C, n.hs));
}

Tensor<3> mha_flash_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads,
                            bool causal, FlashMhaCache& cache, std::size_t tile) {
  const char* fn = "attn::fast::mha_flash_forward";
  detail::check_mha(fn, x, w, n_heads, /*allow_no_proj=*/true);
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2], H = n_heads;
  check_tile(fn, tile);
  ensure_shape<3>(cache.qkv, {B, T, 3 * C});
  ensure_shape<3>(cache.heads, {B, T, C});
  ensure_shape<3>(cache.lse, {B, H, T});
  if (&x != &cache.x) cache.x = x;
  project_qkv(x, w, cache.qkv.data());
  flash_mha_attend(fn, B, T, C, H, causal, cache.qkv.data(), cache.heads.data(), cache.lse.data(),
                   tile);
  if (w.w_o.size() == 0) return cache.heads;
  Tensor<3> out(Tensor<3>::shape_type{B, T, C});
  gemm_strided(B * T, C, C, 1.0f, cache.heads.data(), C, false, w.w_o.data(), C, false, 0.0f,
               out.data(), C);
  return out;
}

void mha_flash_backward(const Tensor<3>& dout, const FlashMhaCache& cache, const MhaWeights& w,
                        std::size_t n_heads, bool causal, Tensor<3>& dx, MhaWeights& grads,
                        std::size_t tile) {
  const char* fn = "attn::fast::mha_flash_backward";
  detail::check_mha_backward(fn, dout, cache.x, w, n_heads, grads);
  const std::size_t B = cache.x.shape()[0], T = cache.x.shape()[1], C = cache.x.shape()[2];
  const std::size_t H = n_heads, rows = B * T;
  if (cache.qkv.size() != rows * 3 * C || cache.heads.size() != rows * C ||
      cache.lse.size() != B * H * T) {
    shape_error(fn,
                "a cache filled by mha_flash_forward(..., cache) for x " +
                    shape_str(cache.x.shape()) + " and " + std::to_string(H) + " heads",
                "lse " + shape_str(cache.lse.shape()));
  }
  check_tile(fn, tile);
  const bool proj = w.w_o.size() != 0;
  ensure_shape<3>(dx, {B, T, C});
  std::vector<float> dqkv(rows * 3 * C);  // (B, T, 3C) dq | dk | dv, the layout of qkv
  std::vector<float> dh;
  const float* dheads = dout.data();
  // 1. out = heads @ w_o: dheads = dout @ w_o^T (B*T, C) @ (C, C); dw_o += heads^T @ dout.
  if (proj) {
    dh.resize(rows * C);
    gemm(rows, C, C, 1.0f, dout.data(), false, w.w_o.data(), true, 0.0f, dh.data());
    gemm(C, C, rows, 1.0f, cache.heads.data(), true, dout.data(), false, 1.0f, grads.w_o.data());
    dheads = dh.data();
  }
  // 2. The flash backward per head, read and written in place in the column blocks.
  float* dp = dqkv.data();
  flash_mha_attend_backward(fn, B, T, C, H, causal, cache.qkv.data(), cache.heads.data(), dheads,
                            cache.lse.data(), dp, tile);
  // 3. The projections: dw_q += x^T @ dq (C, B*T) @ (B*T, C); dx = sum dq @ w_q^T.
  const Matrix* weights[3] = {&w.w_q, &w.w_k, &w.w_v};
  Matrix* dweights[3] = {&grads.w_q, &grads.w_k, &grads.w_v};
  for (std::size_t i = 0; i < 3; ++i) {
    gemm_strided(C, C, rows, 1.0f, cache.x.data(), C, /*trans_a=*/true, dp + i * C, 3 * C, false,
                 1.0f, dweights[i]->data(), C);
    gemm_strided(rows, C, C, 1.0f, dp + i * C, 3 * C, false, weights[i]->data(), C,
                 /*trans_b=*/true, i == 0 ? 0.0f : 1.0f, dx.data(), C);
  }
}

double attention_forward_flops(std::size_t B, std::size_t H, std::size_t T, std::size_t S,
                               std::size_t hs, bool causal) {
  // Two products of (T, hs) x (hs, S): 2 * 2 * T * S * hs; causal: T (T + 1) / 2 pairs.
  const double pairs = causal ? static_cast<double>(T) * (static_cast<double>(T) + 1.0) / 2.0
                              : static_cast<double>(T) * static_cast<double>(S);
  return 4.0 * static_cast<double>(B) * static_cast<double>(H) * pairs * static_cast<double>(hs);
}

double attention_backward_flops(std::size_t B, std::size_t H, std::size_t T, std::size_t S,
                                std::size_t hs, bool causal) {
  // Five products per visible pair: S again, dV, dP, dQ, dK.
  return 2.5 * attention_forward_flops(B, H, T, S, hs, causal);
}

}  // namespace attn::fast
