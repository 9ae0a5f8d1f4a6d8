// chapters/12_fast_attention/long_context.hpp: what main.cpp (the ladder) and long_context.cpp
// (--long T and --sweep) share: the options, the size limits of the long runs, and the timing
// and memory helpers.
#pragma once

#include <chrono>
#include <cstddef>
#include <limits>
#include <string>

#include "attn/core/limits.hpp"
#include "attn/term/cli.hpp"

namespace ch12 {

using Clock = std::chrono::steady_clock;

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
// GFLOP/s of a (1024, 1024) @ (1024, 1024) product through attn::fast::gemm on `threads` threads.
double gemm_peak(std::size_t threads);
// The process's peak resident memory so far, in bytes (getrusage).
double peak_rss_bytes();
// CPU seconds the process has used so far, all threads (user + system).
double cpu_seconds();

// --long T: one causal multi-head forward (and backward) through the flash kernel or the
// reference; --sweep T1,T2,...: --long at each T for both kernels, each in its own process.
void run_long(const attn::CommonOptions& common, const Options& o);
void run_sweep(const attn::CommonOptions& common, const Options& o);

}  // namespace ch12
