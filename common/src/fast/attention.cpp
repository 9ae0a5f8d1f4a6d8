// fast/attention.cpp: scaled dot-product attention and multi-head attention on the model's fast
// path (every transformer block of chapters 06-10, the training step, the KV cache). The math is
// the reference's (ops/attention.cpp, pages 04, 05 and 08); here one kernel does the work for all
// entry points: per (batch, head), scores = q k^T / sqrt(hs) by one product, a stable row softmax
// on raw pointers, then weights @ v by a second product. The products are BLAS GEMMs, or for
// small heads the hand-written loops of head_products.hpp (small_heads() below). Tested equal to
// the reference (tests/common/test_fast_layernorm_attention.cpp).
// Scratch comes from the caller's fast::Workspace (workspace.hpp), passed down to every helper:
// ws.per_thread for each thread's block of scores, ws.buffer for the backward's dq | dk | dv,
// ws.angles for RoPE. The entry points that return new tensors make their own per call; the
// training forward and backward use the one the block or the model owns.
#include "attn/fast/attention.hpp"

#include <cblas.h>  // OpenBLAS's; only .cpp files include it (target attn_openblas)

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/fast/flash.hpp"
#include "attn/fast/gemm.hpp"
#include "attn/fast/gqa.hpp"
#include "attn/fast/linear.hpp"  // bias_backward_strided
#include "attn/fast/rope.hpp"
#include "attn/ops/attention_ref.hpp"  // score_slope
#include "../ops/attention_checks.hpp"
#include "attn/fast/exp_nonpositive.hpp"
#include "flash_mha.hpp"
#include "head_products.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/simd.hpp"

namespace attn::fast {

namespace {

// ---------------------------------------------------------------------------------------------
// The kernel
// ---------------------------------------------------------------------------------------------

// Where head h of batch b starts and how far apart its rows are, in floats. The same kernel
// then reads a contiguous (B, H, T, hs) tensor (scaled_dot_product_attention) or the column
// blocks of a (B, T, C) projection in place (mha_forward): head h of position t is the hs floats
// at column h*hs of row t, and BLAS only needs to be told that rows are C floats apart (its
// "leading dimension"). So multi-head attention never copies q, k, v into (B, H, T, hs) and
// never copies the heads back: split and merge cost nothing.
template <class F>
struct Heads {
  F* data;
  std::size_t batch_stride;  // from batch b to b + 1
  std::size_t head_stride;   // from head h to h + 1
  std::size_t row_stride;    // from position t to t + 1 (the BLAS leading dimension)
  // Grouped-query attention (chapter 11): query head h reads K/V head h / group, so `group`
  // query heads share one stored head. 1 for q, the output, and multi-head attention.
  std::size_t group = 1;
  F* at(std::size_t b, std::size_t h) const {
    return data + b * batch_stride + (h / group) * head_stride;
  }
};

// A contiguous (B, H, rows, width) tensor.
template <class F>
Heads<F> contiguous_heads(F* data, std::size_t H, std::size_t rows, std::size_t width) {
  return {data, H * rows * width, rows * width, width};
}

// The H column blocks of width hs of a (B, rows, row_width) tensor, starting at `data` (an offset
// into the row selects q, k or v of a fused (B, T, 3C) projection).
template <class F>
Heads<F> column_heads(F* data, std::size_t rows, std::size_t row_width, std::size_t hs) {
  return {data, rows * row_width, hs, row_width};
}

struct Sizes {
  std::size_t B, H, T, S, hs, hv;  // q (B,H,T,hs), k (B,H,S,hs), v (B,H,S,hv)
  // A sliding window W (chapter 11; needs causal): query t sees keys t-W+1..t. 0 = none.
  std::size_t window = 0;
  // The score-level parts' bias (ScoreBias: slopes and positions), or none: added to the visible
  // scores before the softmax (the weights keep it; the backward, which reads the weights, needs
  // nothing else).
  ScoreBias bias = {};
};

// Adds the bias of head h's query row t to the scores row[first, end): -m (p - j), computed as
// it goes (the distance steps down by 1 per key, exactly in double), rounded to float as
// attn::alibi_bias<float> rounds it.
inline void add_bias(const Sizes& n, std::size_t h, std::size_t t, float* row, std::size_t first,
                     std::size_t end) {
  const ScoreBias& b = n.bias;
  const double m = score_slope(b.parts, h * b.head + t * b.row, b.n_heads);
  const std::size_t p = b.query + t * b.step;
  // Keys up to p stand at their own index; in a ring, the slots after p hold positions `ring`
  // earlier (slot j: p - j + ring), elsewhere keys after p are in the future (p - j < 0).
  const std::size_t split = b.ring != 0 ? std::clamp(p + 1, first, end) : end;
  double distance = static_cast<double>(p) - static_cast<double>(first);
  for (std::size_t j = first; j < split; ++j, distance -= 1.0)
    row[j] += static_cast<float>(-m * distance);
  distance += static_cast<double>(b.ring);
  for (std::size_t j = split; j < end; ++j, distance -= 1.0)
    row[j] += static_cast<float>(-m * distance);
}

// The first key query t may see: t - W + 1 with a window W (never below 0), else 0.
std::size_t first_key(const Sizes& n, std::size_t t) {
  return n.window != 0 && t + 1 > n.window ? t + 1 - n.window : 0;
}
// One past the last query that sees any of keys 0..j1-1: with a window W, query t sees key j
// when t < j + W, so queries from j1 - 1 + W on see none of them. Else all T.
std::size_t last_query(const Sizes& n, std::size_t j1) {
  return n.window != 0 ? std::min(n.T, j1 - 1 + n.window) : n.T;
}
// The first key a block of queries starting at i0 needs: its first row's. The hand-written
// products work on 16 keys at a time from a multiple of 16, so for them it is rounded down.
std::size_t first_block_key(const Sizes& n, std::size_t i0, bool small) {
  const std::size_t lo = first_key(n, i0);
  return small ? lo / 16 * 16 : lo;
}

int blas_int(std::size_t n) {
  // The message is built only on failure: this runs for every GEMM, and chapter 10's generation
  // loop must not allocate per token.
  if (n > static_cast<std::size_t>(INT_MAX)) {
    require(false, "attn::attention (BLAS)",
            [&] { return "size " + std::to_string(n) + " is too large for BLAS (int)"; });
  }
  return static_cast<int>(n);
}

// The kernel's GEMMs, inside a worker thread: c (M, N) = alpha * a (M, K) @ op(b) (K, N), with
// explicit row strides (leading dimensions), straight to BLAS (sizes checked by attend()).
// op(b) = b^T when b is stored (N, K). Callers guarantee K >= 1.
void head_gemm(std::size_t M, std::size_t N, std::size_t K, float alpha, const float* a,
               std::size_t lda, const float* b, std::size_t ldb, bool trans_b, float* c,
               std::size_t ldc) {
  if (M == 0 || N == 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, blas_int(M),
              blas_int(N), blas_int(K), alpha, a, blas_int(lda), b, blas_int(ldb), 0.0f, c,
              blas_int(ldc));
}

// ---------------------------------------------------------------------------------------------
// The row softmax of the kernel
// ---------------------------------------------------------------------------------------------
// Same math as attn::softmax_rows (softmax.hpp), written for speed: exp is most of the cost of
// attention that is not a GEMM (one exp per visible score), and libm's expf is a function call
// the compiler cannot vectorise. The loops below work in chunks of 8 with no branches, so that
// g++ -O2 turns each chunk into SIMD instructions (SSE2 on any x86-64).

// softmax_row is compiled for SSE2 and for AVX2 (ATTN_SIMD_CLONES, simd.hpp): same results.
// softmax over row[0, n) in place (n >= 1). Masked entries are never passed in.
ATTN_SIMD_CLONES void softmax_row(float* row, std::size_t n) {
  constexpr std::size_t W = 8;  // chunk width: two SSE registers, one AVX register
  std::size_t j = 0;
  // 1. m = max_j z_j, so every exponent below is <= 0 and exp cannot overflow. (A NaN score
  //    never wins a comparison; it still turns its row into NaN through exp and the sum.)
  float mx[W];
  for (std::size_t u = 0; u < W; ++u) mx[u] = row[0];
  for (; j + W <= n; j += W)
    for (std::size_t u = 0; u < W; ++u) mx[u] = row[j + u] > mx[u] ? row[j + u] : mx[u];
  float m = row[0];
  for (; j < n; ++j) m = row[j] > m ? row[j] : m;
  for (std::size_t u = 0; u < W; ++u) m = mx[u] > m ? mx[u] : m;
  // 2. A row of -inf scores (only possible from infinite inputs) has no distribution: zeros,
  //    as attn::softmax_rows defines it.
  if (m == -std::numeric_limits<float>::infinity()) {
    std::fill(row, row + n, 0.0f);
    return;
  }
  // 3. e_j = exp(z_j - m), and their sum (8 partial sums, then added up).
  float partial[W] = {};
  for (j = 0; j + W <= n; j += W)
    for (std::size_t u = 0; u < W; ++u) {
      row[j + u] = detail::exp_nonpositive(row[j + u] - m);
      partial[u] += row[j + u];
    }
  float sum = 0.0f;
  for (; j < n; ++j) {
    row[j] = detail::exp_nonpositive(row[j] - m);
    sum += row[j];
  }
  for (std::size_t u = 0; u < W; ++u) sum += partial[u];
  // 4. Normalise: the largest term is exp(0) = 1, so sum >= 1 and 1 / sum is safe.
  const float inv = 1.0f / sum;
  for (j = 0; j + W <= n; j += W)
    for (std::size_t u = 0; u < W; ++u) row[j + u] *= inv;
  for (; j < n; ++j) row[j] *= inv;
}

// Queries are processed kRowBlock at a time. For causal attention, block [i0, i1) only needs
// keys 0..i1-1, so the GEMMs skip (almost) the whole masked upper triangle: about half the
// work for long sequences. The block of scores (kRowBlock, S) also stays in cache between the
// softmax and the second GEMM.
constexpr std::size_t kRowBlock = 64;

// Small heads skip BLAS: head_products.hpp. Decided by the shapes alone, so a given shape is
// always computed the same way, on any thread count.
bool small_heads(const Sizes& n) {
  return n.hs % 8 == 0 && n.hv % 8 == 0 && n.hs <= detail::kMaxHeadProductWidth &&
         n.hv <= detail::kMaxHeadProductWidth && n.S <= detail::kMaxHeadProductKeys;
}

// Floats of scratch attend_range needs: the block of scores unless the weights are kept, then
// k^T for the small-head products. Enough for any smaller T and S too (chapter 10 sizes one
// scratch for T_max): the k^T part counts min(S, kMaxHeadProductKeys) keys.
std::size_t attend_scratch_floats(const Sizes& n, bool keep_weights) {
  const std::size_t scores = keep_weights ? 0 : std::min(kRowBlock, n.T) * n.S;
  const Sizes most_keys{n.B, n.H, n.T, std::min(n.S, detail::kMaxHeadProductKeys), n.hs, n.hs};
  return scores + (small_heads(most_keys) ? n.hs * detail::padded_columns(most_keys.S) : 0);
}

// out = softmax(q k^T / sqrt(hs) + mask) v for the (b, h) pairs bh_begin..bh_end-1 (pair
// number b * H + h). weights: (B, H, T, S) to fill, or nullptr to keep only a block of scores
// at a time in `scratch` (attend_scratch_floats(n, weights != nullptr) floats, never returned).
void attend_range(const Sizes& n, Heads<const float> q, Heads<const float> k, Heads<const float> v,
                  Heads<float> out, bool causal, float* weights, std::size_t bh_begin,
                  std::size_t bh_end, float* scratch) {
  const std::size_t T = n.T, S = n.S, hs = n.hs, hv = n.hv;
  // Why 1/sqrt(hs): with q and k of unit-variance entries, q . k is a sum of hs products and has
  // variance hs. Dividing by sqrt(hs) brings the scores back to variance 1 whatever the head
  // size, so softmax stays soft instead of saturating into a one-hot (and vanishing gradients).
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const bool small = small_heads(n);
  float* kt = scratch + (weights != nullptr ? 0 : std::min(kRowBlock, T) * S);  // small: k^T
  const std::size_t ldt = detail::padded_columns(S);
  for (std::size_t bh = bh_begin; bh < bh_end; ++bh) {
    const std::size_t b = bh / n.H, h = bh % n.H;
    const float* qh = q.at(b, h);  // (T, hs), rows q.row_stride apart
    const float* kh = k.at(b, h);  // (S, hs)
    const float* vh = v.at(b, h);  // (S, hv)
    float* oh = out.at(b, h);      // (T, hv)
    float* wh = weights != nullptr ? weights + bh * T * S : nullptr;        // (T, S)
    if (small) detail::transpose_padded(kh, k.row_stride, S, hs, kt, ldt);  // (hs, S)
    for (std::size_t i0 = 0; i0 < T; i0 += kRowBlock) {
      const std::size_t i1 = std::min(T, i0 + kRowBlock);
      const std::size_t rows = i1 - i0;
      // Keys this block can see: all S, or with the causal mask keys 0..i1-1 only; with a
      // window, from key lo on (the blocks of keys before it are skipped).
      const std::size_t keys = causal ? i1 : S;
      const std::size_t lo = first_block_key(n, i0, small);
      float* sc = wh != nullptr ? wh + i0 * S : scratch;  // (rows, S), row stride S
      // 1. Scores, scaled as they are written: (rows, hs) @ (hs, keys - lo) -> (rows, keys - lo)
      if (small) {
        detail::rows_times_transposed(rows, S - lo, hs, scale, qh + i0 * q.row_stride, q.row_stride,
                                      kt + lo, ldt, causal, i0 - lo, sc + lo, S);
      } else {
        head_gemm(rows, keys - lo, hs, scale, qh + i0 * q.row_stride, q.row_stride,
                  kh + lo * k.row_stride, k.row_stride, /*trans_b=*/true, sc + lo, S);
      }
      // 2. Mask and softmax each row. Query t may see keys 0..t: softmax over those t+1 scores
      //    only (subtracting the row max keeps exp from overflowing), and the masked entries
      //    are written as exactly 0, never computed: the scores above the diagonal the product
      //    produced in this block are simply overwritten. Same weights as adding a -inf mask
      //    before the softmax, without exp-ing the future.
      //    With a window, query t sees keys first_key(t)..t only: the keys before are zeros
      //    too (from column lo on; the kept weights get the whole row).
      if (causal) {
        // Without kept weights, only columns lo..keys-1 are read by the product below.
        const std::size_t row_end = wh != nullptr ? S : keys;
        const std::size_t row_begin = wh != nullptr ? 0 : lo;
        for (std::size_t r = 0; r < rows; ++r) {
          float* row = sc + r * S;  // (S,)
          const std::size_t first = first_key(n, i0 + r), visible = i0 + r + 1;
          if (n.bias.parts.any()) add_bias(n, h, i0 + r, row, first, visible);
          softmax_row(row + first, visible - first);
          std::fill(row + row_begin, row + first, 0.0f);
          std::fill(row + visible, row + row_end, 0.0f);
        }
      } else {
        for (std::size_t r = 0; r < rows; ++r) {
          if (n.bias.parts.any()) add_bias(n, h, i0 + r, sc + r * S, 0, S);
          softmax_row(sc + r * S, S);  // each sums to 1
        }
      }
      // 3. Weighted sum of the values: (rows, keys) @ (keys, hv) -> (rows, hv), written
      //    straight into the output rows of this head.
      //    (rows, keys - lo) @ (keys - lo, hv) with a window.
      if (small) {
        detail::weights_times_rows(rows, S - lo, hv, 1.0f, sc + lo, S, vh + lo * v.row_stride,
                                   v.row_stride, causal, i0 - lo, oh + i0 * out.row_stride,
                                   out.row_stride);
      } else {
        head_gemm(rows, hv, keys - lo, 1.0f, sc + lo, S, vh + lo * v.row_stride, v.row_stride,
                  /*trans_b=*/false, oh + i0 * out.row_stride, out.row_stride);
      }
    }
  }
}

// All (b, h) pairs. They are independent, so they are split between attn::num_threads()
// threads (parallel.hpp), each running whole heads with single-threaded GEMMs. A pair is
// computed the same way whichever thread runs it.
void attend(const Sizes& n, Heads<const float> q, Heads<const float> k, Heads<const float> v,
            Heads<float> out, bool causal, float* weights, Workspace& ws) {
  // Every size handed to BLAS is checked here, so nothing can throw inside a worker thread.
  for (std::size_t size :
       {n.T, n.S, n.hs, n.hv, q.row_stride, k.row_stride, v.row_stride, out.row_stride})
    blas_int(size);
  const std::size_t pairs = n.B * n.H;
  const std::size_t n_threads = detail::worker_count(pairs);
  // One scratch per thread (attend_scratch_floats), slices of the caller's ws.per_thread.
  const std::size_t scratch_size = attend_scratch_floats(n, weights != nullptr);
  float* base = at_least(ws.per_thread, n_threads * scratch_size);
  detail::run_parts(pairs, n_threads, [&](std::size_t begin, std::size_t end, std::size_t part) {
    attend_range(n, q, k, v, out, causal, weights, begin, end, base + part * scratch_size);
  });
}

// ---------------------------------------------------------------------------------------------
// Multi-head attention
// ---------------------------------------------------------------------------------------------

// Steps 2-4 of every multi-head variant. q: (B, T, C) inside rows of q_width floats (C, or 3C
// in a (B, T, 3C) projection buffer); k, v: (B, S, C) inside rows of kv_width floats.
// Overwrites q's columns with the merged heads' outputs, then projects them with w_o.
MhaResult attend_heads_and_project(float* q, std::size_t q_width, const float* k, const float* v,
                                   std::size_t kv_width, std::size_t B, std::size_t T,
                                   std::size_t S, std::size_t C, std::size_t H, const Matrix& w_o,
                                   bool causal, bool need_weights, Workspace& ws,
                                   std::size_t KV = 0, std::size_t window = 0,
                                   ScoreBias bias = {}) {
  const std::size_t hs = C / H;
  // Grouped-query attention (KV < H): K/V head h / (H / KV) serves query head h.
  const std::size_t group = KV == 0 ? 1 : H / KV;
  Heads<const float> k_heads = column_heads(k, S, kv_width, hs);
  Heads<const float> v_heads = column_heads(v, S, kv_width, hs);
  k_heads.group = v_heads.group = group;
  Sizes n{B, H, T, S, hs, hs};
  n.window = window;
  n.bias = bias;
  MhaResult result;
  result.weights = need_weights ? Tensor<4>(Tensor<4>::shape_type{B, H, T, S})
                                : Tensor<4>(Tensor<4>::shape_type{0, 0, 0, 0});
  // 2. Split into heads: a view, not a copy. Head h reads columns [h*hs, (h+1)*hs) of each row,
  //    which is exactly what PyTorch's view(B, T, H, hs).transpose(1, 2) selects.
  //    (B, T, C) -> (B, H, T, hs) and (B, S, C) -> (B, H, S, hs)
  // 3. Attention for every head. Head h writes its (T, hs) output into its own column block of
  //    the (B, T, C) merged result, so merging the heads is done by where we write. And we write
  //    it over q itself: each block of query rows of a head is read once, by the scores GEMM,
  //    before the output of the same rows is written, so q's memory is free to reuse. That saves
  //    a (B, T, C) buffer, and with it page faults on every call.
  //    (B, H, T, hs) @ (B, H, hs, S) -> (B, H, T, S);  (B, H, T, S) @ (B, H, S, hs) -> (B, H, T,
  //    hs) then (B, H, T, hs) -> (B, T, C), in place of q.
  attend(n, column_heads<const float>(q, T, q_width, hs), k_heads, v_heads,
         column_heads(q, T, q_width, hs), causal, need_weights ? result.weights.data() : nullptr,
         ws);
  // 4. Output projection mixes the heads: (B, T, C) @ (C, C) -> (B, T, C). Without w_o (an
  //    empty matrix: the attention-only variant) the output is the merged heads themselves.
  result.out = Tensor<3>(Tensor<3>::shape_type{B, T, C});
  if (w_o.size() == 0) {
    for (std::size_t r = 0; r < B * T; ++r)
      std::copy(q + r * q_width, q + r * q_width + C, result.out.data() + r * C);
    return result;
  }
  gemm_strided(B * T, C, C, 1.0f, q, q_width, false, w_o.data(), C, false, 0.0f, result.out.data(),
               C);
  return result;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Scaled dot-product attention
// ---------------------------------------------------------------------------------------------

AttentionResult scaled_dot_product_attention(const Tensor<4>& q, const Tensor<4>& k,
                                             const Tensor<4>& v, bool causal, bool need_weights) {
  detail::check_sdpa("attn::scaled_dot_product_attention", q, k, v, causal);
  const auto& qs = q.shape();  // (B, H, T, hs)
  const auto& ks = k.shape();  // (B, H, S, hs)
  const auto& vs = v.shape();  // (B, H, S, hv)
  const Sizes n{qs[0], qs[1], qs[2], ks[2], qs[3], vs[3]};
  AttentionResult result;
  // Long sequences without the weights: the flash kernel (fast/flash.cpp), memory O(T * hs).
  if (!need_weights && n.T >= kFlashMinT) {
    result.out = flash_attention(q, k, v, causal).out;
    result.weights = Tensor<4>(Tensor<4>::shape_type{0, 0, 0, 0});
    return result;
  }
  result.out = Tensor<4>(Tensor<4>::shape_type{n.B, n.H, n.T, n.hv});  // fully written
  result.weights = need_weights ? Tensor<4>(Tensor<4>::shape_type{n.B, n.H, n.T, n.S})
                                : Tensor<4>(Tensor<4>::shape_type{0, 0, 0, 0});
  // softmax(q k^T / sqrt(hs) + mask) v, one (b, h) at a time:
  //   (B, H, T, hs) @ (B, H, hs, S) -> (B, H, T, S);  (B, H, T, S) @ (B, H, S, hv) -> (B, H, T, hv)
  Workspace ws;  // this call's scratch, allocated with its results
  attend(n, contiguous_heads(q.data(), n.H, n.T, n.hs), contiguous_heads(k.data(), n.H, n.S, n.hs),
         contiguous_heads(v.data(), n.H, n.S, n.hv),
         contiguous_heads(result.out.data(), n.H, n.T, n.hv), causal,
         need_weights ? result.weights.data() : nullptr, ws);
  return result;
}

// ---------------------------------------------------------------------------------------------
// Multi-head attention
// ---------------------------------------------------------------------------------------------

MhaResult mha_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads, bool causal,
                      bool need_weights) {
  detail::check_mha("attn::mha_forward", x, w, n_heads, /*allow_no_proj=*/true);
  // With attention biases (GPT-2): the training forward's steps, which add them.
  if (w.b_q.size() + w.b_k.size() + w.b_v.size() + w.b_o.size() != 0) {
    GqaConfig config;
    config.n_heads = config.n_kv_heads = n_heads;
    config.causal = causal;
    return gqa_forward(x, w, config, need_weights);
  }
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  // Long sequences without the weights: the flash kernel (fast/flash.cpp), memory O(T * C).
  if (!need_weights && T >= kFlashMinT) {
    return {mha_flash_forward(x, w, n_heads, causal), Tensor<4>(Tensor<4>::shape_type{0, 0, 0, 0})};
  }
  // 1. Projections, one GEMM each over all B*T rows: (B, T, C) @ (C, C) -> (B, T, C), written
  //    side by side into one (B, T, 3C) buffer [q | k | v], the layout of the fused form, so
  //    everything after this step is shared with mha_forward_fused.
  Tensor<3> qkv(Tensor<3>::shape_type{B, T, 3 * C});
  gemm_strided(B * T, C, C, 1.0f, x.data(), C, false, w.w_q.data(), C, false, 0.0f, qkv.data(),
               3 * C);
  gemm_strided(B * T, C, C, 1.0f, x.data(), C, false, w.w_k.data(), C, false, 0.0f, qkv.data() + C,
               3 * C);
  gemm_strided(B * T, C, C, 1.0f, x.data(), C, false, w.w_v.data(), C, false, 0.0f,
               qkv.data() + 2 * C, 3 * C);
  // 2-4. Split (a view), attend per head, merge (in place), project with w_o.
  Workspace ws;  // this call's scratch, allocated with its results
  return attend_heads_and_project(qkv.data(), 3 * C, qkv.data() + C, qkv.data() + 2 * C, 3 * C, B,
                                  T, T, C, n_heads, w.w_o, causal, need_weights, ws);
}

MhaResult mha_forward_fused(const Tensor<3>& x, const Matrix& w_qkv, const Matrix& w_o,
                            std::size_t n_heads, bool causal, bool need_weights) {
  detail::check_mha_fused("attn::mha_forward_fused", x, w_qkv, w_o, n_heads);
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  // 1. All three projections in one GEMM: (B, T, C) @ (C, 3C) -> (B, T, 3C). Column j of the
  //    product only involves column j of w_qkv, so columns [0, C) are exactly x @ w_q, and so on.
  Tensor<3> qkv(Tensor<3>::shape_type{B, T, 3 * C});
  gemm_strided(B * T, 3 * C, C, 1.0f, x.data(), C, false, w_qkv.data(), 3 * C, false, 0.0f,
               qkv.data(), 3 * C);
  // 2-4. q, k, v are the three column blocks of each row (row width 3C), read in place.
  Workspace ws;  // this call's scratch, allocated with its results
  return attend_heads_and_project(qkv.data(), 3 * C, qkv.data() + C, qkv.data() + 2 * C, 3 * C, B,
                                  T, T, C, n_heads, w_o, causal, need_weights, ws);
}

MhaResult mha_cross_forward(const Tensor<3>& x, const Tensor<3>& y, const MhaWeights& w,
                            std::size_t n_heads) {
  detail::check_mha_cross("attn::mha_cross_forward", x, y, w, n_heads);
  const std::size_t B = x.shape()[0], T = x.shape()[1], S = y.shape()[1], C = x.shape()[2];
  // 1. Queries from x, keys and values from y:
  //    (B, T, C) @ (C, C) -> (B, T, C);  (B, S, C) @ (C, C) -> (B, S, C)
  Tensor<3> q(Tensor<3>::shape_type{B, T, C});
  Tensor<3> k(Tensor<3>::shape_type{B, S, C});
  Tensor<3> v(Tensor<3>::shape_type{B, S, C});
  gemm_strided(B * T, C, C, 1.0f, x.data(), C, false, w.w_q.data(), C, false, 0.0f, q.data(), C);
  gemm_strided(B * S, C, C, 1.0f, y.data(), C, false, w.w_k.data(), C, false, 0.0f, k.data(), C);
  gemm_strided(B * S, C, C, 1.0f, y.data(), C, false, w.w_v.data(), C, false, 0.0f, v.data(), C);
  // 2-4. Every query sees every key of y: no mask. Weights (B, H, T, S).
  Workspace ws;  // this call's scratch, allocated with its results
  return attend_heads_and_project(q.data(), C, k.data(), v.data(), C, B, T, S, C, n_heads, w.w_o,
                                  /*causal=*/false, /*need_weights=*/true, ws);
}

// ---------------------------------------------------------------------------------------------
// Backward (chapter 08)
// ---------------------------------------------------------------------------------------------

namespace {

// c (M, N) = alpha * op(a) @ op(b) + beta * c inside a worker (single-threaded BLAS), with
// op(a) = a^T when a is stored (K, M). Callers guarantee K >= 1 and checked sizes.
void head_gemm_t(std::size_t M, std::size_t N, std::size_t K, float alpha, const float* a,
                 std::size_t lda, bool trans_a, const float* b, std::size_t ldb, bool trans_b,
                 float beta, float* c, std::size_t ldc) {
  if (M == 0 || N == 0) return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, blas_int(M), blas_int(N), blas_int(K), alpha, a,
              blas_int(lda), b, blas_int(ldb), beta, c, blas_int(ldc));
}

// The softmax backward of one row of the kernel: ds[j] = p[j] (ds[j] - sum_i p[i] ds[i]) over
// the n visible entries (ds holds dP on entry), in place. Four partial sums in double.
void softmax_row_backward(const float* p, float* ds, std::size_t n) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    s0 += static_cast<double>(p[j]) * static_cast<double>(ds[j]);
    s1 += static_cast<double>(p[j + 1]) * static_cast<double>(ds[j + 1]);
    s2 += static_cast<double>(p[j + 2]) * static_cast<double>(ds[j + 2]);
    s3 += static_cast<double>(p[j + 3]) * static_cast<double>(ds[j + 3]);
  }
  for (; j < n; ++j) s0 += static_cast<double>(p[j]) * static_cast<double>(ds[j]);
  const float dot = static_cast<float>((s0 + s1) + (s2 + s3));
  for (j = 0; j < n; ++j) ds[j] = p[j] * (ds[j] - dot);
}

// The backward of attend_range for the (b, h) pairs bh_begin..bh_end-1. P = weights (B, H, T, S)
// from the forward (zeros on the masked triangle); dO in `dout`; writes dq, dk, dv (every row,
// beta = 0). `ds`: this thread's backward_scratch_floats(n) floats: a (T, S) block for dP, then
// dS, and v^T for the small-head products.
void attend_backward_range(const Sizes& n, Heads<const float> q, Heads<const float> k,
                           Heads<const float> v, Heads<const float> dout, const float* weights,
                           Heads<float> dq, Heads<float> dk, Heads<float> dv, bool causal,
                           std::size_t bh_begin, std::size_t bh_end, float* ds) {
  const std::size_t T = n.T, S = n.S, hs = n.hs, hv = n.hv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const bool small = small_heads(n);
  float* vt = ds + T * S;  // small: v^T (hv, ldt)
  const std::size_t ldt = detail::padded_columns(S);
  for (std::size_t bh = bh_begin; bh < bh_end; ++bh) {
    const std::size_t b = bh / n.H, h = bh % n.H;
    const float* qh = q.at(b, h);           // (T, hs)
    const float* kh = k.at(b, h);           // (S, hs)
    const float* vh = v.at(b, h);           // (S, hv)
    const float* doh = dout.at(b, h);       // (T, hv)
    const float* p = weights + bh * T * S;  // (T, S), row stride S
    float* dqh = dq.at(b, h);               // (T, hs)
    float* dkh = dk.at(b, h);               // (S, hs)
    float* dvh = dv.at(b, h);               // (S, hv)
    // (dV, step 1 of the formulas, is computed after steps 2-4: by then this head's P has been
    // read row by row by the softmax backward and is in the cache.)
    if (small) detail::transpose_padded(vh, v.row_stride, S, hv, vt, ldt);  // (hv, S), step 2
    // 2-4. By blocks of queries [i0, i1), seeing keys 0..keys-1 (the forward's blocks):
    for (std::size_t i0 = 0; i0 < T; i0 += kRowBlock) {
      const std::size_t i1 = std::min(T, i0 + kRowBlock);
      const std::size_t rows = i1 - i0;
      const std::size_t keys = causal ? i1 : S;
      const std::size_t lo = first_block_key(n, i0, small);  // a window skips keys 0..lo-1
      float* dsb = ds + i0 * S;                              // (rows, keys), row stride S
      // 2. dP = dO V^T: (rows, hv) @ (hv, keys - lo) -> (rows, keys - lo)
      if (small) {
        detail::rows_times_transposed(rows, S - lo, hv, 1.0f, doh + i0 * dout.row_stride,
                                      dout.row_stride, vt + lo, ldt, causal, i0 - lo, dsb + lo, S);
      } else {
        head_gemm_t(rows, keys - lo, hv, 1.0f, doh + i0 * dout.row_stride, dout.row_stride, false,
                    vh + lo * v.row_stride, v.row_stride, /*trans_b=*/true, 0.0f, dsb + lo, S);
      }
      // 3. dS = P * (dP - sum(dP * P)) per row, the softmax backward over the visible keys.
      //    The masked entries of the row are set to exactly 0 (P = 0 there): the products
      //    below read whole blocks (with a window, the keys before the row's first too).
      for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t t = i0 + r;
        const std::size_t first = first_key(n, t), visible = causal ? t + 1 : S;
        softmax_row_backward(p + t * S + first, dsb + r * S + first, visible - first);
        std::fill(dsb + r * S, dsb + r * S + first, 0.0f);
        std::fill(dsb + r * S + visible, dsb + r * S + (small ? S : keys), 0.0f);
      }
      // 4. dQ = dS K / sqrt(hs): (rows, keys - lo) @ (keys - lo, hs) -> (rows, hs). The scale of
      //    the scores, q k^T / sqrt(hs), carries over to both of their inputs.
      if (small) {
        detail::weights_times_rows(rows, S - lo, hs, scale, dsb + lo, S, kh + lo * k.row_stride,
                                   k.row_stride, causal, i0 - lo, dqh + i0 * dq.row_stride,
                                   dq.row_stride);
      } else {
        head_gemm_t(rows, hs, keys - lo, scale, dsb + lo, S, false, kh + lo * k.row_stride,
                    k.row_stride, false, 0.0f, dqh + i0 * dq.row_stride, dq.row_stride);
      }
    }
    // 1. dV = P^T dO, by blocks of keys [j0, j1): with the causal mask only queries t >= j0
    //    saw these keys (P = 0 above the diagonal), so the sum over t starts at j0; with a
    //    window W it ends before t1 = j1 - 1 + W (later queries see none of them).
    //    (j1 - j0, t1 - t0) @ (t1 - t0, hv) -> (j1 - j0, hv), P read transposed in place.
    if (small) {
      detail::transposed_weights_times_rows(S, T, hv, 1.0f, p, S, doh, dout.row_stride, causal, dvh,
                                            dv.row_stride);
    } else {
      for (std::size_t j0 = 0; j0 < S; j0 += kRowBlock) {
        const std::size_t j1 = std::min(S, j0 + kRowBlock);
        const std::size_t t0 = causal ? j0 : 0, t1 = last_query(n, j1);
        head_gemm_t(j1 - j0, hv, t1 - t0, 1.0f, p + t0 * S + j0, S, /*trans_a=*/true,
                    doh + t0 * dout.row_stride, dout.row_stride, false, 0.0f,
                    dvh + j0 * dv.row_stride, dv.row_stride);
      }
    }
    // 5. dK = dS^T Q / sqrt(hs), by blocks of keys like dV (queries t >= j0 only when causal).
    //    (j1 - j0, t1 - t0) @ (t1 - t0, hs) -> (j1 - j0, hs), dS read transposed in place.
    if (small) {
      detail::transposed_weights_times_rows(S, T, hs, scale, ds, S, qh, q.row_stride, causal, dkh,
                                            dk.row_stride);
      continue;
    }
    for (std::size_t j0 = 0; j0 < S; j0 += kRowBlock) {
      const std::size_t j1 = std::min(S, j0 + kRowBlock);
      const std::size_t t0 = causal ? j0 : 0, t1 = last_query(n, j1);
      head_gemm_t(j1 - j0, hs, t1 - t0, scale, ds + t0 * S + j0, S, /*trans_a=*/true,
                  qh + t0 * q.row_stride, q.row_stride, false, 0.0f, dkh + j0 * dk.row_stride,
                  dk.row_stride);
    }
  }
}

// Floats of scratch attend_backward_range needs per thread.
std::size_t backward_scratch_floats(const Sizes& n) {
  return n.T * n.S + (small_heads(n) ? n.hv * detail::padded_columns(n.S) : 0);
}

// All (b, h) pairs over the library's threads, one (T, S) scratch per thread (slices of the
// caller's ws.per_thread). A pair is computed the same way whichever thread runs it.
void attend_backward(const Sizes& n, Heads<const float> q, Heads<const float> k,
                     Heads<const float> v, Heads<const float> dout, const float* weights,
                     Heads<float> dq, Heads<float> dk, Heads<float> dv, bool causal,
                     Workspace& ws) {
  for (std::size_t size : {n.T, n.S, n.hs, n.hv, q.row_stride, k.row_stride, v.row_stride,
                           dout.row_stride, dq.row_stride, dk.row_stride, dv.row_stride})
    blas_int(size);
  const std::size_t pairs = n.B * n.H;
  const std::size_t n_threads = detail::worker_count(pairs);
  const std::size_t per_thread = backward_scratch_floats(n);
  float* base = at_least(ws.per_thread, n_threads * per_thread);
  detail::run_parts(pairs, n_threads, [&](std::size_t begin, std::size_t end, std::size_t part) {
    attend_backward_range(n, q, k, v, dout, weights, dq, dk, dv, causal, begin, end,
                          base + part * per_thread);
  });
}

template <std::size_t N>
void ensure_shape(Tensor<N>& t, const std::array<std::size_t, N>& shape) {
  if (!std::equal(shape.begin(), shape.end(), t.shape().begin())) t.resize(shape);
}

}  // namespace

AttentionGrads scaled_dot_product_attention_backward(const Tensor<4>& dout, const Tensor<4>& q,
                                                     const Tensor<4>& k, const Tensor<4>& v,
                                                     const Tensor<4>& weights, bool causal) {
  detail::check_sdpa_backward("attn::scaled_dot_product_attention_backward", dout, q, k, v, weights,
                              causal);
  const auto& qs = q.shape();  // (B, H, T, hs)
  const auto& ks = k.shape();  // (B, H, S, hs)
  const auto& vs = v.shape();  // (B, H, S, hv)
  const Sizes n{qs[0], qs[1], qs[2], ks[2], qs[3], vs[3]};
  AttentionGrads g;
  Workspace ws;  // this call's scratch, allocated with its results
  g.dq = Tensor<4>(qs);
  g.dk = Tensor<4>(ks);
  g.dv = Tensor<4>(vs);
  attend_backward(
      n, contiguous_heads(q.data(), n.H, n.T, n.hs), contiguous_heads(k.data(), n.H, n.S, n.hs),
      contiguous_heads(v.data(), n.H, n.S, n.hv), contiguous_heads(dout.data(), n.H, n.T, n.hv),
      weights.data(), contiguous_heads(g.dq.data(), n.H, n.T, n.hs),
      contiguous_heads(g.dk.data(), n.H, n.S, n.hs), contiguous_heads(g.dv.data(), n.H, n.S, n.hv),
      causal, ws);
  return g;
}

Tensor<3> mha_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads, bool causal,
                      MhaCache& cache, bool need_weights) {
  Tensor<3> out;
  mha_forward(x, w, n_heads, causal, cache, out, need_weights);
  return out;
}

namespace {

// The attention of a block, general form: H query heads sharing KV key/value heads (KV = H:
// multi-head attention), RoPE on q and k when `rope`, a sliding window or none: a view of
// GqaConfig (mha_parts: chapter 05's attention).
struct Parts {
  std::size_t H, KV;
  bool causal;
  std::optional<std::size_t> window;
  bool rope;
  double theta;
  ScoreParts score;  // the score-level parts (ALiBi), computed in the score loop
};

Parts mha_parts(std::size_t n_heads, bool causal) {
  return {n_heads, n_heads, causal, std::nullopt, false, 10000.0, ScoreParts{}};
}

// The score-level parts' bias of a block's attention over one sequence of H query heads (no
// bias without a score part): its slopes are computed per row, nothing is allocated.
ScoreBias block_bias(const ScoreParts& parts, std::size_t H) {
  ScoreBias b;
  b.parts = parts;
  b.n_heads = H;
  return b;
}

Parts gqa_parts(const GqaConfig& c) {
  return {c.n_heads, c.n_kv_heads, c.causal, c.window, c.rope, c.theta, c.score};
}

// The grouped-query checks, one line each (like attn::gqa_forward's). `what` prefixes the
// matrices' names: "" for the weights, "grads." for the gradients checked against them.
void check_gqa(const char* fn, const Tensor<3>& x, const MhaWeights& w, const Parts& a,
               const std::string& what = "") {
  const std::size_t C = x.shape()[2];
  require(C >= 1, fn, [&] { return "x is " + shape_str(x.shape()) + ", expected C >= 1"; });
  require(a.H >= 1 && C % a.H == 0, fn, [&] {
    return "n_heads = " + std::to_string(a.H) + " does not divide C = " + std::to_string(C);
  });
  require(a.KV >= 1 && a.H % a.KV == 0, fn, [&] {
    return "n_kv_heads = " + std::to_string(a.KV) +
           " does not divide n_heads = " + std::to_string(a.H);
  });
  const std::size_t kv_cols = a.KV * (C / a.H);
  const auto check = [&](const char* name, const Matrix& m, std::size_t cols) {
    if (m.shape()[0] == C && m.shape()[1] == cols) return;
    require(false, fn, [&] {
      return what + name + " is " + shape_str(m.shape()) + ", expected (" + std::to_string(C) +
             ", " + std::to_string(cols) + ")";
    });
  };
  check("w_q", w.w_q, C);
  check("w_k", w.w_k, kv_cols);
  check("w_v", w.w_v, kv_cols);
  check("w_o", w.w_o, C);
  require(!a.window || *a.window >= 1, fn,
          "a window holds at least the query's own key: window 0 (leave it unset for none)");
  require(a.causal || !a.window, fn, "a sliding window needs causal attention");
  if (a.rope) {
    const std::size_t hs = C / a.H;
    require(hs % 2 == 0, fn, [&] {
      return "head size hs = " + std::to_string(hs) + " is odd, but RoPE rotates pairs";
    });
  }
}

// Attention biases (GPT-2's c_attn and c_proj biases): none (all four empty), or b_q, b_o (C,)
// and b_k, b_v (KV hs,). `what` prefixes the names ("grads." for gradients).
bool has_biases(const MhaWeights& w) {
  return w.b_q.size() + w.b_k.size() + w.b_v.size() + w.b_o.size() != 0;
}
void check_biases(const char* fn, const MhaWeights& w, std::size_t C, std::size_t kvc,
                  const std::string& what = "") {
  if (!has_biases(w)) return;
  const auto check = [&](const char* name, const Vector& b, std::size_t n) {
    if (b.size() == n) return;
    require(false, fn, [&] {
      return what + name + " is " + shape_str(b.shape()) + ", expected (" + std::to_string(n) +
             ",) (attention biases: all four or none)";
    });
  };
  check("b_q", w.b_q, C);
  check("b_k", w.b_k, kvc);
  check("b_v", w.b_v, kvc);
  check("b_o", w.b_o, C);
}
// Every row of qkv (rows, width) starts as b_q | b_k | b_v; returns the beta the projections'
// GEMMs then add with: 1 with biases, 0 without (nothing written: the GEMMs overwrite).
float fill_qkv_biases(const MhaWeights& w, std::size_t rows, std::size_t width, float* qkv) {
  if (!has_biases(w)) return 0.0f;
  const std::size_t C = w.b_q.size(), kvc = w.b_k.size();
  for (std::size_t r = 0; r < rows; ++r) {
    float* row = qkv + r * width;
    std::copy(w.b_q.begin(), w.b_q.end(), row);
    std::copy(w.b_k.begin(), w.b_k.end(), row + C);
    std::copy(w.b_v.begin(), w.b_v.end(), row + C + kvc);
  }
  return 1.0f;
}

// Step 1 of every form: q | k | v = x @ w_q | x @ w_k | x @ w_v into the rows of qkv, (B*T, C +
// 2 KV hs), then q and k rotated in place (RoPE). Returns the row width.
std::size_t project_qkv(const Tensor<3>& x, const MhaWeights& w, const Parts& a, float* qkv,
                        Workspace& ws) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  const std::size_t hs = C / a.H, kvc = a.KV * hs, width = C + 2 * kvc;
  // With attention biases (GPT-2), every row starts as b_q | b_k | b_v and the GEMMs add the
  // products onto it (beta = 1), as attn::linear does.
  const float beta = fill_qkv_biases(w, B * T, width, qkv);
  // (B, T, C) @ (C, C) -> (B, T, C);  (B, T, C) @ (C, KV*hs) -> (B, T, KV*hs), twice
  gemm_strided(B * T, C, C, 1.0f, x.data(), C, false, w.w_q.data(), C, false, beta, qkv, width);
  gemm_strided(B * T, kvc, C, 1.0f, x.data(), C, false, w.w_k.data(), kvc, false, beta, qkv + C,
               width);
  gemm_strided(B * T, kvc, C, 1.0f, x.data(), C, false, w.w_v.data(), kvc, false, beta,
               qkv + C + kvc, width);
  // RoPE: q and k turned by their positions 0..T-1 (v carries content, not position).
  if (a.rope) {
    rope_in_place({qkv, B, T, C, width}, hs, a.theta, 0, false, ws);
    rope_in_place({qkv + C, B, T, kvc, width}, hs, a.theta, 0, false, ws);
  }
  return width;
}

// The kernel's view of the heads in a projection buffer of row width `width`: q's H heads, k's
// and v's KV heads, each read by a group of H / KV query heads.
struct QkvHeads {
  Heads<const float> q, k, v;
};
QkvHeads qkv_heads(const float* qkv, std::size_t T, std::size_t C, std::size_t width,
                   const Parts& a) {
  const std::size_t hs = C / a.H, kvc = a.KV * hs;
  QkvHeads h{column_heads(qkv, T, width, hs), column_heads(qkv + C, T, width, hs),
             column_heads(qkv + C + kvc, T, width, hs)};
  h.k.group = h.v.group = a.H / a.KV;
  return h;
}

// The flash kernel (fast/flash.cpp) takes over as fast::takes_flash says (flash.hpp): the cache
// then keeps each query's log-sum-exp (B, H, T) in place of the (B, H, T, T) weights.
bool flash_path(const Parts& a, std::size_t T, bool need_weights) {
  return takes_flash(T, need_weights, a.H, a.KV, a.window) && !a.score.any();
}

void attention_forward(const Tensor<3>& x, const MhaWeights& w, const Parts& a, MhaCache& cache,
                       Tensor<3>& out, bool need_weights, Workspace& ws) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  const std::size_t H = a.H, hs = C / H, width = C + 2 * a.KV * hs;
  const bool flash = flash_path(a, T, need_weights);
  check_biases("attn::mha_forward", w, C, a.KV * hs);
  // The cache's buffers are reused when the shapes repeat (a training loop).
  ensure_shape<3>(cache.x, {B, T, C});
  ensure_shape<3>(cache.qkv, {B, T, width});
  ensure_shape<4>(cache.weights, flash ? std::array<std::size_t, 4>{} : std::array{B, H, T, T});
  ensure_shape<3>(cache.lse, flash ? std::array{B, H, T} : std::array<std::size_t, 3>{});
  ensure_shape<3>(cache.heads, {B, T, C});
  // The backward needs x. A caller may compute x straight into cache.x (block_forward does):
  // then there is nothing to copy.
  if (&x != &cache.x) std::copy(x.begin(), x.end(), cache.x.begin());
  // 1. q | k | v into the (B, T, C + 2 KV hs) buffer (RoPE applied).
  float* qkv = cache.qkv.data();
  project_qkv(x, w, a, qkv, ws);
  // 2-3. Attention per head, heads read in place; the weights kept (the backward needs P), or
  //      on the flash path each query's log-sum-exp; the merged heads written to their own
  //      buffer (q must survive for dK).
  if (flash) {
    flash_mha_attend("attn::mha_forward", B, T, C, H, a.causal, qkv, cache.heads.data(),
                     cache.lse.data());
  } else {
    const QkvHeads in = qkv_heads(qkv, T, C, width, a);
    Sizes n{B, H, T, T, hs, hs};
    n.window = a.window.value_or(0);  // the kernel's 0: no window
    n.bias = block_bias(a.score, H);
    attend(n, in.q, in.k, in.v, column_heads(cache.heads.data(), T, C, hs), a.causal,
           cache.weights.data(), ws);
  }
  // 4. Output projection (B, T, C) @ (C, C) -> (B, T, C) (+ b_o: every row starts as the bias),
  //    or the merged heads without w_o.
  ensure_shape<3>(out, {B, T, C});
  if (w.w_o.size() == 0) {
    std::copy(cache.heads.begin(), cache.heads.end(), out.begin());
    return;
  }
  const bool bias_o = w.b_o.size() != 0;
  for (std::size_t r = 0; bias_o && r < B * T; ++r)
    std::copy(w.b_o.begin(), w.b_o.end(), out.data() + r * C);
  gemm_strided(B * T, C, C, 1.0f, cache.heads.data(), C, false, w.w_o.data(), C, false,
               bias_o ? 1.0f : 0.0f, out.data(), C);
}

// The evaluation forward through the training forward's steps (a cache made for the call):
// what the evaluation forms run for weights with attention biases.
MhaResult forward_via_cache(const Tensor<3>& x, const MhaWeights& w, const Parts& a,
                            bool need_weights) {
  MhaCache cache;
  MhaResult r;
  Workspace ws;
  attention_forward(x, w, a, cache, r.out, need_weights, ws);
  r.weights =
      need_weights ? std::move(cache.weights) : Tensor<4>(Tensor<4>::shape_type{0, 0, 0, 0});
  return r;
}

// dst (rows, kvc) = for each K/V head g, the sum over its group's query heads h of src's head h
// (rows of src_width floats, H heads of hs): the backward of sharing a head.
void sum_groups(const float* src, std::size_t src_width, std::size_t rows, std::size_t H,
                std::size_t KV, std::size_t hs, float* dst) {
  const std::size_t group = H / KV, kvc = KV * hs;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* s = src + r * src_width;
    float* d = dst + r * kvc;
    for (std::size_t g = 0; g < KV; ++g) {
      float* dg = d + g * hs;
      std::copy(s + g * group * hs, s + (g * group + 1) * hs, dg);
      for (std::size_t h = g * group + 1; h < (g + 1) * group; ++h)
        for (std::size_t i = 0; i < hs; ++i) dg[i] += s[h * hs + i];
    }
  }
}

void attention_backward(const Tensor<3>& dout, const MhaCache& cache, const MhaWeights& w,
                        const Parts& a, Tensor<3>& dx, MhaWeights& grads, Workspace& ws) {
  const char* fn = "attn::mha_backward";
  const std::size_t B = cache.x.shape()[0], T = cache.x.shape()[1], C = cache.x.shape()[2];
  const std::size_t H = a.H, KV = a.KV, hs = C / H, rows = B * T;
  const std::size_t kvc = KV * hs, width = C + 2 * kvc;
  // The forward's path: the weights P, or (flash) each query's log-sum-exp.
  const std::array<std::size_t, 4> w_shape{B, H, T, T};
  const std::array<std::size_t, 3> l_shape{B, H, T};
  const bool kept_lse = cache.weights.size() == 0 && cache.lse.size() != 0;
  const bool flash = kept_lse && flash_path(a, T, /*need_weights=*/false) &&
                     std::equal(l_shape.begin(), l_shape.end(), cache.lse.shape().begin());
  if ((!flash && !std::equal(w_shape.begin(), w_shape.end(), cache.weights.shape().begin())) ||
      cache.qkv.size() != rows * width || cache.heads.size() != rows * C) {
    shape_error(fn,
                "a cache filled by the forward for x " + shape_str(cache.x.shape()) + " and " +
                    std::to_string(H) + " heads",
                kept_lse ? "lse " + shape_str(cache.lse.shape())
                         : "weights " + shape_str(cache.weights.shape()));
  }
  const bool proj = w.w_o.size() != 0;
  check_biases(fn, w, C, kvc);
  check_biases(fn, grads, C, kvc, "grads.");
  require(has_biases(w) == has_biases(grads), fn,
          "grads must have attention biases exactly when the weights have them");
  ensure_shape<3>(dx, {B, T, C});
  // In the caller's ws.buffer: dq | dk | dv per query head (B*T, 3C), dheads (B*T, C), and with
  // shared heads (KV < H) dk | dv per K/V head (B*T, 2 KV hs).
  const bool grouped = KV != H;
  float* scratch = at_least(ws.buffer, rows * 4 * C + (grouped ? rows * 2 * kvc : 0));
  float* dqkv = scratch;  // (B, T, 3C) dq | dk | dv, H heads each
  const float* dheads = dout.data();
  // 1. Output projection out = heads @ w_o:
  //    dheads = dout @ w_o^T     (B*T, C) @ (C, C) -> (B*T, C)
  //    dw_o  += heads^T @ dout   (C, B*T) @ (B*T, C) -> (C, C)
  //    (dw_o is computed in step 4, beside the other weight gradients)
  if (proj) {
    float* dh = scratch + rows * 3 * C;
    gemm(rows, C, C, 1.0f, dout.data(), false, w.w_o.data(), true, 0.0f, dh);
    dheads = dh;
  }
  // 2. Attention per (b, h), heads read in place from qkv and dheads; dq, dk, dv written in
  //    place into the column blocks of dqkv, one block per query head (no split/merge copies).
  //    On the flash path P is recomputed tile by tile from the log-sum-exp (fast/flash.cpp).
  const float* qkv = cache.qkv.data();
  if (flash) {
    flash_mha_attend_backward(fn, B, T, C, H, a.causal, qkv, cache.heads.data(), dheads,
                              cache.lse.data(), dqkv);
  } else {
    const QkvHeads in = qkv_heads(qkv, T, C, width, a);
    Sizes n{B, H, T, T, hs, hs};
    n.window = a.window.value_or(0);  // the kernel's 0: no window
    attend_backward(n, in.q, in.k, in.v, column_heads<const float>(dheads, T, C, hs),
                    cache.weights.data(), column_heads(dqkv, T, 3 * C, hs),
                    column_heads(dqkv + C, T, 3 * C, hs), column_heads(dqkv + 2 * C, T, 3 * C, hs),
                    a.causal, ws);
  }
  // 3. A K/V head read by a group of query heads gets the sum of their gradients:
  //    (B*T, H hs) -> (B*T, KV hs), for dk and dv. Then RoPE's backward turns dq and dk back.
  const float* dk = dqkv + C;
  const float* dv = dqkv + 2 * C;
  std::size_t ld_kv = 3 * C;
  if (grouped) {
    float* dkv = scratch + rows * 4 * C;  // (B*T, 2 KV hs) dk | dv
    sum_groups(dqkv + C, 3 * C, rows, H, KV, hs, dkv);
    sum_groups(dqkv + 2 * C, 3 * C, rows, H, KV, hs, dkv + rows * kvc);
    dk = dkv;
    dv = dkv + rows * kvc;
    ld_kv = kvc;
  }
  if (a.rope) {
    rope_in_place({dqkv, B, T, C, 3 * C}, hs, a.theta, 0, /*inverse=*/true, ws);
    rope_in_place({const_cast<float*>(dk), B, T, kvc, ld_kv}, hs, a.theta, 0, /*inverse=*/true, ws);
  }
  // 4. The projections q = x @ w_q (and k, v):
  //    dw_q += x^T @ dq          (C, B*T) @ (B*T, C) -> (C, C), dq read in place (ld 3C)
  //    dw_k += x^T @ dk          (C, B*T) @ (B*T, KV hs) -> (C, KV hs), likewise dw_v
  //    dx = dq @ w_q^T + dk @ w_k^T + dv @ w_v^T   (B*T, .) @ (., C) -> (B*T, C), summed by beta
  //    The weight gradients (with dw_o += heads^T @ dout) are independent GEMMs: their tiles
  //    share the threads in one region, each computed the same way on any thread count.
  const Matrix* weights[3] = {&w.w_q, &w.w_k, &w.w_v};
  Matrix* dweights[3] = {&grads.w_q, &grads.w_k, &grads.w_v};
  const float* grads_in[3] = {dqkv, dk, dv};
  const std::size_t lds[3] = {3 * C, ld_kv, ld_kv};
  const std::size_t cols[3] = {C, kvc, kvc};
  std::array<GemmJob, 4> jobs{};
  for (std::size_t i = 0; i < 3; ++i) {
    jobs[i] = {C,           cols[i], rows,  1.0f, cache.x.data(),      C,      /*trans_a=*/true,
               grads_in[i], lds[i],  false, 1.0f, dweights[i]->data(), cols[i]};
  }
  if (proj) {
    jobs[3] = {C,           C, rows,  1.0f, cache.heads.data(), C, /*trans_a=*/true,
               dout.data(), C, false, 1.0f, grads.w_o.data(),   C};
  }
  gemm_many(std::span<const GemmJob>(jobs.data(), proj ? 4 : 3));
  for (std::size_t i = 0; i < 3; ++i) {
    gemm_strided(rows, C, cols[i], 1.0f, grads_in[i], lds[i], false, weights[i]->data(), cols[i],
                 /*trans_b=*/true, i == 0 ? 0.0f : 1.0f, dx.data(), C);
  }
  // 5. Attention biases, added to every row: db_q += the sum of dq's rows (likewise db_k, db_v
  //    from dk, dv, after RoPE's backward: the bias is added before the rotation), db_o += the
  //    sum of dout's rows.
  if (has_biases(grads)) {
    bias_backward_strided(dqkv, rows, C, 3 * C, grads.b_q.data());
    bias_backward_strided(dk, rows, kvc, ld_kv, grads.b_k.data());
    bias_backward_strided(dv, rows, kvc, ld_kv, grads.b_v.data());
    if (proj) bias_backward_strided(dout.data(), rows, C, C, grads.b_o.data());
  }
}

}  // namespace

void mha_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads, bool causal,
                 MhaCache& cache, Tensor<3>& out, bool need_weights, Workspace& ws) {
  detail::check_mha("attn::mha_forward", x, w, n_heads, /*allow_no_proj=*/true);
  require(&out != &x, "attn::mha_forward", "out must not be x");
  attention_forward(x, w, mha_parts(n_heads, causal), cache, out, need_weights, ws);
}

void mha_forward(const Tensor<3>& x, const MhaWeights& w, std::size_t n_heads, bool causal,
                 MhaCache& cache, Tensor<3>& out, bool need_weights) {
  Workspace ws;
  mha_forward(x, w, n_heads, causal, cache, out, need_weights, ws);
}

void mha_backward(const Tensor<3>& dout, const MhaCache& cache, const MhaWeights& w,
                  std::size_t n_heads, bool causal, Tensor<3>& dx, MhaWeights& grads,
                  Workspace& ws) {
  detail::check_mha_backward("attn::mha_backward", dout, cache.x, w, n_heads, grads);
  attention_backward(dout, cache, w, mha_parts(n_heads, causal), dx, grads, ws);
}

void mha_backward(const Tensor<3>& dout, const MhaCache& cache, const MhaWeights& w,
                  std::size_t n_heads, bool causal, Tensor<3>& dx, MhaWeights& grads) {
  Workspace ws;
  mha_backward(dout, cache, w, n_heads, causal, dx, grads, ws);
}

// ---------------------------------------------------------------------------------------------
// Grouped-query attention, RoPE, sliding window (chapter 11)
// ---------------------------------------------------------------------------------------------

void gqa_forward(const Tensor<3>& x, const MhaWeights& w, const GqaConfig& config, MhaCache& cache,
                 Tensor<3>& out, bool need_weights, Workspace& ws) {
  constexpr const char* kFn = "attn::fast::gqa_forward";
  const Parts a = gqa_parts(config);
  check_gqa(kFn, x, w, a);
  require(&out != &x, kFn, "out must not be x");
  attention_forward(x, w, a, cache, out, need_weights, ws);
}

void gqa_forward(const Tensor<3>& x, const MhaWeights& w, const GqaConfig& config, MhaCache& cache,
                 Tensor<3>& out, bool need_weights) {
  Workspace ws;
  gqa_forward(x, w, config, cache, out, need_weights, ws);
}

void gqa_backward(const Tensor<3>& dout, const MhaCache& cache, const MhaWeights& w,
                  const GqaConfig& config, Tensor<3>& dx, MhaWeights& grads) {
  Workspace ws;
  gqa_backward(dout, cache, w, config, dx, grads, ws);
}

void gqa_backward(const Tensor<3>& dout, const MhaCache& cache, const MhaWeights& w,
                  const GqaConfig& config, Tensor<3>& dx, MhaWeights& grads, Workspace& ws) {
  constexpr const char* kFn = "attn::fast::gqa_backward";
  const Parts a = gqa_parts(config);
  check_gqa(kFn, cache.x, w, a);
  check_gqa(kFn, cache.x, grads, a, "grads.");
  if (dout.shape() != cache.x.shape()) {
    shape_error(kFn, "dout " + shape_str(cache.x.shape()) + " (like the forward's input)",
                "dout " + shape_str(dout.shape()));
  }
  attention_backward(dout, cache, w, a, dx, grads, ws);
}

MhaResult gqa_forward(const Tensor<3>& x, const MhaWeights& w, const GqaConfig& config,
                      bool need_weights) {
  constexpr const char* kFn = "attn::fast::gqa_forward";
  const Parts a = gqa_parts(config);
  check_gqa(kFn, x, w, a);
  if (has_biases(w)) return forward_via_cache(x, w, a, need_weights);  // GPT-2's biases
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  const std::size_t hs = C / a.H, kvc = a.KV * hs;
  // 1. q | k | v (RoPE applied) into this call's workspace (allocated with its results).
  Workspace ws;
  float* qkv = at_least(ws.buffer, B * T * (C + 2 * kvc));  // (B, T, C + 2 KV hs)
  const std::size_t width = project_qkv(x, w, a, qkv, ws);
  // 2-4. Attention per head, written over q, then w_o: as mha_forward, with shared K/V heads.
  return attend_heads_and_project(qkv, width, qkv + C, qkv + C + kvc, width, B, T, T, C, a.H, w.w_o,
                                  a.causal, need_weights, ws, a.KV, a.window.value_or(0),
                                  block_bias(a.score, a.H));
}

// ---------------------------------------------------------------------------------------------
// The kernel on caller-owned strided buffers (chapter 10: the KV cache)
// ---------------------------------------------------------------------------------------------

std::size_t attention_scratch_floats(std::size_t T, std::size_t S, std::size_t hs) {
  return attend_scratch_floats({1, 1, T, S, hs, hs}, /*keep_weights=*/false);
}

void attention_strided(std::size_t B, std::size_t H, std::size_t T, std::size_t S, std::size_t hs,
                       const float* q, HeadStrides q_strides, const float* k, HeadStrides k_strides,
                       const float* v, HeadStrides v_strides, float* out, HeadStrides out_strides,
                       bool causal, float* scratch, ScoreBias bias) {
  const char* fn = "attn::attention_strided";
  if (hs == 0 || S == 0) require(false, fn, "hs and S must be at least 1");
  if (causal && S != T) require(false, fn, "causal attention needs S == T");
  for (std::size_t size : {T, S, hs, q_strides.row, k_strides.row, v_strides.row, out_strides.row})
    blas_int(size);
  if (B == 0 || H == 0 || T == 0) return;
  // Same kernel as every other entry point, all (b, h) pairs on this thread, no weights kept.
  Sizes n{B, H, T, S, hs, hs};
  n.bias = bias;
  attend_range(n, {q, q_strides.batch, q_strides.head, q_strides.row},
               {k, k_strides.batch, k_strides.head, k_strides.row},
               {v, v_strides.batch, v_strides.head, v_strides.row},
               {out, out_strides.batch, out_strides.head, out_strides.row}, causal, nullptr, 0,
               B * H, scratch);
}

}  // namespace attn::fast
