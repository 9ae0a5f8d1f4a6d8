// threads.cpp: the library's thread budget (attn/core/threads.hpp).
#include "attn/core/threads.hpp"

#include <cblas.h>  // OpenBLAS's: openblas_get_num_threads / openblas_set_num_threads

#include <algorithm>
#include <atomic>
#include <string>

#include "attn/core/check.hpp"

namespace attn {

namespace {

// The default budget: OpenBLAS's own thread count (OPENBLAS_NUM_THREADS, else one per core), read
// once, before setup_threads() pins BLAS to one thread (only reads it: no side effect).
// setup_threads() then pins BLAS, so that every BLAS call of the library runs inside a thread of
// its own (parallel.hpp). Why not let OpenBLAS thread the big products itself? After each threaded
// call its idle threads keep spinning on the cores for a while (~0.1 s), and the next piece of work
// split over the library's threads (attention heads, FFN chunks) would compete with them for the
// two cores: measured 265 ms instead of 203 ms for the benchmark block.
std::size_t initial_budget() {
  static const std::size_t budget =
      static_cast<std::size_t>(std::max(1, openblas_get_num_threads()));
  return budget;
}

std::atomic<std::size_t> g_threads{0};  // 0: not set yet

}  // namespace

void setup_threads() {
  initial_budget();  // read before the pin below, which would make it 1
  openblas_set_num_threads(1);
}

std::size_t blas_threads() {
  return static_cast<std::size_t>(std::max(1, openblas_get_num_threads()));
}

std::size_t num_threads() {
  const std::size_t initial = initial_budget();
  const std::size_t n = g_threads.load(std::memory_order_relaxed);
  return n == 0 ? initial : n;
}

void set_num_threads(std::size_t n) {
  require(n >= 1, "attn::set_num_threads",
          [&] { return "n = " + std::to_string(n) + ", expected at least 1"; });
  g_threads.store(n, std::memory_order_relaxed);
}

std::string blas_core() {
  const char* name = openblas_get_corename();
  return name != nullptr ? name : "unknown";
}

std::string blas_core_warning() { return blas_core_warning(blas_core()); }

std::string blas_core_warning(const std::string& core) {
  // The kernel families without AVX2 and FMA (OpenBLAS's names, x86-64).
  for (const char* old : {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Sandybridge",
                          "Barcelona", "Bobcat", "Bulldozer", "Piledriver"}) {
    if (core != old) {
      continue;
    }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      const char* better = __builtin_cpu_supports("avx512f") ? "SkylakeX" : "Haswell";
      return "OpenBLAS runs its " + core +
             " kernels on a processor that has AVX2 and FMA (a release older than the processor "
             "does not know it): matrix products run several times slower than they could; set "
             "OPENBLAS_CORETYPE=" +
             better + " before starting the program";
    }
#endif
    return "";
  }
  return "";
}

}  // namespace attn
