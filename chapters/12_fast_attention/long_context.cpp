// chapters/12_fast_attention/long_context.cpp: --long T and --sweep, the long-context runs of
// chapter 12 (time, GFLOP/s and peak memory of one multi-head forward, and backward, at length
// T; the sweep's table and charts), and the timing helpers the ladder shares.
#include <fmt/core.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <csignal>
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
#include "attn/fast/attention.hpp"
#include "attn/fast/gemm.hpp"
#include "ladder.hpp"
#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/term/narrate.hpp"
#include "attn/term/plot.hpp"
#include "attn/ops/attention.hpp"
#include "exercises.hpp"

#include "heap_count.hpp"
#include "long_context.hpp"

namespace ch12 {

using attn::Matrix;
using attn::num;
using attn::Tensor;

std::string bytes_text(double bytes) {
  if (bytes < 1024.0 * 1024.0) return num(bytes / 1024.0, 1) + " KiB";
  if (bytes < 1024.0 * 1024.0 * 1024.0) return num(bytes / (1024.0 * 1024.0), 1) + " MiB";
  return num(bytes / (1024.0 * 1024.0 * 1024.0), 2) + " GiB";
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
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

// GEMM peak: GFLOP/s of a (n, n) @ (n, n) product through attn::fast::gemm on `threads` threads,
// the best of 3, per wall-clock second and per CPU second (user + system over all threads: the
// rate of a core while it runs, which other programs on a busy machine disturb much less).
GemmPeak gemm_peak(std::size_t threads) {
  const std::size_t saved = attn::num_threads();
  attn::set_num_threads(threads);
  const std::size_t n = 1024;
  attn::Rng rng(1);
  const Matrix a = attn::randn(rng, n, n), b = attn::randn(rng, n, n);
  Matrix c(Matrix::shape_type{n, n});
  double wall = std::numeric_limits<double>::infinity(), cpu = wall;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = Clock::now();
    const double cpu0 = cpu_seconds();
    attn::fast::gemm(n, n, n, 1.0f, a.data(), false, b.data(), false, 0.0f, c.data());
    cpu = std::min(cpu, cpu_seconds() - cpu0);
    wall = std::min(wall, seconds_since(t0));
  }
  attn::set_num_threads(saved);
  const double flop = 2.0 * static_cast<double>(n * n * n);
  return {flop / wall / 1e9, flop / cpu / 1e9};
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

// ---- --long T: one multi-head forward (and backward) through each kernel, side by side.
// The (B, H, T, T) weights that the BLAS kernel and the reference keep at length T (B 1), in
// floats, and whether they fit their cap.
double reference_floats(std::size_t T) {
  return static_cast<double>(kLongH) * static_cast<double>(T) * static_cast<double>(T);
}
bool reference_fits(std::size_t T) {
  return reference_floats(T) <= static_cast<double>(kReferenceCap);
}
std::size_t reference_max_t() {
  return static_cast<std::size_t>(std::sqrt(static_cast<double>(kReferenceCap / kLongH)));
}

// The projections' FLOPs (x @ w_q, w_k, w_v and the output's @ w_o) and the attention's.
double projection_flops(std::size_t T) {
  return 8.0 * static_cast<double>(T) * static_cast<double>(kLongC) * static_cast<double>(kLongC);
}
double long_flops(std::size_t T, bool backward) {
  const std::size_t hs = kLongC / kLongH;
  double flops =
      projection_flops(T) + attn::fast::attention_forward_flops(1, kLongH, T, T, hs, true);
  if (backward) {
    flops +=
        2.0 * projection_flops(T) + attn::fast::attention_backward_flops(1, kLongH, T, T, hs, true);
  }
  return flops;
}

// The estimated seconds of one kernel's run, at the rates long_context.hpp gives (each below what
// the kernel measured on one thread, so that a slower or busier machine still finishes near the
// estimate; the cost per pair of tiles, 0.45 us measured at tile 8, is taken at 1 us).
double kernel_seconds(std::size_t T, std::size_t tile, bool backward, const std::string& kernel) {
  const double flops = long_flops(T, backward);
  if (kernel == "reference") return flops / 1e9;
  if (kernel == "blas") return flops / 10e9;
  const double tiles = std::ceil(static_cast<double>(T) / static_cast<double>(tile));
  const double pairs = static_cast<double>(kLongH) * tiles * (tiles + 1.0) / 2.0;
  return flops / 50e9 + pairs * 1e-6 * (backward ? 3.0 : 1.0);
}

double long_seconds(std::size_t T, std::size_t tile, bool backward, bool flash) {
  return kernel_seconds(T, tile, backward, flash ? "flash" : "reference");
}

double sweep_seconds(const std::vector<std::size_t>& ts, std::size_t tile, bool backward) {
  double seconds = 0.0;
  for (const std::size_t T : ts) {
    // Each child starts a process and measures the GEMM peak (--timing): about half a second.
    seconds += 0.5 + kernel_seconds(T, tile, backward, "flash");
    if (reference_fits(T)) seconds += 0.5 + kernel_seconds(T, tile, backward, "blas");
  }
  return seconds;
}

namespace {

// What one kernel's run measured.
struct KernelRun {
  std::string kernel;
  bool ran = false;         // false: refused, its weights above the cap
  double seconds = 0.0;     // wall clock
  double cpu = 0.0;         // user + system, all threads
  double heap_bytes = 0.0;  // the most it held at once through operator new (heap_count.hpp)
  std::size_t threads = 1;
  bool finite = true;
};

// What each kernel does, in one line of the table's legend.
std::string kernel_what(const std::string& kernel, std::size_t tile) {
  if (kernel == "flash") {
    return fmt::format(
        "attn::fast::mha_flash_forward: BLAS products on ({0}, {0}) tiles, online softmax, "
        "no (T, T) matrix",
        tile);
  }
  if (kernel == "blas") {
    return "attn::fast::mha_forward keeping the weights: per head q k^T by BLAS (row blocks "
           "up to their last key), a SIMD row softmax, weights @ v by BLAS; holds the (B, H, T, "
           "T) weights";
  }
  return "attn::mha_forward, the reference: plain loops on one thread, sums in double; holds "
         "the (B, H, T, T) weights";
}

KernelRun run_kernel(const std::string& kernel, const Tensor<3>& x, const attn::MhaWeights& w,
                     const Tensor<3>& dout, bool backward, std::size_t tile) {
  const std::size_t H = kLongH;
  KernelRun r;
  r.kernel = kernel;
  r.ran = true;
  r.threads = kernel == "reference" ? 1 : attn::num_threads();
  const auto check_finite = [&](const Tensor<3>& t) {
    r.finite =
        r.finite && std::all_of(t.begin(), t.end(), [](float f) { return std::isfinite(f); });
  };
  const long before = heap_bytes();
  reset_heap_peak();
  const auto t0 = Clock::now();
  const double cpu0 = cpu_seconds();
  if (!backward) {
    if (kernel == "flash") {
      check_finite(attn::fast::mha_flash_forward(x, w, H, true, tile));
    } else if (kernel == "blas") {
      check_finite(attn::fast::mha_forward(x, w, H, true, /*need_weights=*/true).out);
    } else {
      check_finite(attn::mha_forward(x, w, H, true, /*need_weights=*/false).out);
    }
  } else {
    attn::MhaWeights g = w;
    for (attn::Matrix* m : {&g.w_q, &g.w_k, &g.w_v, &g.w_o}) m->fill(0.0f);
    Tensor<3> dx;
    if (kernel == "flash") {
      attn::fast::FlashMhaCache cache;
      check_finite(attn::fast::mha_flash_forward(x, w, H, true, cache, tile));
      attn::fast::mha_flash_backward(dout, cache, w, H, true, dx, g, tile);
    } else if (kernel == "blas") {
      attn::fast::MhaCache cache;
      check_finite(attn::fast::mha_forward(x, w, H, true, cache, /*need_weights=*/true));
      attn::fast::mha_backward(dout, cache, w, H, true, dx, g);
    } else {
      attn::MhaCache cache;
      check_finite(attn::mha_forward(x, w, H, true, cache));
      attn::mha_backward(dout, cache, w, H, true, dx, g);
    }
    check_finite(dx);
  }
  r.seconds = seconds_since(t0);
  r.cpu = cpu_seconds() - cpu0;
  r.heap_bytes = static_cast<double>(heap_peak() - before);
  return r;
}

}  // namespace

void run_long(const attn::CommonOptions& common, const Options& o) {
  const std::size_t T = o.long_t, C = kLongC, H = kLongH, hs = C / H;
  if (!o.kernel.empty() && o.kernel != "flash" && o.kernel != "blas" && o.kernel != "reference") {
    throw attn::UsageError(
        fmt::format("--kernel must be flash, blas or reference, got '{}'", o.kernel));
  }
  const bool one = !o.kernel.empty();
  if (one && o.kernel != "flash" && !reference_fits(T)) {
    throw attn::UsageError(fmt::format(
        "--long {} with --kernel {} needs the (B, H, T, T) weights, {} x {} x {} floats "
        "= {}, above the cap of {}: use --kernel flash, or T at most {}",
        T, o.kernel, H, T, T, bytes_text(reference_floats(T) * 4.0),
        bytes_text(static_cast<double>(kReferenceCap) * 4.0), reference_max_t()));
  }
  // Without --kernel: flash and, where its weights fit, the BLAS kernel, in this order.
  std::vector<std::string> kernels;
  if (one) {
    kernels.push_back(o.kernel);
  } else {
    kernels.emplace_back("flash");
    if (reference_fits(T)) kernels.emplace_back("blas");
  }
  double seconds = 0.0;
  for (const std::string& k : kernels) seconds += kernel_seconds(T, o.tile, o.backward, k);
  if (seconds > kMaxLongSeconds) {
    // What would help: a shorter T always; a larger tile where the tiles' count dominates.
    std::vector<std::string> ways{"lower --long"};
    if (o.backward) ways.emplace_back("drop --backward");
    if (o.kernel == "reference") ways.emplace_back("use --kernel flash");
    if (o.kernel != "reference" && o.tile < attn::fast::kFlashTile &&
        kernel_seconds(T, attn::fast::kFlashTile, o.backward, "flash") < seconds / 2.0) {
      ways.emplace_back(fmt::format("raise --tile ({} by default)", attn::fast::kFlashTile));
    }
    std::string lower = ways[0];
    for (std::size_t i = 1; i < ways.size(); ++i) {
      lower += (i + 1 == ways.size() ? " or " : ", ") + ways[i];
    }
    throw attn::UsageError(fmt::format(
        "--long {}{} with --kernel {}{} would run for about {:.0f} s here, more than the limit of "
        "{:.0f} s: {}",
        T, o.backward ? " --backward" : "", one ? o.kernel : "flash",
        o.kernel != "reference" ? fmt::format(" and --tile {}", o.tile) : std::string(), seconds,
        kMaxLongSeconds, lower));
  }
  const std::size_t threads = attn::num_threads();
  fmt::print("Chapter 12: long context\n");
  fmt::print("causal multi-head attention, B 1, T {}, C {}, H {} (hs {}), {}, {} thread{}{}\n", T,
             C, H, hs, o.backward ? "forward + backward" : "forward", threads,
             threads == 1 ? "" : "s",
             o.kernel == "reference" ? " (the reference runs on one)" : " for every kernel");
  attn::Rng rng(common.seed);
  const Tensor<3> x = attn::randn<3>(rng, {1, T, C});
  const attn::MhaWeights w = attn::mha_init(rng, C, 1.0f / std::sqrt(static_cast<float>(C)));
  const Tensor<3> dout = o.backward ? attn::randn<3>(rng, {1, T, C}) : Tensor<3>();
  const double proj = projection_flops(T);
  const double flops = long_flops(T, o.backward);
  std::vector<KernelRun> runs;
  for (const std::string& k : kernels)
    runs.push_back(run_kernel(k, x, w, dout, o.backward, o.tile));
  const double rss = peak_rss_bytes();  // before the GEMM peak below allocates its matrices
  bool finite = true;
  for (const KernelRun& r : runs) finite = finite && r.finite;
  fmt::print("{} GFLOP ({} in the attention products, the visible pairs only); outputs {}\n",
             attn::format_significant(flops / 1e9),
             attn::format_significant((flops - proj * (o.backward ? 3.0 : 1.0)) / 1e9),
             finite ? "all finite" : "NOT all finite");
  attn::claim(finite, "the long-context outputs are all finite");
  const bool timing = common.timing;
  // The GEMM peak at the kernels' thread count, measured now, in this run.
  const GemmPeak peak = timing ? gemm_peak(threads) : GemmPeak{};
  fmt::print("\n{} {}", attn::align_left("kernel", 10), attn::align_right("peak heap", 11));
  if (timing) {
    fmt::print(" {} {} {} {} {}", attn::align_right("time", 9), attn::align_right("CPU time", 9),
               attn::align_right("GFLOP/s", 8), attn::align_right("x floor", 8),
               attn::align_right("CPU x floor", 11));
  }
  fmt::print("\n");
  for (const KernelRun& r : runs) {
    fmt::print("{} {}", attn::align_left(r.kernel, 10),
               attn::align_right(bytes_text(r.heap_bytes), 11));
    if (timing) {
      const GemmPeak p = r.threads == threads ? peak : gemm_peak(r.threads);
      fmt::print(" {} {} {} {} {}", attn::align_right(num(r.seconds, 3) + " s", 9),
                 attn::align_right(num(r.cpu, 3) + " s", 9),
                 attn::align_right(num(flops / r.seconds / 1e9, 1), 8),
                 attn::align_right(num(r.seconds / (flops / (p.wall * 1e9)), 2) + "x", 8),
                 attn::align_right(num(r.cpu / (flops / (p.cpu * 1e9)), 2) + "x", 11));
    }
    fmt::print("\n");
  }
  if (!one && !reference_fits(T)) {
    fmt::print("{} {}\n", attn::align_left("blas", 10),
               fmt::format("refused: its (B, H, T, T) weights would be {}, above the cap of {}",
                           bytes_text(reference_floats(T) * 4.0),
                           bytes_text(static_cast<double>(kReferenceCap) * 4.0)));
  }
  for (const KernelRun& r : runs) fmt::print("  {}: {}\n", r.kernel, kernel_what(r.kernel, o.tile));
  fmt::print(
      "peak heap: the most the kernel held at once through operator new (every allocation\n"
      "counted), its output included, beyond x and the weights.\n");
  if (runs.size() == 2) {
    const double ratio = runs[1].heap_bytes / runs[0].heap_bytes;
    fmt::print("The BLAS kernel held {}x the flash kernel's memory.\n", num(ratio, 1));
  }
  if (!timing) {
    fmt::print("(add --timing for the times, GFLOP/s and the GEMM floor)\n");
    return;
  }
  fmt::print(
      "x floor: the time over what these FLOPs take at the GEMM peak measured now, {} GFLOP/s\n"
      "on {} thread{} ((1024, 1024) @ (1024, 1024)); CPU time: user + system over all threads;\n"
      "CPU x floor: the CPU time over what these FLOPs take at that GEMM's {} GFLOP per CPU\n"
      "second (on a shared machine the steadier of the two).\n",
      num(peak.wall, 1), threads, threads == 1 ? "" : "s", num(peak.cpu, 1));
  if (runs.size() == 2) {
    fmt::print(
        "flash took {}x the BLAS kernel's time and {}x its CPU time, on the same {} "
        "thread{}.\n",
        num(runs[0].seconds / runs[1].seconds, 2), num(runs[0].cpu / runs[1].cpu, 2), threads,
        threads == 1 ? "" : "s");
  }
  print_blas_core();
  if (runs.size() == 1) {
    fmt::print("time {} s\n", num(runs[0].seconds, 3));
    fmt::print("peak resident memory of the process (getrusage): {}\n", bytes_text(rss));
  }
}

// ---- --sweep T1,T2,...: --long at each T, for the BLAS kernel and the flash kernel, each run in
// its own process (this binary again, /proc/self/exe) so that each peak memory is its own.
struct SweepPoint {
  std::size_t T = 0;
  bool ran = false;        // false: the BLAS kernel refused (its weights above the cap)
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
      // The whole list is quoted only when it holds more than the item at fault.
      throw attn::UsageError(
          fmt::format("--sweep: '{}' is not a length (a whole number from 1 to {}){}", item,
                      kMaxLong, item == text ? std::string() : fmt::format(" in '{}'", text)));
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

// One child: this binary with --long T --kernel K --timing; its time and peak memory. Started
// without a shell (fork and exec of /proc/self/exe), its stdout a pipe to us; it dies with us:
// PR_SET_PDEATHSIG sends it SIGKILL when this process ends, however it ends (SIGTERM, kill -9),
// so a sweep never leaves a --long run computing alone.
SweepPoint run_child(const attn::CommonOptions& common, const Options& o, std::size_t T,
                     const std::string& kernel) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> args = {self,
                                   "--long",
                                   std::to_string(T),
                                   "--kernel",
                                   kernel,
                                   "--tile",
                                   std::to_string(o.tile),
                                   "--seed",
                                   std::to_string(common.seed),
                                   "--timing"};
  if (o.backward) args.emplace_back("--backward");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(fmt::format("--sweep: cannot make a pipe: {}", std::strerror(errno)));
  }
  std::fflush(stdout);  // nothing buffered is written twice
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {  // the child: async-signal-safe calls only, until exec
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
    if (::dup2(fds[1], STDOUT_FILENO) < 0) ::_exit(127);
    ::execv(self.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    throw std::runtime_error(
        fmt::format("--sweep: could not start {}: {}", self, std::strerror(err)));
  }
  std::string out;
  std::array<char, 4096> buf{};
  for (;;) {
    const ssize_t n = ::read(fds[0], buf.data(), buf.size());
    if (n > 0) {
      out.append(buf.data(), static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(
        fmt::format("--sweep: the run at T = {} with the {} kernel failed ({})", T, kernel,
                    WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                      : fmt::format("signal {}", WTERMSIG(status))));
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
  series[0].name = "BLAS (keeps the weights)";
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
      fmt::format("BLAS stops above T = {} (1 GiB of weights)", reference_max_t());
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
  if (const double seconds = sweep_seconds(ts, o.tile, o.backward); seconds > kMaxLongSeconds) {
    throw attn::UsageError(fmt::format(
        "--sweep of {} length{}{} with --tile {} would run for about {:.0f} s here (each length "
        "once with flash, and with the BLAS kernel up to T = {}), more than the limit of {:.0f} s: "
        "give fewer or shorter lengths{}",
        ts.size(), ts.size() == 1 ? "" : "s", o.backward ? " --backward" : "", o.tile, seconds,
        reference_max_t(), kMaxLongSeconds,
        o.tile < attn::fast::kFlashTile &&
                sweep_seconds(ts, attn::fast::kFlashTile, o.backward) < seconds / 2.0
            ? ", or raise --tile"
            : ""));
  }
  fmt::print("Chapter 12: time and peak memory against T\n");
  fmt::print(
      "causal multi-head attention {}, B 1, C {}, H {}, tile {}; each T and kernel runs in its\n"
      "own process (--long T), whose peak resident memory is its own\n",
      o.backward ? "forward + backward" : "forward", kLongC, kLongH, o.tile);
  const bool timing = common.timing;
  fmt::print("{}", attn::align_right("T", 6));
  for (const char* k : {"blas", "flash"}) {
    if (timing) fmt::print("  {}", attn::align_right(std::string(k) + " time", 15));
    fmt::print("  {}", attn::align_right(std::string(k) + " memory", 17));
  }
  fmt::print("\n");
  std::vector<SweepPoint> ref, flash;
  for (const std::size_t T : ts) {
    SweepPoint r;
    r.T = T;
    if (reference_fits(T)) r = run_child(common, o, T, "blas");
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
      "refused: the BLAS kernel's (B, H, T, T) weights would pass its cap of {} (T above {})\n",
      bytes_text(static_cast<double>(kReferenceCap) * 4.0), reference_max_t());
  if (common.svg_dir) {
    write_sweep_svgs(*common.svg_dir, ref, flash, timing, o.backward);
    fmt::print("wrote {}{}\n", (*common.svg_dir / "long_memory.svg").string(),
               timing ? " and " + (*common.svg_dir / "long_time.svg").string() : "");
  }
}

}  // namespace ch12
