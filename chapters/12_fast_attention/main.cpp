// chapters/12_fast_attention/main.cpp: chapter 12, making attention fast and long.
// The narrated walkthrough: one causal attention head computed by a ladder of kernels, each one
// change away from the one before (ladder.cpp beside this file), each checked against the
// reference; the online softmax by hand on one row; and with --long T, one multi-head forward
// (and backward) at a length whose (T, T) matrices would not fit, through the flash kernel
// (common/src/fast/flash.cpp). Wall-clock times only with --timing.
// Each section computes here and is printed by its show_ function in show.cpp; --long and
// --sweep run in long_context.cpp.
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/core/random.hpp"
#include "attn/core/threads.hpp"
#include "attn/fast/flash.hpp"
#include "attn/fast/gemm.hpp"
#include "attn/ops/online_softmax.hpp"
#include "ladder.hpp"
#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/ops/attention.hpp"
#include "exercises.hpp"
#include "heap_count.hpp"
#include "long_context.hpp"
#include "show.hpp"

namespace {

using namespace ch12;  // the options and helpers of long_context.cpp, the results of show.hpp

using attn::Matrix;
using attn::Tensor;
namespace ladder = ch12::ladder;

// Bounds of the size flags (stated in --help).
constexpr std::size_t kMaxBlockSize = 4096;  // the naive rung holds and loops over (T, T)
constexpr std::size_t kMaxHeadSize = 256;

// ---- The functions the walkthrough calls: the library's, or with --mine the learner's ex12::.
struct Kernels {
  void (*update)(attn::OnlineRow&, const attn::Vector&, const Matrix&);                   // ex12.1
  Matrix (*tile)(const Matrix&, const Matrix&, const Matrix&, std::size_t, std::size_t);  // ex12.2
};

Kernels reference_kernels() { return {&attn::online_softmax_update, &attn::attention_tile}; }
Kernels learner_kernels() { return {&ex12::online_softmax_update, &ex12::attention_tile}; }

// ---- The walkthrough: what each section computes (show.cpp prints it).

// 1. The online softmax by hand, on one row of 8 scores in two tiles of 4.
OnlineByHand draw_online_row(attn::Rng& rng) {
  const std::size_t n = 8, hs = 2;
  OnlineByHand h;
  h.s = attn::randn(rng, 1, n, 2.0f);  // (1, 8)
  h.v = attn::randn(rng, n, hs);       // (8, 2)
  // The example must show a rescale: tile 2 has to raise the max. If the first tile holds the
  // larger max, the two tiles (scores and their values) trade places.
  const auto tile_max = [&](std::size_t t) {
    float m = h.s(0, 4 * t);
    for (std::size_t j = 1; j < 4; ++j) m = std::max(m, h.s(0, 4 * t + j));
    return m;
  };
  if (tile_max(0) > tile_max(1)) {
    h.swapped = true;
    for (std::size_t j = 0; j < 4; ++j) {
      std::swap(h.s(0, j), h.s(0, 4 + j));
      for (std::size_t d = 0; d < hs; ++d) std::swap(h.v(j, d), h.v(4 + j, d));
    }
  }
  return h;
}

// Folds tile t (scores 4t..4t+3 and their values) into the running row.
TileStep fold_tile(const Kernels& k, attn::OnlineRow& row, const OnlineByHand& h, std::size_t t) {
  const std::size_t hs = h.v.shape()[1];
  attn::Vector s(attn::Vector::shape_type{4});  // (4)
  Matrix vals(Matrix::shape_type{4, hs});       // (4, hs)
  for (std::size_t j = 0; j < 4; ++j) {
    s(j) = h.s(0, 4 * t + j);
    for (std::size_t d = 0; d < hs; ++d) vals(j, d) = h.v(4 * t + j, d);
  }
  TileStep step;
  step.number = t + 1;
  step.m_before = row.m;
  k.update(row, s, vals);
  step.row = row;
  step.rescale = std::exp(static_cast<double>(step.m_before) - static_cast<double>(row.m));
  return step;
}

// acc / l against the two-pass softmax of the whole row, in double.
OnlineResult two_pass_check(const OnlineByHand& h, const attn::OnlineRow& row) {
  const std::size_t n = h.s.shape()[1], hs = h.v.shape()[1];
  double m = -INFINITY, l = 0.0;
  for (std::size_t j = 0; j < n; ++j) m = std::max(m, static_cast<double>(h.s(0, j)));
  for (std::size_t j = 0; j < n; ++j) l += std::exp(static_cast<double>(h.s(0, j)) - m);
  OnlineResult r;
  for (std::size_t d = 0; d < hs; ++d) {
    double o = 0.0;
    for (std::size_t j = 0; j < n; ++j)
      o += std::exp(static_cast<double>(h.s(0, j)) - m) / l * static_cast<double>(h.v(j, d));
    const double got = static_cast<double>(row.acc(d)) / static_cast<double>(row.l);
    r.diff = std::max(r.diff, std::abs(got - o));
    r.out.push_back(got);
  }
  r.same = r.diff < 1e-5;
  return r;
}

// 2. The ladder.
RungResult check_rung(const std::string& name, const Matrix& got, const Matrix& ref) {
  RungResult r;
  r.name = name;
  r.same_bits = got.size() == ref.size() &&
                std::memcmp(got.data(), ref.data(), got.size() * sizeof(float)) == 0;
  bool within = got.size() == ref.size();
  for (std::size_t i = 0; within && i < got.size(); ++i) {
    const double diff =
        std::abs(static_cast<double>(got.data()[i]) - static_cast<double>(ref.data()[i]));
    r.max_diff = std::max(r.max_diff, diff);
    within = diff <= 1e-5 + 1e-4 * std::abs(static_cast<double>(ref.data()[i]));
  }
  r.ok = r.same_bits || within;
  return r;
}

Matrix reference_head(const Matrix& q, const Matrix& k, const Matrix& v) {
  const std::size_t T = q.shape()[0], hs = q.shape()[1];
  const std::array<std::size_t, 4> shape{1, 1, T, hs};
  const Tensor<4> q4 = xt::reshape_view(q, shape), k4 = xt::reshape_view(k, shape),
                  v4 = xt::reshape_view(v, shape);
  const Tensor<4> out = attn::scaled_dot_product_attention(q4, k4, v4, true, false).out;
  Matrix m(Matrix::shape_type{T, hs});
  std::copy(out.begin(), out.end(), m.begin());
  return m;
}

Matrix flash_head(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t tile) {
  const std::size_t T = q.shape()[0], hs = q.shape()[1];
  const std::array<std::size_t, 4> shape{1, 1, T, hs};
  const Tensor<4> q4 = xt::reshape_view(q, shape), k4 = xt::reshape_view(k, shape),
                  v4 = xt::reshape_view(v, shape);
  const Tensor<4> out = attn::fast::flash_attention(q4, k4, v4, true, tile).out;
  Matrix m(Matrix::shape_type{T, hs});
  std::copy(out.begin(), out.end(), m.begin());
  return m;
}

// The learner's FLOPs, measured rather than assumed: a key tile counts as read by a query tile
// when setting that tile's rows of k and v to NaN changes (by a single bit) the rows the
// learner's attention_tile returns; each pair read counts the two products over the whole pair,
// 4 rows cols hs. Probing calls the tile once per pair of tiles, T / tile times the work of the
// run itself, so only up to kMaxProbedTiles tiles a side; beyond, the column stays unmeasured.
constexpr std::size_t kMaxProbedTiles = 16;
void probe_key_tiles(const Kernels& k, const Matrix& q, const Matrix& kk, const Matrix& v,
                     const Matrix& out, std::size_t tile, RungResult& r) {
  const std::size_t T = q.shape()[0], hs = q.shape()[1], n = (T + tile - 1) / tile;
  r.tile_pairs = n * (n + 1) / 2;   // the pairs a causal kernel must read
  if (n > kMaxProbedTiles) return;  // r.flops_measured stays false
  Matrix k_nan = kk, v_nan = v;
  const float nan = std::nanf("");
  for (std::size_t i0 = 0; i0 < T; i0 += tile) {
    const std::size_t rows = std::min(tile, T - i0);
    const float* clean = out.data() + i0 * hs;
    for (std::size_t j0 = 0; j0 < T; j0 += tile) {
      const std::size_t cols = std::min(tile, T - j0);
      std::fill(k_nan.begin() + static_cast<std::ptrdiff_t>(j0 * hs),
                k_nan.begin() + static_cast<std::ptrdiff_t>((j0 + cols) * hs), nan);
      std::fill(v_nan.begin() + static_cast<std::ptrdiff_t>(j0 * hs),
                v_nan.begin() + static_cast<std::ptrdiff_t>((j0 + cols) * hs), nan);
      const Matrix part = k.tile(q, k_nan, v_nan, i0, tile);
      const bool read = part.size() != rows * hs ||
                        std::memcmp(part.data(), clean, rows * hs * sizeof(float)) != 0;
      if (read) {
        ++r.tiles_read;
        r.flops +=
            4.0 * static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(hs);
      }
      std::copy(kk.begin() + static_cast<std::ptrdiff_t>(j0 * hs),
                kk.begin() + static_cast<std::ptrdiff_t>((j0 + cols) * hs),
                k_nan.begin() + static_cast<std::ptrdiff_t>(j0 * hs));
      std::copy(v.begin() + static_cast<std::ptrdiff_t>(j0 * hs),
                v.begin() + static_cast<std::ptrdiff_t>((j0 + cols) * hs),
                v_nan.begin() + static_cast<std::ptrdiff_t>(j0 * hs));
    }
  }
  r.flops_measured = true;
}

// --mine, ex12.4: the learner's backward tile over every pair of tiles of a head of the ladder's
// shape, summed, against the library's flash backward from the same forward's out and lse. Run
// after the ladder is shown (an unfinished ex12.4 stops the run there), on q, k, v, dout drawn
// then, so the reference run's draws stay as they were.
BackwardCheck check_backward_tiles(const Options& o, attn::Rng& rng) {
  const std::size_t T = o.block_size, hs = o.head_size, tile = o.tile;
  const std::array<std::size_t, 4> shape{1, 1, T, hs};
  const Matrix q = attn::randn(rng, T, hs), kk = attn::randn(rng, T, hs),
               v = attn::randn(rng, T, hs), dout = attn::randn(rng, T, hs);  // (T, hs) each
  const Tensor<4> q4 = xt::reshape_view(q, shape), k4 = xt::reshape_view(kk, shape),
                  v4 = xt::reshape_view(v, shape), dout4 = xt::reshape_view(dout, shape);
  const attn::fast::FlashResult fwd = attn::fast::flash_attention(q4, k4, v4, true, tile);
  const attn::AttentionGrads want =
      attn::fast::flash_attention_backward(dout4, q4, k4, v4, fwd.out, fwd.lse, true, tile);
  attn::Vector lse(attn::Vector::shape_type{T}), d(attn::Vector::shape_type{T});
  for (std::size_t t = 0; t < T; ++t) {
    lse(t) = fwd.lse(0, 0, t);
    double sum = 0.0;
    for (std::size_t e = 0; e < hs; ++e)
      sum += static_cast<double>(dout(t, e)) * static_cast<double>(fwd.out(0, 0, t, e));
    d(t) = static_cast<float>(sum);
  }
  Matrix dq = xt::zeros<float>({T, hs}), dk = xt::zeros<float>({T, hs}),
         dv = xt::zeros<float>({T, hs});
  BackwardCheck c;
  for (std::size_t i0 = 0; i0 < T; i0 += tile) {
    for (std::size_t j0 = 0; j0 < T; j0 += tile) {
      const ex12::TileGrads g = ex12::flash_backward_tile(q, kk, v, dout, lse, d, i0, j0, tile);
      const std::size_t rows = std::min(tile, T - i0), cols = std::min(tile, T - j0);
      if (g.dq.shape() != Matrix::shape_type{rows, hs} ||
          g.dk.shape() != Matrix::shape_type{cols, hs} ||
          g.dv.shape() != Matrix::shape_type{cols, hs}) {
        throw std::runtime_error(fmt::format(
            "your flash_backward_tile (ex12.4) at i0 {}, j0 {} returns dq {}, dk {}, dv {}; "
            "expected ({}, {}), ({}, {}), ({}, {})",
            i0, j0, attn::shape_str(g.dq.shape()), attn::shape_str(g.dk.shape()),
            attn::shape_str(g.dv.shape()), rows, hs, cols, hs, cols, hs));
      }
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t e = 0; e < hs; ++e) dq(i0 + r, e) += g.dq(r, e);
      for (std::size_t r = 0; r < cols; ++r)
        for (std::size_t e = 0; e < hs; ++e) {
          dk(j0 + r, e) += g.dk(r, e);
          dv(j0 + r, e) += g.dv(r, e);
        }
      ++c.pairs;
    }
  }
  c.ok = true;
  const auto compare = [&](const Matrix& got, const Tensor<4>& ref) {
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double diff =
          std::abs(static_cast<double>(got.data()[i]) - static_cast<double>(ref.data()[i]));
      c.max_diff = std::max(c.max_diff, diff);
      c.ok = c.ok && diff <= 1e-5 + 1e-4 * std::abs(static_cast<double>(ref.data()[i]));
    }
  };
  compare(dq, want.dq);
  compare(dk, want.dk);
  compare(dv, want.dv);
  return c;
}

// Every rung (and the library's flash kernel, and with --mine the learner's tile) on one head;
// with --timing each row's best time, and the GEMM peaks they are measured against.
Ladder run_ladder(const Kernels& k, const Options& o, bool mine, bool timing, attn::Rng& rng) {
  const std::size_t T = o.block_size, hs = o.head_size, tile = o.tile;
  const Matrix q = attn::randn(rng, T, hs), kk = attn::randn(rng, T, hs),
               v = attn::randn(rng, T, hs);     // (T, hs) each
  const Matrix ref = reference_head(q, kk, v);  // (T, hs)
  Ladder ladder_result;
  std::vector<RungResult>& rows = ladder_result.rows;
  const int repeats = 3;
  // The GEMM peaks the rows are measured against: measured right after each timed row on that
  // row's thread count, and the best of this run kept, so that no row is set against a peak
  // taken at a quieter moment (on a shared machine the rate moves from minute to minute).
  const std::size_t threads = attn::num_threads();
  const auto note_peak = [&](bool threaded) {
    double& peak = threaded ? ladder_result.peak_n : ladder_result.peak1;
    peak = std::max(peak, gemm_peak(threaded ? threads : 1).wall);
  };
  for (std::size_t i = 0; i < ladder::kRungs; ++i) {
    const ladder::RungInfo& rung = ladder::rung(i);
    Matrix out;
    double t = 0.0;
    if (timing) {
      t = best_time(repeats, [&] { out = rung.run(q, kk, v, tile); });
    } else {
      out = rung.run(q, kk, v, tile);
    }
    RungResult r = check_rung(fmt::format("{}. {}", i + 1, rung.name), out, ref);
    r.flops = ladder::rung_flops(i, T, hs, tile);
    r.floats = ladder::rung_floats(i, T, hs, tile, 1);  // rung 7: per thread
    r.seconds = t;
    r.threaded = i == 6;
    if (timing) note_peak(r.threaded);
    rows.push_back(r);
  }
  {  // the library's kernel: BLAS products on tiles, threads over query tiles
    Matrix out;
    const double t = timing ? best_time(repeats, [&] { out = flash_head(q, kk, v, tile); })
                            : (out = flash_head(q, kk, v, tile), 0.0);
    RungResult r = check_rung("library flash kernel", out, ref);
    r.flops = attn::fast::attention_forward_flops(1, 1, T, T, hs, true);
    const std::size_t tl = std::min(tile, T);
    r.floats = static_cast<double>(tl * tl + tl * hs + 2 * tl);  // per thread
    r.seconds = t;
    r.threaded = true;
    if (timing) note_peak(true);
    rows.push_back(r);
  }
  if (mine) {  // the learner's ex12.2, tile after tile
    // Its memory is measured, not computed: the most it held at once during a call (every
    // operator new counted, heap_count.hpp), less the rows it returns, over every call.
    Matrix out(Matrix::shape_type{T, hs});
    long held = 0;
    for (std::size_t i0 = 0; i0 < T; i0 += tile) {
      const long before = ch12::heap_bytes();
      ch12::reset_heap_peak();
      const Matrix part = k.tile(q, kk, v, i0, tile);
      const long returned = static_cast<long>(part.size() * sizeof(float));
      held = std::max(held, ch12::heap_peak() - before - returned);
      std::copy(part.begin(), part.end(), out.begin() + static_cast<std::ptrdiff_t>(i0 * hs));
    }
    RungResult r = check_rung("yours (ex12.2)", out, ref);
    probe_key_tiles(k, q, kk, v, out, tile, r);
    r.floats = static_cast<double>(held) / 4.0;
    r.measured = true;
    rows.push_back(r);
  }
  ladder_result.timing = timing;
  ladder_result.threads = threads;
  if (threads == 1) {  // every row ran on one thread: one peak, the best of all the measurements
    ladder_result.peak1 = ladder_result.peak_n =
        std::max(ladder_result.peak1, ladder_result.peak_n);
  }
  return ladder_result;
}

// 3. Long contexts: the memory of one multi-head forward at T = 16,384.
LongPreview long_preview() {
  const double T = 16384.0;
  LongPreview p;
  p.reference_bytes = static_cast<double>(kLongH) * T * T * 4.0;              // (B, H, T, T)
  p.flash_bytes = (3.0 + 1.0 + 1.0) * T * static_cast<double>(kLongC) * 4.0;  // x, q|k|v, out
  return p;
}

void run(const attn::CommonOptions& common, const Options& o) {
  if (o.sweep_given && o.long_t != 0)
    throw attn::UsageError("--sweep and --long exclude each other");
  if (o.sweep_given && !o.kernel.empty()) {
    throw attn::UsageError("--sweep runs both kernels: leave out --kernel");
  }
  if (o.backward && o.long_t == 0 && !o.sweep_given) {
    throw attn::UsageError("--backward needs --long T or --sweep");
  }
  // Nothing here reads a corpus, but a bad --data is still an error.
  if (common.data) (void)attn::load_corpus(common.data);
  // --long and --sweep take the library's tile (attn::fast::kFlashTile) unless --tile is given;
  // the ladder keeps its own default, 64.
  Options lo = o;
  if (!o.tile_given) lo.tile = attn::fast::kFlashTile;
  if (o.sweep_given) return run_sweep(common, lo);
  if (o.long_t != 0) return run_long(common, lo);
  if (!o.kernel.empty()) throw attn::UsageError("--kernel needs --long T");
  const Kernels k = common.mine ? learner_kernels() : reference_kernels();
  attn::Rng rng(common.seed);
  show_header(common.seed, common.mine);

  // 1. The online softmax by hand. Each tile is shown as soon as it is folded in, so a learner's
  // update that throws on the second tile stops after the first one's line.
  const OnlineByHand hand = draw_online_row(rng);
  show_online_scores(hand);
  attn::OnlineRow row = attn::online_row_start(hand.v.shape()[1]);
  for (std::size_t t = 0; t < 2; ++t) show_online_tile(fold_tile(k, row, hand, t));
  show_online_result(two_pass_check(hand, row));

  show_ladder(run_ladder(k, o, common.mine, common.timing, rng), o);  // 2
  if (common.mine) show_backward_mine(check_backward_tiles(o, rng));
  show_long_preview(long_preview());  // 3
}

}  // namespace

int main(int argc, char** argv) {
  attn::Cli cli("12_fast_attention",
                "Chapter 12: making attention fast and long. One causal head through a ladder of "
                "kernels, from three nested loops to tiles with the online softmax, SIMD lanes "
                "and threads, each checked against the reference; with --long T one multi-head "
                "forward (and --backward) at a length whose (T, T) matrices would not fit.");
  Options o;
  cli.add_size("--block-size", o.block_size, "T, positions of the ladder's head", 1, kMaxBlockSize,
               "the naive rung loops over (T, T)");
  cli.add_size("--head-size", o.head_size, "hs, the head size", 1, kMaxHeadSize);
  cli.add_size("--tile", o.tile,
               fmt::format("queries and keys per tile (with --long and --sweep: {} by default, the "
                           "library's)",
                           attn::fast::kFlashTile),
               1, attn::fast::kMaxFlashTile);
  cli.add_size("--long", o.long_t,
               "T: instead of the ladder, one causal multi-head forward with B 1, C 512, H 8 at "
               "length T through the flash kernel and the BLAS kernel that keeps the weights, "
               "side by side on the same threads",
               1, kMaxLong);
  cli.add_flag("--backward", o.backward, "with --long or --sweep: forward and backward");
  cli.add_string("--sweep", o.sweep,
                 "T1,T2,...: --long at each length, for the BLAS and the flash kernel, each "
                 "in its own process; a table of time (with --timing) and peak memory, and with "
                 "--svg DIR the charts long_time.svg and long_memory.svg");
  cli.add_string("--kernel", o.kernel,
                 "with --long: only flash, blas (BLAS products, keeps the (B, H, T, T) weights) "
                 "or reference (plain loops on one thread, keeps them too); blas and reference "
                 "are refused where the weights would pass 1 GiB");
  o.sweep_given = attn::flag_given(argc, argv, "--sweep");
  o.tile_given = attn::flag_given(argc, argv, "--tile");
  return cli.run(argc, argv, [&](const attn::CommonOptions& common) { run(common, o); });
}
