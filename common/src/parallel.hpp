// parallel.hpp (private to common/src): independent pieces of work split over our own threads.
//
// The thread budget is attn::num_threads() (threads.hpp: OPENBLAS_NUM_THREADS by default, one knob
// for the learner, and never more threads than cores). Every piece runs its GEMMs through
// single-threaded BLAS (threads.cpp pins it): pieces like 128 rows of a product, one attention
// head or 128 tokens of the FFN are too small for BLAS's own threading to pay off, and two levels
// of threads would oversubscribe the cores.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

#include "attn/threads.hpp"

namespace attn::detail {

// True on a thread that is running a piece of split work (including the calling thread while it
// runs its own part): work split there again would put threads inside threads.
inline thread_local bool t_in_worker = false;
inline bool in_worker() { return t_in_worker; }
struct WorkerScope {
  bool saved = t_in_worker;
  WorkerScope() { t_in_worker = true; }
  ~WorkerScope() { t_in_worker = saved; }
  WorkerScope(const WorkerScope&) = delete;
  WorkerScope& operator=(const WorkerScope&) = delete;
};

// How many threads to split `items` independent items over: the budget, at most one thread per
// item, at least 1; 1 inside a worker.
inline std::size_t worker_count(std::size_t items) {
  if (in_worker()) return 1;
  return std::max<std::size_t>(1, std::min(num_threads(), items));
}

// Runs work(begin, end, part) on `parts` contiguous ranges covering [0, items), part 0 on the
// calling thread. The pieces must be fixed by the caller independently of `parts` (only their
// distribution may depend on it), so that results do not depend on the thread count. `work`
// must not throw: check every size before calling this. A worker never splits again: inside
// one, worker_count() is 1.
template <class Work>
void run_parts(std::size_t items, std::size_t parts, const Work& work) {
  if (parts <= 1 || in_worker()) {
    work(std::size_t{0}, items, std::size_t{0});
    return;
  }
  std::vector<std::jthread> workers;
  workers.reserve(parts - 1);
  for (std::size_t p = 1; p < parts; ++p)
    workers.emplace_back([&work, items, parts, p] {
      WorkerScope scope;
      work(items * p / parts, items * (p + 1) / parts, p);
    });
  WorkerScope scope;
  work(std::size_t{0}, items / parts, std::size_t{0});
}  // the jthreads join here

}  // namespace attn::detail
