// chapters/12_fast_attention/main.cpp: chapter 12, making attention fast and long.
// The narrated walkthrough: one causal attention head computed by a ladder of kernels, each one
// change away from the one before (common/src/fast/ladder.cpp), each checked against the
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
#include "attn/fast/ladder.hpp"
#include "attn/io/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/io/narrate.hpp"
#include "attn/io/plot.hpp"
#include "attn/ops/attention.hpp"
#include "exercises.hpp"

namespace {

using attn::Matrix;
using attn::num;
using attn::section;
using attn::Tensor;
namespace ladder = attn::fast::ladder;
using Clock = std::chrono::steady_clock;

// Bounds of the size flags (stated in --help).
constexpr std::size_t kMaxBlockSize = 4096;  // the naive rung holds and loops over (T, T)
constexpr std::size_t kMaxHeadSize = 256;
constexpr std::size_t kMaxLong = 32768;  // the flash forward at 32k: ~0.3 GB, seconds per pass
// --long's model: B 1, C 512, H 8 (hs 64).
constexpr std::size_t kLongC = 512, kLongH = 8;
// The reference keeps the (B, H, T, T) weights: refused beyond this many floats (1 GiB).
constexpr std::size_t kReferenceCap = attn::limits::kMaxElements;

struct Options {
  std::size_t block_size = 256;  // T of the ladder
  std::size_t head_size = 64;    // hs
  std::size_t tile = 64;         // queries and keys per tile
  std::size_t long_t = 0;        // --long T; 0: not asked
  bool backward = false;
  std::string kernel = "flash";
  std::string sweep;         // --sweep T1,T2,...: the lengths of the chart
  bool sweep_given = false;  // --sweep on the command line (an empty list is an error)
};

// ---- The functions the walkthrough calls: the library's, or with --mine the learner's ex12::.
struct Kernels {
  void (*update)(ladder::OnlineRow&, const attn::Vector&, const Matrix&);                 // ex12.1
  Matrix (*tile)(const Matrix&, const Matrix&, const Matrix&, std::size_t, std::size_t);  // ex12.2
};

std::string bytes_text(double bytes) {
  if (bytes < 1024.0 * 1024.0) return num(bytes / 1024.0, 1) + " KiB";
  if (bytes < 1024.0 * 1024.0 * 1024.0) return num(bytes / (1024.0 * 1024.0), 1) + " MiB";
  return num(bytes / (1024.0 * 1024.0 * 1024.0), 2) + " GiB";
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The best of `repeats` timings of f(), in seconds.
template <class F>
double best_time(int repeats, F&& f) {
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

// With --timing, beside the GEMM peak: which kernels OpenBLAS runs, and a warning on stderr when
// they are older than the processor (attn::blas_core_warning: a release that does not know a new
// processor falls back to its SSE3 kernels, and every GEMM here runs several times slower).
void print_blas_core() {
  fmt::print("OpenBLAS kernels: {}\n", attn::blas_core());
  if (const std::string warning = attn::blas_core_warning(); !warning.empty()) {
    std::fflush(stdout);
    fmt::print(stderr, "12_fast_attention: warning: {}\n", warning);
  }
}

// GEMM peak: GFLOP/s of a (n, n) @ (n, n) product through attn::gemm on `threads` threads.
double gemm_peak(std::size_t threads) {
  const std::size_t saved = attn::num_threads();
  attn::set_num_threads(threads);
  const std::size_t n = 1024;
  attn::Rng rng(1);
  const Matrix a = attn::randn(rng, n, n), b = attn::randn(rng, n, n);
  Matrix c(Matrix::shape_type{n, n});
  const double t = best_time(3, [&] {
    attn::fast::gemm(n, n, n, 1.0f, a.data(), false, b.data(), false, 0.0f, c.data());
  });
  attn::set_num_threads(saved);
  return 2.0 * static_cast<double>(n * n * n) / t / 1e9;
}

double peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0;  // Linux: KiB
}

// CPU seconds the process has used so far, all threads (user + system): on a busy machine the
// wall-clock time also counts the waits for a core.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const auto sec = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

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
  ladder::OnlineRow row = ladder::online_row_start(hs);
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
      "One causal head, q, k, v of shape (T, hs) = ({}, {}), tile {}. Each kernel is checked\n"
      "against the reference attn::scaled_dot_product_attention: \"same bits\" where it keeps\n"
      "the reference's order of sums, else within the golden tolerance 1e-5 + 1e-4 |ref|.\n"
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

// ---- --long T: one multi-head forward (and backward) through the flash kernel.
// The reference's (B, H, T, T) weights at length T (B 1), in floats, and whether they fit its cap.
double reference_floats(std::size_t T) {
  return static_cast<double>(kLongH) * static_cast<double>(T) * static_cast<double>(T);
}
bool reference_fits(std::size_t T) {
  return reference_floats(T) <= static_cast<double>(kReferenceCap);
}
std::size_t reference_max_t() {
  return static_cast<std::size_t>(std::sqrt(static_cast<double>(kReferenceCap / kLongH)));
}

void run_long(const attn::CommonOptions& common, const Options& o) {
  const std::size_t T = o.long_t, C = kLongC, H = kLongH, hs = C / H;
  const bool flash = o.kernel == "flash";
  if (!flash && o.kernel != "reference") {
    throw attn::UsageError(fmt::format("--kernel must be flash or reference, got '{}'", o.kernel));
  }
  if (!flash && !reference_fits(T)) {
    throw attn::UsageError(fmt::format(
        "--long {} with --kernel reference needs the (B, H, T, T) weights, {} x {} x {} floats "
        "= {}, above the cap of {}: use --kernel flash, or T at most {}",
        T, H, T, T, bytes_text(reference_floats(T) * 4.0),
        bytes_text(static_cast<double>(kReferenceCap) * 4.0), reference_max_t()));
  }
  fmt::print("Chapter 12: long context\n");
  fmt::print("causal multi-head attention, B 1, T {}, C {}, H {} (hs {}), kernel {}{}\n", T, C, H,
             hs, o.kernel, o.backward ? ", forward + backward" : ", forward");
  attn::Rng rng(common.seed);
  const Tensor<3> x = attn::randn<3>(rng, {1, T, C});
  const attn::MhaWeights w = attn::mha_init(rng, C, 1.0f / std::sqrt(static_cast<float>(C)));
  const double proj =
      8.0 * static_cast<double>(T) * static_cast<double>(C) * static_cast<double>(C);
  double flops = proj + attn::fast::attention_forward_flops(1, H, T, T, hs, true);
  if (o.backward) flops += 2.0 * proj + attn::fast::attention_backward_flops(1, H, T, T, hs, true);
  const auto t0 = Clock::now();
  const double cpu0 = cpu_seconds();
  bool finite = true;
  const auto check_finite = [&](const Tensor<3>& t) {
    finite = finite && std::all_of(t.begin(), t.end(), [](float f) { return std::isfinite(f); });
  };
  if (!o.backward) {
    const Tensor<3> out = flash ? attn::fast::mha_flash_forward(x, w, H, true, o.tile)
                                : attn::mha_forward(x, w, H, true, /*need_weights=*/false).out;
    check_finite(out);
  } else {
    const Tensor<3> dout = attn::randn<3>(rng, {1, T, C});
    attn::MhaWeights g = w;
    for (attn::Matrix* m : {&g.w_q, &g.w_k, &g.w_v, &g.w_o}) m->fill(0.0f);
    Tensor<3> dx;
    if (flash) {
      attn::fast::FlashMhaCache cache;
      check_finite(attn::fast::mha_flash_forward(x, w, H, true, cache, o.tile));
      attn::fast::mha_flash_backward(dout, cache, w, H, true, dx, g, o.tile);
    } else {
      attn::MhaCache cache;
      check_finite(attn::mha_forward(x, w, H, true, cache));
      attn::mha_backward(dout, cache, w, H, true, dx, g);
    }
    check_finite(dx);
  }
  const double seconds = seconds_since(t0);
  const double cpu = cpu_seconds() - cpu0;
  const double rss = peak_rss_bytes();  // before the GEMM peak below allocates its matrices
  fmt::print("{} GFLOP ({} in the attention products); outputs {}\n",
             attn::format_significant(flops / 1e9),
             attn::format_significant((flops - proj * (o.backward ? 3.0 : 1.0)) / 1e9),
             finite ? "all finite" : "NOT all finite");
  attn::claim(finite, "the long-context outputs are all finite");
  if (!common.timing) {
    fmt::print("(add --timing for the time, GFLOP/s, the GEMM peak and the peak memory)\n");
    return;
  }
  const std::size_t threads = attn::num_threads();
  const double peak = gemm_peak(threads);
  const double at_peak = flops / (peak * 1e9);
  fmt::print("time {} s, {} GFLOP/s on {} thread{}\n", num(seconds, 3),
             num(flops / seconds / 1e9, 1), threads, threads == 1 ? "" : "s");
  fmt::print("CPU time {} s over all threads ({} of {} cores busy on average)\n", num(cpu, 2),
             num(cpu / seconds, 2), threads);
  fmt::print("GEMM peak {} GFLOP/s: these FLOPs at peak take {} s, this run {}x that\n",
             num(peak, 1), num(at_peak, 2), num(seconds / at_peak, 2));
  print_blas_core();
  fmt::print("peak resident memory of the process (getrusage): {}\n", bytes_text(rss));
}

// ---- --sweep T1,T2,...: --long at each T, for the reference and the flash kernel, each run in
// its own process (this binary again, /proc/self/exe) so that each peak memory is its own.
struct SweepPoint {
  std::size_t T = 0;
  bool ran = false;        // false: the reference refused (its weights above the cap)
  double seconds = 0.0;    // the child's "time" line (with --timing)
  double rss_bytes = 0.0;  // the child's peak resident memory
};

// "1024,2048,4096" -> {1024, 2048, 4096}; a UsageError for an empty list, a length that is not
// a whole number, 0 or one above kMaxLong.
std::vector<std::size_t> parse_sweep(const std::string& text) {
  if (text.empty()) {
    throw attn::UsageError("--sweep needs comma-separated lengths, e.g. 1024,2048,4096, got ''");
  }
  std::vector<std::size_t> ts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    const bool digits = !item.empty() && item.size() <= 9 &&
                        item.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) {
      throw attn::UsageError(fmt::format("--sweep: '{}' is not a length in '{}'", item, text));
    }
    const std::size_t T = std::stoul(item);
    if (T < 1 || T > kMaxLong) {
      throw attn::UsageError(
          fmt::format("--sweep: every T must be from 1 to {}, got {}", kMaxLong, T));
    }
    ts.push_back(T);
    start = end + 1;
  }
  return ts;
}

// The number after `prefix` on the line of `out` that starts with it (NaN when absent), scaled
// by its unit when `units` (bytes_text's KiB, MiB, GiB).
double read_number(const std::string& out, const std::string& prefix, bool units) {
  const std::size_t at = out.find(prefix);
  if (at == std::string::npos) return std::nan("");
  const char* p = out.c_str() + at + prefix.size();
  char* end = nullptr;
  const double v = std::strtod(p, &end);
  if (!units) return v;
  const std::string unit(end, std::min<std::size_t>(4, std::strlen(end)));
  const double scale = unit == " KiB"   ? 1024.0
                       : unit == " MiB" ? 1024.0 * 1024.0
                                        : 1024.0 * 1024.0 * 1024.0;
  return v * scale;
}

// One child: this binary with --long T --kernel K --timing; its time and peak memory.
SweepPoint run_child(const attn::CommonOptions& common, const Options& o, std::size_t T,
                     const std::string& kernel) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string quoted = "'";
  for (const char ch : self) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  quoted += "'";
  const std::string cmd =
      fmt::format("{} --long {} --kernel {} --tile {} --seed {} --timing{}", quoted, T, kernel,
                  o.tile, common.seed, o.backward ? " --backward" : "");
  std::FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("--sweep: could not start " + self);
  std::string out;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int status = pclose(pipe);
  if (status != 0) {
    throw std::runtime_error(
        fmt::format("--sweep: the run at T = {} with the {} kernel failed "
                    "(exit status {})",
                    T, kernel, WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  }
  SweepPoint p;
  p.T = T;
  p.ran = true;
  p.seconds = read_number(out, "\ntime ", false);
  p.rss_bytes = read_number(out, "peak resident memory of the process (getrusage): ", true);
  return p;
}

std::vector<attn::Series> sweep_series(const std::vector<SweepPoint>& ref,
                                       const std::vector<SweepPoint>& flash, bool memory) {
  std::vector<attn::Series> series(2);
  series[0].name = "reference (keeps the weights)";
  series[1].name = "flash kernel";
  series[1].dashed = true;
  for (std::size_t k = 0; k < 2; ++k) {
    for (const SweepPoint& p : k == 0 ? ref : flash) {
      if (!p.ran) continue;
      series[k].x.push_back(static_cast<double>(p.T));
      series[k].y.push_back(memory ? p.rss_bytes / (1024.0 * 1024.0) : p.seconds);
    }
  }
  return series;
}

void write_sweep_svgs(const std::filesystem::path& dir, const std::vector<SweepPoint>& ref,
                      const std::vector<SweepPoint>& flash, bool timing, bool backward) {
  attn::LineChartOptions c;
  c.log_x = true;
  c.log_y = true;
  c.dots = true;
  c.legend = attn::LineChartOptions::Legend::top_left;
  for (const SweepPoint& p : flash) c.x_ticks.push_back(static_cast<double>(p.T));
  c.x_label = "T (log scale)";
  const std::string what = backward ? "forward + backward" : "forward";
  const std::string stop =
      fmt::format("the reference stops above T = {} (1 GiB of weights)", reference_max_t());
  c.title = fmt::format("Causal MHA {} (B 1, C 512, H 8): peak memory; {}", what, stop);
  c.y_label = "peak resident memory, MiB";
  attn::write_svg(dir / "long_memory.svg", attn::line_chart_svg(sweep_series(ref, flash, true), c));
  if (!timing) return;
  c.title = fmt::format("Causal MHA {} (B 1, C 512, H 8): time; {}", what, stop);
  c.y_label = "seconds";
  attn::write_svg(dir / "long_time.svg", attn::line_chart_svg(sweep_series(ref, flash, false), c));
}

void run_sweep(const attn::CommonOptions& common, const Options& o) {
  const std::vector<std::size_t> ts = parse_sweep(o.sweep);
  fmt::print("Chapter 12: time and peak memory against T\n");
  fmt::print(
      "causal multi-head attention {}, B 1, C {}, H {}, tile {}; each T and kernel runs in its\n"
      "own process (--long T), whose peak resident memory is its own\n",
      o.backward ? "forward + backward" : "forward", kLongC, kLongH, o.tile);
  const bool timing = common.timing;
  fmt::print("{}", attn::align_right("T", 6));
  for (const char* k : {"reference", "flash"}) {
    if (timing) fmt::print("  {}", attn::align_right(std::string(k) + " time", 15));
    fmt::print("  {}", attn::align_right(std::string(k) + " memory", 17));
  }
  fmt::print("\n");
  std::vector<SweepPoint> ref, flash;
  for (const std::size_t T : ts) {
    SweepPoint r;
    r.T = T;
    if (reference_fits(T)) r = run_child(common, o, T, "reference");
    const SweepPoint f = run_child(common, o, T, "flash");
    ref.push_back(r);
    flash.push_back(f);
    fmt::print("{}", attn::align_right(std::to_string(T), 6));
    for (const SweepPoint* p : std::array<const SweepPoint*, 2>{&r, &f}) {
      if (!p->ran) {
        fmt::print("  {}", attn::align_right("refused", timing ? 15 : 17));
        if (timing) fmt::print("  {}", attn::align_right("", 17));
        continue;
      }
      if (timing) fmt::print("  {}", attn::align_right(num(p->seconds, 3) + " s", 15));
      fmt::print("  {}", attn::align_right(bytes_text(p->rss_bytes), 17));
    }
    fmt::print("\n");
  }
  fmt::print(
      "refused: the reference's (B, H, T, T) weights would pass its cap of {} (T above {})\n",
      bytes_text(static_cast<double>(kReferenceCap) * 4.0), reference_max_t());
  if (common.svg_dir) {
    write_sweep_svgs(*common.svg_dir, ref, flash, timing, o.backward);
    fmt::print("wrote {}{}\n", (*common.svg_dir / "long_memory.svg").string(),
               timing ? " and " + (*common.svg_dir / "long_time.svg").string() : "");
  }
}

Kernels reference_kernels() { return {&ladder::online_softmax_update, &ladder::attention_tile}; }
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
             common.mine ? "yours (ex12::, --mine)" : "the library's (attn::fast::ladder)");
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
