// count_allocations.hpp: a test binary that includes this (in exactly one of its files) replaces
// the global operator new/delete with malloc/free plus a counter, so a test can check that a
// loop allocates nothing: read allocations() before and after.
// GCC sees the replaced new/delete pairs inlined into the standard containers and cannot tell
// they match (-Wmismatched-new-delete, a false positive here).
#pragma once
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <atomic>
#include <cstdlib>
#include <new>

namespace attn_test {
inline std::atomic<long> g_allocations{0};
// Every operator new of this binary so far, on any thread.
inline long allocations() { return g_allocations.load(std::memory_order_relaxed); }
}  // namespace attn_test

void* operator new(std::size_t n) {
  attn_test::g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
