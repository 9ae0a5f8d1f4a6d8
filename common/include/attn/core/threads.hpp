// attn/core/threads.hpp: how many threads the library uses (chapters 05-07 and the benchmark).
//
// Big matrix products, the heads of attention and the chunks of the FFN are split over this many
// threads of the library's own. The default is what OpenBLAS would use: OPENBLAS_NUM_THREADS if
// set, else one per core, read by setup_threads() (below). BLAS itself then always runs
// single-threaded inside those threads (docs/performance.md says why).
//
// Results never depend on the thread count: the work is cut into the same pieces whatever the
// count, and only who computes which piece changes (tested bit for bit).
#pragma once

#include <cstddef>
#include <string>

namespace attn {

// The library's thread setup, the one place that changes OpenBLAS's settings: OpenBLAS's thread
// count (OPENBLAS_NUM_THREADS, else one per core) becomes the budget, and BLAS is pinned to one
// thread, so that every BLAS call runs inside one of the library's threads. Every program calls it
// first thing, before any kernel runs: attn::Cli::run does for every chapter, attn-golden and
// attn-bench in their main, the test mains (tests/doctest_main.cpp, tests/exercises) in theirs.
// Nothing else pins BLAS (num_threads and set_num_threads only read OpenBLAS's count). Calling it
// again changes nothing.
void setup_threads();
// Makes sure OpenBLAS has `callers` buffers mapped, one for each thread that may call BLAS at the
// same time, else throws std::bad_alloc. Why: every BLAS call takes a 128 MiB buffer (address
// space, mostly untouched) from OpenBLAS's table, mapped the first time it is needed, and when
// that mapping fails (a memory limit, `ulimit -v`) OpenBLAS 0.3.21 retries it forever: the
// program hangs instead of failing. Reserved here, up front, with the address space checked
// first, a limit is an out-of-memory error instead (one line, exit 1). attn::Cli::run reserves
// the main thread's before the chapter runs; the pool (parallel.hpp) reserves one per part before
// it starts more threads. OpenBLAS's own idle threads (one fewer than its thread count) each keep
// a buffer from the same table, so they are counted too. Reserving fewer than before changes
// nothing. The cost: 128 MiB of address space per buffer, as without the reservation.
void reserve_blas_buffers(std::size_t callers);
// The threads OpenBLAS itself would use for one call: 1 once the setup is done.
std::size_t blas_threads();
std::size_t num_threads();
// n >= 1, else std::invalid_argument.
void set_num_threads(std::size_t n);

// The kernel family OpenBLAS picked for this processor at start-up (openblas_get_corename():
// "Haswell", "SkylakeX", "Zen", ...).
std::string blas_core();
// Empty, or one sentence when OpenBLAS runs kernels older than what the processor can do. It picks
// its kernels at start-up from the processor's model number, and a release older than the
// processor does not know it: Debian 12's OpenBLAS 0.3.21 falls back to its SSE3 kernels
// ("Prescott") on an Intel Xeon of 2023 (family 6, model 207), where a GEMM then runs at a
// fraction of its speed. OPENBLAS_CORETYPE=Haswell (AVX2) or SkylakeX (AVX-512), set before the
// program starts, overrides the choice; the sentence names the one to use.
std::string blas_core_warning();
// The same for a kernel family named by the caller (what the tests use).
std::string blas_core_warning(const std::string& core);

}  // namespace attn
