// chapters/12_fast_attention/long_context.hpp: what main.cpp (the ladder) and long_context.cpp
// (--long T and --sweep) share: the options, the size limits of the long runs, and the timing
// and memory helpers.
#pragma once

#include <chrono>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/limits.hpp"
#include "attn/term/cli.hpp"

namespace ch12 {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxLong = 32768;  // the flash forward at 32k: ~0.3 GB, seconds per pass
// --long's model: B 1, C 512, H 8 (hs 64).
constexpr std::size_t kLongC = 512, kLongH = 8;
// The BLAS kernel and the reference keep the (B, H, T, T) weights: refused beyond this many
// floats (1 GiB).
constexpr std::size_t kReferenceCap = attn::limits::kMaxElements;

// The time of a --long run, estimated before it starts (kernel_seconds): its FLOPs at a rate
// each kernel beats on one thread of this course's 2-core machine (flash 50 GFLOP/s, measured
// 80-88; the BLAS kernel 10; the reference 1, its (H, T, T) weights written and read again), plus
// ~1 us for each pair of tiles the flash kernel visits (H (T/tile)^2 / 2 of them; 3x with the
// backward): with --tile 1, --long 4096 visits 67 million and takes ~54 s, --long 32768 would
// take over an hour. A --long run or a whole --sweep is held to kMaxLongSeconds (about two and a
// half minutes), or refused up front.
inline constexpr double kMaxLongSeconds = 150.0;

struct Options {
  std::size_t block_size = 256;  // T of the ladder
  std::size_t head_size = 64;    // hs
  std::size_t tile = 64;         // queries and keys per tile (the ladder's; see tile_given)
  std::size_t long_t = 0;        // --long T; 0: not asked
  bool backward = false;
  std::string kernel;  // --kernel: flash, blas or reference; empty: flash and blas side by side
  std::string sweep;   // --sweep T1,T2,...: the lengths of the chart
  bool sweep_given = false;  // --sweep on the command line (an empty list is an error)
  bool tile_given = false;   // --tile on the command line (else --long takes kFlashTile)
};

// "12.3 MiB": bytes in KiB, MiB or GiB.
std::string bytes_text(double bytes);
double seconds_since(Clock::time_point t0);
// The best of `repeats` timings of f(), in seconds.
template <class F>
double best_time(int repeats, F&& f) {
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = Clock::now();
    f();
    const double t = seconds_since(t0);
    if (t < best) best = t;
  }
  return best;
}
// With --timing, beside the GEMM peak: OpenBLAS's kernels, and a warning when they are old.
void print_blas_core();
// GFLOP/s of a (1024, 1024) @ (1024, 1024) product through attn::fast::gemm on `threads` threads:
// per wall-clock second, and per CPU second (all threads' user + system time).
struct GemmPeak {
  double wall = 0.0, cpu = 0.0;
};
GemmPeak gemm_peak(std::size_t threads);
// The process's peak resident memory so far, in bytes (getrusage).
double peak_rss_bytes();
// CPU seconds the process has used so far, all threads (user + system).
double cpu_seconds();

// --long T: one causal multi-head forward (and backward) through the flash kernel and the BLAS
// kernel that keeps the weights, side by side on the same threads (or the one --kernel names);
// --sweep T1,T2,...: --long at each T for both kernels, each in its own process.
void run_long(const attn::CommonOptions& common, const Options& o);
void run_sweep(const attn::CommonOptions& common, const Options& o);

// The estimate of one kernel's --long T run (flash, blas or reference), of flash (true) or the
// reference alone, and of a whole --sweep.
double kernel_seconds(std::size_t T, std::size_t tile, bool backward, const std::string& kernel);
double long_seconds(std::size_t T, std::size_t tile, bool backward, bool flash);
double sweep_seconds(const std::vector<std::size_t>& ts, std::size_t tile, bool backward);

}  // namespace ch12
