// Tests for attn/core/threads.hpp: the thread budget and the BLAS kernel family.
#include "attn/core/threads.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

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
