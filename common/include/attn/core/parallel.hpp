// attn/core/parallel.hpp: independent pieces of work split over the library's own threads (the
// fast kernels, and chapter 12's ladder, which teaches them).
//
// The thread budget is attn::num_threads() (threads.hpp: OPENBLAS_NUM_THREADS by default, one knob
// for the learner, and never more threads than cores). Every piece runs its GEMMs through
// single-threaded BLAS (threads.cpp pins it): pieces like 128 rows of a product, one attention
// head or 128 tokens of the FFN are too small for BLAS's own threading to pay off, and two levels
// of threads would oversubscribe the cores.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "attn/core/threads.hpp"

namespace attn::detail {

// True on a thread that is running a piece of split work (including the calling thread while it
// runs its own part): work split there again would put threads inside threads. The library's one
// thread_local, on purpose: it says which thread this is, not what it computes (no kernel keeps
// scratch per thread; fast/workspace.hpp).
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
// wake-up, not a thread creation per region (tens of microseconds each, and an allocation),
// which matters for the small models of chapter 09, whose training step runs hundreds of short
// regions a few tens of microseconds apart. A worker that has just finished a part therefore
// spins for a short while (kSpin, 50 us) watching for the next region before it goes to
// sleep on the condition variable: waking a sleeping thread costs the operating system's
// scheduler 5-20 us, as long as many of the regions themselves. Which thread runs which part
// does not change any result.
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
  // A part that throws (std::bad_alloc when memory runs out) does not end the program: the
  // parts not yet started are skipped, the running ones finish, and the first exception is
  // rethrown here, on the calling thread, where the program reports it (one line, exit 1).
  // Thrown on a worker and left there, it would call std::terminate (SIGABRT); thrown on the
  // caller and let out at once, the workers would go on using its stack (SIGSEGV).
  template <class Task>
  bool run(std::size_t parts, const Task& task) {
    std::unique_lock busy(busy_, std::try_to_lock);
    if (!busy.owns_lock() || parts > kMaxParts) return false;
    if (threads_.size() + 1 < parts) {
      // One OpenBLAS buffer for each thread that may run a part (threads.hpp says why): may
      // throw std::bad_alloc, which reaches the caller like any other out of memory.
      reserve_blas_buffers(parts);
      std::lock_guard lock(mutex_);
      try {
        while (threads_.size() + 1 < parts) threads_.emplace_back([this] { serve(); });
      } catch (const std::system_error&) {
        // No thread to be had (its stack is past a memory limit): the threads there are, the
        // calling one at least, take all the parts, with the same results.
      }
    }
    call_.store([](const void* t, std::size_t p) { (*static_cast<const Task*>(t))(p); },
                std::memory_order_relaxed);
    task_.store(&task, std::memory_order_relaxed);
    remaining_.store(parts - 1, std::memory_order_relaxed);
    error_ = nullptr;
    failed_.store(false, std::memory_order_relaxed);
    // One word holds the region's number, its part count and the next part to hand out, so a
    // worker still finishing the previous region can never take a part of this one.
    const std::uint64_t region = (state_.load(std::memory_order_relaxed) >> kRegionShift) + 1;
    state_.store((region << kRegionShift) | (std::uint64_t{parts} << kPartsShift) | 1,
                 std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      { std::lock_guard lock(mutex_); }  // a worker between its check and its wait sees it
      wake_.notify_all();
    }
    guarded([&] { task(0); });
    for (std::size_t p; (p = take(region)) < parts;) finish(p);  // help with what is left
    // The last parts are running on other threads: they end within microseconds.
    const auto spin_until = Clock::now() + kSpin;
    for (unsigned polls = 1; remaining_.load(std::memory_order_acquire) != 0; ++polls) {
      if (polls % 64 != 0 || Clock::now() < spin_until) {
        pause();
      } else {
        std::this_thread::yield();
      }
    }
    if (failed_.load(std::memory_order_acquire)) {
      std::exception_ptr error = nullptr;
      {
        std::lock_guard lock(error_mutex_);
        std::swap(error, error_);
      }
      std::rethrow_exception(error);
    }
    return true;
  }

 private:
  static constexpr unsigned kRegionShift = 40, kPartsShift = 20;
  static constexpr std::uint64_t kField = (std::uint64_t{1} << kPartsShift) - 1;
  static constexpr std::size_t kMaxParts = kField;
  using Clock = std::chrono::steady_clock;
  // How long a thread polls before it sleeps (workers) or yields (the caller): the clock, not a
  // count of polls, because one `pause` takes 1 ns on some CPUs and 20 ns on others.
  static constexpr std::chrono::microseconds kSpin{50};

  Pool() = default;
  ~Pool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  static std::uint64_t region_of(std::uint64_t state) { return state >> kRegionShift; }

  // The next part of region `region` nobody has taken, or a number >= its part count when there
  // is none (or the region is over).
  std::size_t take(std::uint64_t region) {
    std::uint64_t s = state_.load(std::memory_order_acquire);
    for (;;) {
      const std::size_t parts = (s >> kPartsShift) & kField;
      const std::size_t next = s & kField;
      if (region_of(s) != region || next >= parts) return kMaxParts + 1;
      if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) return next;
    }
  }
  void finish(std::size_t part) {
    if (!failed_.load(std::memory_order_acquire)) {  // after a failure the rest is skipped
      guarded([&] {
        call_.load(std::memory_order_relaxed)(task_.load(std::memory_order_relaxed), part);
      });
    }
    remaining_.fetch_sub(1, std::memory_order_acq_rel);
  }
  // Runs one part; an exception is kept (the first one) for run() to rethrow.
  template <class Part>
  void guarded(const Part& part) {
    try {
      part();
    } catch (...) {
      std::lock_guard lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_release);
    }
  }
  void serve() {
    t_in_worker = true;  // a part never splits again
    std::uint64_t seen = 0;
    for (;;) {
      // Wait for a region newer than the last one seen: spin first, then sleep.
      std::uint64_t region = region_of(state_.load(std::memory_order_acquire));
      const auto spin_until = Clock::now() + kSpin;
      for (unsigned polls = 1; region == seen; ++polls) {
        if (polls % 64 == 0 && Clock::now() >= spin_until) break;
        pause();
        region = region_of(state_.load(std::memory_order_acquire));
      }
      if (region == seen) {
        std::unique_lock lock(mutex_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        wake_.wait(lock, [&] {
          return stop_ || region_of(state_.load(std::memory_order_seq_cst)) != seen;
        });
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        if (stop_) return;
        region = region_of(state_.load(std::memory_order_acquire));
      }
      seen = region;
      for (std::size_t p; (p = take(region)) <= kMaxParts;) finish(p);
    }
  }

  std::mutex busy_;   // one region at a time
  std::mutex mutex_;  // threads_ and the sleep of idle workers
  std::condition_variable wake_;
  std::vector<std::thread> threads_;
  std::atomic<void (*)(const void*, std::size_t)> call_{nullptr};
  std::atomic<const void*> task_{nullptr};
  std::atomic<std::uint64_t> state_{0};  // region << 40 | parts << 20 | next part
  std::atomic<std::size_t> remaining_{0};
  std::atomic<int> sleepers_{0};
  bool stop_ = false;
  std::mutex error_mutex_;  // error_: the first exception a part of the region threw
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
};

// Runs work(begin, end, part) on `parts` contiguous ranges covering [0, items), on the pool's
// threads and the calling one. The pieces must be fixed by the caller independently of `parts`
// (only their distribution may depend on it), so that results do not depend on the thread
// count. Check every size before calling this; an exception `work` still throws (out of memory)
// reaches the caller once every part has stopped. A worker never splits again: inside one,
// worker_count() is 1.
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
