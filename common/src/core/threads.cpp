// threads.cpp: the library's thread budget (attn/core/threads.hpp).
#include "attn/core/threads.hpp"

#include <cblas.h>  // OpenBLAS's: openblas_get_num_threads / openblas_set_num_threads
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "attn/core/check.hpp"

// OpenBLAS's own buffer table (driver/others/memory.c), exported by libopenblas but not declared
// in cblas.h: blas_memory_alloc(0) is what every GEMM calls for its packing buffer.
extern "C" {
void* blas_memory_alloc(int procpos);
void blas_memory_free(void* buffer);
}

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

// How much address space one more OpenBLAS buffer takes: BUFFER_SIZE, 32 << 22 bytes (128 MiB) on
// x86-64, mapped with mmap, or BUFFER_SIZE plus a page through malloc when mmap fails; 1 MiB more
// to be safe. Untouched, it costs address space (what `ulimit -v` counts), not memory.
constexpr std::size_t kBlasBufferBytes = (std::size_t{129} << 20);

// True when `bytes` of address space can be mapped now (then given back at once).
bool address_space_for(std::size_t bytes) {
  void* probe = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (probe == MAP_FAILED) return false;
  munmap(probe, bytes);
  return true;
}

std::mutex g_reserve_mutex;
std::size_t g_reserved = 0;  // buffers known to be mapped (reserve_blas_buffers)

}  // namespace

void setup_threads() {
  initial_budget();  // read before the pin below, which would make it 1
  openblas_set_num_threads(1);
}

void reserve_blas_buffers(std::size_t callers) {
  // 1. How many: one per caller, plus one for each of OpenBLAS's own threads (started with the
  //    library, one fewer than its thread count, idle here since BLAS is pinned to one thread),
  //    which takes a buffer from the same table when it starts and keeps it: a thread that
  //    starts late would otherwise take one of ours.
  const std::size_t blas_own = initial_budget() - 1;
  const std::size_t total = callers + blas_own;
  std::lock_guard lock(g_reserve_mutex);
  if (total <= g_reserved) return;
  // 2. Each call takes a free buffer from OpenBLAS's table and maps it the first time it is used;
  //    holding `total` of them at once maps that many, which later calls then reuse. A buffer
  //    that may need mapping gets its address space checked first, since OpenBLAS would retry
  //    the mapping forever: every one past those mapped before, less the ones OpenBLAS's threads
  //    may hold (they may have taken theirs after the last reservation).
  const std::size_t surely_mapped = g_reserved > blas_own ? g_reserved - blas_own : 0;
  std::vector<void*> held;
  held.reserve(total);
  bool enough = true;
  for (std::size_t i = 0; i < total && enough; ++i) {
    enough = i < surely_mapped || address_space_for(kBlasBufferBytes);
    if (enough) held.push_back(blas_memory_alloc(0));
  }
  for (void* buffer : held) blas_memory_free(buffer);
  if (!enough) throw std::bad_alloc();
  g_reserved = total;
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
