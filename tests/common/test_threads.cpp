// Tests for attn/core/threads.hpp and parallel.hpp: the thread budget, the BLAS kernel family,
// and the pool's parts.
#include "attn/core/threads.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <new>
#include <stdexcept>
#include <string>

#include "attn/core/parallel.hpp"

TEST_CASE("the thread budget can be set and read back, and 0 threads is refused") {
  const std::size_t saved = attn::num_threads();
  CHECK(saved >= 1);
  attn::set_num_threads(3);
  CHECK(attn::num_threads() == 3);
  CHECK_THROWS_AS(attn::set_num_threads(0), std::invalid_argument);
  CHECK(attn::num_threads() == 3);
  attn::set_num_threads(saved);
}

TEST_CASE("the setup pins BLAS to one thread, once; calling it again changes nothing") {
  attn::setup_threads();
  CHECK(attn::blas_threads() == 1);
  const std::size_t budget = attn::num_threads();
  CHECK(budget >= 1);
  attn::setup_threads();
  CHECK(attn::num_threads() == budget);
  CHECK(attn::blas_threads() == 1);
}

TEST_CASE("OpenBLAS names the kernel family it runs") {
  CHECK_FALSE(attn::blas_core().empty());
  CHECK(attn::blas_core() != "unknown");
}

TEST_CASE("old kernels on a processor with AVX2 and FMA get a warning that names the fix") {
  // Families with AVX2 and FMA kernels never warn.
  for (const char* fine : {"Haswell", "SkylakeX", "Zen", "CooperLake", "SapphireRapids"}) {
    CAPTURE(fine);
    CHECK(attn::blas_core_warning(fine).empty());
  }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  const bool modern = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  for (const char* old : {"Prescott", "Nehalem", "Sandybridge"}) {
    CAPTURE(old);
    const std::string warning = attn::blas_core_warning(old);
    if (modern) {
      CHECK(warning.find(old) != std::string::npos);
      const char* fix = __builtin_cpu_supports("avx512f") ? "OPENBLAS_CORETYPE=SkylakeX"
                                                          : "OPENBLAS_CORETYPE=Haswell";
      CHECK(warning.find(fix) != std::string::npos);
    } else {
      CHECK(warning.empty());  // those kernels are the best this processor can run
    }
  }
#endif
}

TEST_CASE("out of memory in a part of the pool reaches the caller, and the pool still works") {
  // Thrown on a worker thread it used to end the program (std::terminate: SIGABRT); thrown on the
  // calling thread, with workers still running on its stack, in a crash (SIGSEGV).
  constexpr std::size_t kParts = 4;
  for (std::size_t thrower = 0; thrower < kParts; ++thrower) {
    CAPTURE(thrower);
    std::atomic<std::size_t> ran{0};
    const auto work = [&](std::size_t, std::size_t, std::size_t part) {
      ++ran;
      if (part == thrower) throw std::bad_alloc();
    };
    CHECK_THROWS_AS(attn::detail::run_parts(64, kParts, work), std::bad_alloc);
    CHECK(ran.load() >= 1);
    CHECK(ran.load() <= kParts);
  }
  // The next region runs every part, as if nothing had happened.
  std::atomic<std::size_t> items{0};
  attn::detail::run_parts(
      64, kParts, [&](std::size_t begin, std::size_t end, std::size_t) { items += end - begin; });
  CHECK(items.load() == 64);
}
