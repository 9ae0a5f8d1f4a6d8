// attn/core/simd.hpp: how the library's few hand-vectorised loops (and chapter 12's) get AVX2.
//
// On x86-64 with GCC or Clang, a function marked ATTN_SIMD_CLONES is compiled twice, for plain
// x86-64 (SSE2, which every x86-64 CPU has) and for AVX2 (8 floats per instruction), and the
// loader picks the one the CPU supports when the program starts. Both versions do the same IEEE
// operations in the same order (AVX2 does not bring FMA with it, and -ffp-contract=off forbids
// fusing anyway), so they give bit-identical results: only the speed differs.
//
// Not under ThreadSanitizer, whose runtime is not ready when the loader runs the chooser, and
// not on other platforms, where the attribute is a no-op and the SSE2 / generic code runs.
#pragma once

#if defined(__SANITIZE_THREAD__)  // GCC
#define ATTN_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)  // Clang
#define ATTN_TSAN 1
#endif
#endif

#if defined(__GNUC__) && defined(__x86_64__) && defined(__ELF__) && !defined(ATTN_TSAN)
#define ATTN_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define ATTN_SIMD_CLONES
#endif
