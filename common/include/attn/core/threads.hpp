// attn/threads.hpp: how many threads the library uses (chapters 05-07 and the benchmark).
//
// Big matrix products, the heads of attention and the chunks of the FFN are split over this many
// threads of the library's own. The default is what OpenBLAS would use: OPENBLAS_NUM_THREADS if
// set, else one per core, read when the library first needs it. BLAS itself then always runs
// single-threaded inside those threads (docs/performance.md says why).
//
// Results never depend on the thread count: the work is cut into the same pieces whatever the
// count, and only who computes which piece changes (tested bit for bit).
#pragma once

#include <cstddef>

namespace attn {

std::size_t num_threads();
// n >= 1, else std::invalid_argument.
void set_num_threads(std::size_t n);

}  // namespace attn
