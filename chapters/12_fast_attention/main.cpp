// chapters/12_fast_attention/main.cpp: chapter 12, making attention fast and long.
// The narrated walkthrough: one causal attention head computed by a ladder of kernels, each one
// change away from the one before (ladder.cpp beside this file), each checked against the
// reference; the online softmax by hand on one row; and with --long T, one multi-head forward
// (and backward) at a length whose (T, T) matrices would not fit, through the flash kernel
// (common/src/fast/flash.cpp). Wall-clock times only with --timing.

#include <fmt/core.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/core/limits.hpp"
#include "attn/core/random.hpp"
#include "attn/core/threads.hpp"
#include "attn/fast/flash.hpp"
#include "attn/fast/gemm.hpp"
#include "attn/ops/online_softmax.hpp"
#include "ladder.hpp"
#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/term/narrate.hpp"
#include "attn/term/plot.hpp"
#include "attn/ops/attention.hpp"
#include "exercises.hpp"
#include "long_context.hpp"

namespace {

using namespace ch12;  // the options, limits and helpers shared with long_context.cpp

using attn::Matrix;
using attn::num;
using attn::section;
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

// ---- 1. The online softmax by hand, on one row of 8 scores in two tiles of 4.
void show_online_by_hand(const Kernels& k, attn::Rng& rng) {
  section(1, "The online softmax, by hand");
  const std::size_t n = 8, hs = 2;
  const Matrix s_all = attn::randn(rng, 1, n, 2.0f);
  const Matrix v = attn::randn(rng, n, hs);
  fmt::print("One query's 8 scores, arriving in two tiles of 4, and their values v (8, 2):\n");
  fmt::print("  s = [");
  for (std::size_t j = 0; j < n; ++j) fmt::print("{}{}", j ? ", " : "", num(s_all(0, j), 3));
  fmt::print("]\n");
  attn::OnlineRow row = attn::online_row_start(hs);
  for (std::size_t t = 0; t < 2; ++t) {
    attn::Vector s(attn::Vector::shape_type{4});
    Matrix vals(Matrix::shape_type{4, hs});
    for (std::size_t j = 0; j < 4; ++j) {
      s(j) = s_all(0, 4 * t + j);
      for (std::size_t d = 0; d < hs; ++d) vals(j, d) = v(4 * t + j, d);
    }
    const float m_before = row.m;
    k.update(row, s, vals);
    fmt::print("after tile {}: m = {}, l = {}, acc = ({}, {})", t + 1, num(row.m, 4), num(row.l, 4),
               num(row.acc(0), 4), num(row.acc(1), 4));
    if (t == 1) {
      const std::string a =
          num(std::exp(static_cast<double>(m_before) - static_cast<double>(row.m)), 4);
      if (row.m > m_before) {
        fmt::print("  (the max grew: the old l and acc were rescaled by a = {})\n", a);
      } else {
        fmt::print("  (the max stayed: a = exp(0) = {}, nothing rescaled)\n", a);
      }
    } else {
      fmt::print("\n");
    }
  }
  // The two-pass softmax of the whole row, in double.
  double m = -INFINITY, l = 0.0;
  for (std::size_t j = 0; j < n; ++j) m = std::max(m, static_cast<double>(s_all(0, j)));
  for (std::size_t j = 0; j < n; ++j) l += std::exp(static_cast<double>(s_all(0, j)) - m);
  double diff = 0.0;
  fmt::print("out = acc / l = (");
  for (std::size_t d = 0; d < hs; ++d) {
    double o = 0.0;
    for (std::size_t j = 0; j < n; ++j)
      o += std::exp(static_cast<double>(s_all(0, j)) - m) / l * static_cast<double>(v(j, d));
    const double got = static_cast<double>(row.acc(d)) / static_cast<double>(row.l);
    diff = std::max(diff, std::abs(got - o));
    fmt::print("{}{}", d ? ", " : "", num(got, 4));
  }
  const bool same = diff < 1e-5;
  fmt::print("); the two-pass softmax of all 8 scores gives the same to {}.\n",
             same ? "float rounding" : "NOT the rounding: " + num(diff, 6));
  attn::claim(same, "the online softmax equals the two-pass softmax to float rounding");
}

// ---- 2. The ladder.
struct RungResult {
  std::string name;
  std::string check;  // "same bits" or "max |diff| 3.1e-07"
  bool ok = false;
  double flops = 0.0, floats = 0.0, seconds = 0.0;
  bool threaded = false;
};

RungResult check_rung(const std::string& name, const Matrix& got, const Matrix& ref) {
  RungResult r;
  r.name = name;
  const bool same = got.size() == ref.size() &&
                    std::memcmp(got.data(), ref.data(), got.size() * sizeof(float)) == 0;
  bool within = got.size() == ref.size();
  double d = 0.0;
  for (std::size_t i = 0; within && i < got.size(); ++i) {
    const double diff =
        std::abs(static_cast<double>(got.data()[i]) - static_cast<double>(ref.data()[i]));
    d = std::max(d, diff);
    within = diff <= 1e-5 + 1e-4 * std::abs(static_cast<double>(ref.data()[i]));
  }
  r.ok = same || within;
  r.check = same ? "same bits" : fmt::format("max |diff| {:.1e}", d);
  if (!r.ok) r.check += " TOO FAR";
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

// Every rung (and the library's flash kernel, and with --mine the learner's tile) on one head.
std::vector<RungResult> run_ladder(const Kernels& k, const Options& o, bool mine, bool timing,
                                   attn::Rng& rng) {
  const std::size_t T = o.block_size, hs = o.head_size, tile = o.tile;
  const Matrix q = attn::randn(rng, T, hs), kk = attn::randn(rng, T, hs),
               v = attn::randn(rng, T, hs);
  const Matrix ref = reference_head(q, kk, v);
  std::vector<RungResult> rows;
  const int repeats = 3;
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
    rows.push_back(r);
  }
  if (mine) {  // the learner's ex12.2, tile after tile
    Matrix out(Matrix::shape_type{T, hs});
    for (std::size_t i0 = 0; i0 < T; i0 += tile) {
      const Matrix part = k.tile(q, kk, v, i0, tile);
      std::copy(part.begin(), part.end(), out.begin() + static_cast<std::ptrdiff_t>(i0 * hs));
    }
    RungResult r = check_rung("yours (ex12.2)", out, ref);
    r.flops = ladder::rung_flops(4, T, hs, tile);
    r.floats = ladder::rung_floats(4, T, hs, tile, 1);
    rows.push_back(r);
  }
  return rows;
}

void show_ladder(const std::vector<RungResult>& rows, const Options& o, bool timing) {
  section(2, "The ladder");
  fmt::print(
      "One causal head, q, k, v of shape (T, hs) = ({}, {}), tile {}. Each kernel sums in\n"
      "float and is checked against the reference attn::scaled_dot_product_attention, which\n"
      "sums in double: within the golden tolerance 1e-5 + 1e-4 |ref| (\"same bits\" if equal).\n"
      "FLOPs: the multiply-adds of the two products it performs (x2). Memory: what it holds\n"
      "beyond q, k, v and out (* per thread).\n\n",
      o.block_size, o.head_size, o.tile);
  double peak1 = 0.0, peak_n = 0.0;
  const std::size_t threads = attn::num_threads();
  if (timing) {
    peak1 = gemm_peak(1);
    peak_n = gemm_peak(threads);
  }
  fmt::print("{} {} {} {}", attn::align_left("kernel", 26), attn::align_left("check", 20),
             attn::align_right("MFLOP", 9), attn::align_right("memory", 11));
  if (timing) {
    fmt::print("  {} {} {}", attn::align_right("time", 11), attn::align_right("GFLOP/s", 8),
               attn::align_right("of peak", 8));
  }
  fmt::print("\n");
  bool all_ok = true;
  for (const RungResult& r : rows) {
    all_ok = all_ok && r.ok;
    fmt::print("{} {} {} {}", attn::align_left(r.name, 26), attn::align_left(r.check, 20),
               attn::align_right(num(r.flops / 1e6, 1), 9),
               attn::align_right(bytes_text(r.floats * 4.0), 11) +
                   (r.threaded ? "*" : (timing ? " " : "")));
    if (timing && r.seconds > 0.0) {
      const double gflops = r.flops / r.seconds / 1e9;
      fmt::print(
          " {} {} {}", attn::align_right(num(r.seconds * 1e3, 3) + " ms", 11),
          attn::align_right(num(gflops, 1), 8),
          attn::align_right(num(100.0 * gflops / (r.threaded ? peak_n : peak1), 1) + "%", 8));
    }
    fmt::print("\n");
  }
  fmt::print("{}\n", all_ok ? "Every kernel computes the reference's attention."
                            : "A kernel does NOT compute the reference's attention (TOO FAR).");
  attn::claim(all_ok, "every kernel of the ladder equals the reference within the tolerance");
  if (timing) {
    fmt::print(
        "GEMM peak measured in this run ((1024, 1024) @ (1024, 1024)): {} GFLOP/s on 1\n"
        "thread, {} GFLOP/s on {} (rows 7 and the library kernel are measured against the\n"
        "second).\n",
        num(peak1, 1), num(peak_n, 1), threads);
    print_blas_core();
  }
  // Where the gains come from, in the numbers of this run.
  const double full = rows[2].flops, blocks = rows[3].flops;
  fmt::print("\nRung 4 performs {}% of rung 3's FLOPs: {}\n", num(100.0 * blocks / full, 1),
             blocks < full ? "its blocks skip the masked upper triangle."
                           : "with one block (T <= tile) there is nothing to skip.");
  attn::claim(blocks < full || o.block_size <= o.tile,
              "skipping causal blocks performs fewer FLOPs than the full product");
  const bool smaller = rows[4].floats < rows[3].floats;
  fmt::print("Rung 5 holds {} instead of {}: {}\n", bytes_text(rows[4].floats * 4.0),
             bytes_text(rows[3].floats * 4.0),
             smaller ? "no (T, T) matrix, and its tiles do not grow with T."
                     : "at a T this small the tiles outweigh the (T, T) matrix, but they do not "
                       "grow with T.");
}

// ---- 3. Long contexts: the memory the reference would need.
void show_long_preview() {
  section(3, "Long contexts");
  const double T = 16384.0;
  const double ref_bytes = static_cast<double>(kLongH) * T * T * 4.0;
  const double flash_bytes = (3.0 + 1.0 + 1.0) * T * static_cast<double>(kLongC) * 4.0;
  fmt::print(
      "Multi-head attention with C = {}, H = {} at T = 16,384: the reference keeps the (B, H, T, "
      "T)\n"
      "weights, {}; the flash kernel keeps x, q|k|v and the output, {} in all.\n"
      "Run it: 12_fast_attention --long 16384 --timing (T up to {}).\n",
      kLongC, kLongH, bytes_text(ref_bytes), bytes_text(flash_bytes), kMaxLong);
}

Kernels reference_kernels() { return {&attn::online_softmax_update, &attn::attention_tile}; }
Kernels learner_kernels() { return {&ex12::online_softmax_update, &ex12::attention_tile}; }

void run(const attn::CommonOptions& common, const Options& o) {
  if (o.sweep_given && o.long_t != 0)
    throw attn::UsageError("--sweep and --long exclude each other");
  if (o.sweep_given && o.kernel != "flash") {
    throw attn::UsageError("--sweep runs both kernels: leave out --kernel");
  }
  if (o.backward && o.long_t == 0 && !o.sweep_given) {
    throw attn::UsageError("--backward needs --long T or --sweep");
  }
  // Nothing here reads a corpus, but a bad --data is still an error.
  if (common.data) (void)attn::load_corpus(common.data);
  if (o.sweep_given) return run_sweep(common, o);
  if (o.long_t != 0) return run_long(common, o);
  if (o.kernel != "flash") throw attn::UsageError("--kernel needs --long T");
  const Kernels k = common.mine ? learner_kernels() : reference_kernels();
  attn::Rng rng(common.seed);
  fmt::print("Chapter 12: making attention fast and long\n");
  fmt::print("seed {}, functions: {}\n", common.seed,
             common.mine ? "yours (ex12::, --mine)"
                         : "the library's (attn::online_softmax_update, attn::attention_tile)");
  show_online_by_hand(k, rng);
  const std::vector<RungResult> rows = run_ladder(k, o, common.mine, common.timing, rng);
  show_ladder(rows, o, common.timing);
  show_long_preview();
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
  cli.add_size("--tile", o.tile, "queries and keys per tile", 1, attn::fast::kMaxFlashTile);
  cli.add_size("--long", o.long_t,
               "T: instead of the ladder, one causal multi-head forward with B 1, C 512, H 8 at "
               "length T through the flash kernel",
               1, kMaxLong);
  cli.add_flag("--backward", o.backward, "with --long or --sweep: forward and backward");
  cli.add_string("--sweep", o.sweep,
                 "T1,T2,...: --long at each length, for the reference and the flash kernel, each "
                 "in its own process; a table of time (with --timing) and peak memory, and with "
                 "--svg DIR the charts long_time.svg and long_memory.svg");
  cli.add_string("--kernel", o.kernel,
                 "with --long: flash (default) or reference (refused where its (B, H, T, T) "
                 "weights would pass 1 GiB)");
  o.sweep_given = attn::flag_given(argc, argv, "--sweep");
  return cli.run(argc, argv, [&](const attn::CommonOptions& common) { run(common, o); });
}
