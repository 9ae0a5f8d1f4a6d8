// parallel.hpp (private to common/src): independent pieces of work split over our own threads.
//
// The thread budget is attn::num_threads() (threads.hpp: OPENBLAS_NUM_THREADS by default, one knob
// for the learner, and never more threads than cores). Every piece runs its GEMMs through
// single-threaded BLAS (threads.cpp pins it): pieces like 128 rows of a product, one attention
// head or 128 tokens of the FFN are too small for BLAS's own threading to pay off, and two levels
// of threads would oversubscribe the cores.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <mutex>
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

// The library's worker threads, started on first use and kept: a parallel region then costs a
// wake-up (microseconds), not a thread creation per region (tens of microseconds each, and an
// allocation), which matters for the small models of chapter 09, whose training step runs
// hundreds of short regions. Which thread runs which part does not change any result.
class Pool {
 public:
  static Pool& instance() {
    static Pool pool;
    return pool;
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // Runs task(p) for every p in [0, parts), part 0 (and any part nobody has taken yet) on the
  // calling thread, and returns when all are done. Returns false, running nothing, when another
  // thread of the program is using the pool: the caller then runs the parts itself.
  template <class Task>
  bool run(std::size_t parts, const Task& task) {
    std::unique_lock busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    {
      std::lock_guard lock(mutex_);
      while (threads_.size() + 1 < parts) threads_.emplace_back([this] { serve(); });
      call_ = [](const void* t, std::size_t p) { (*static_cast<const Task*>(t))(p); };
      task_ = &task;
      parts_ = parts;
      next_ = 1;
      remaining_ = parts - 1;
      ++generation_;
    }
    wake_.notify_all();
    task(0);
    for (std::size_t p; (p = take()) < parts;) finish(p);  // help with what is left
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return remaining_ == 0; });
    task_ = nullptr;
    return true;
  }

 private:
  Pool() = default;
  ~Pool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // The next part nobody has taken, or parts_ when there is none.
  std::size_t take() {
    std::lock_guard lock(mutex_);
    return next_ < parts_ ? next_++ : parts_;
  }
  void finish(std::size_t part) {
    call_(task_, part);
    std::lock_guard lock(mutex_);
    if (--remaining_ == 0) done_.notify_one();
  }
  void serve() {
    t_in_worker = true;  // a part never splits again
    std::size_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      for (std::size_t p; (p = take()) < parts_;) finish(p);
    }
  }

  std::mutex busy_;   // one region at a time
  std::mutex mutex_;  // everything below
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  void (*call_)(const void*, std::size_t) = nullptr;
  const void* task_ = nullptr;
  std::size_t parts_ = 0, next_ = 0, remaining_ = 0, generation_ = 0;
  bool stop_ = false;
};

// Runs work(begin, end, part) on `parts` contiguous ranges covering [0, items), on the pool's
// threads and the calling one. The pieces must be fixed by the caller independently of `parts`
// (only their distribution may depend on it), so that results do not depend on the thread
// count. `work` must not throw: check every size before calling this. A worker never splits
// again: inside one, worker_count() is 1.
template <class Work>
void run_parts(std::size_t items, std::size_t parts, const Work& work) {
  if (parts <= 1 || in_worker()) {
    work(std::size_t{0}, items, std::size_t{0});
    return;
  }
  const auto part = [&](std::size_t p) {
    WorkerScope scope;
    work(items * p / parts, items * (p + 1) / parts, p);
  };
  if (!Pool::instance().run(parts, part)) {
    for (std::size_t p = 0; p < parts; ++p) part(p);
  }
}

}  // namespace attn::detail
