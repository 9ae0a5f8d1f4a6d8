// count_allocations.hpp: a test binary that includes this (in exactly one of its files) replaces
// the global operator new/delete with malloc/free plus counters, so a test can check that a loop
// allocates nothing (read allocations() before and after), or measure the most memory a call
// held at once (reset_peak_bytes() before, peak_bytes() after).
// Each block carries its size in a header of alignof(std::max_align_t) bytes, so operator delete
// knows how much it gives back; the block handed out stays aligned as malloc's.
// GCC sees the replaced new/delete pairs inlined into the standard containers and cannot tell
// they match (-Wmismatched-new-delete, a false positive here).
#pragma once
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace attn_test {
inline std::atomic<long> g_allocations{0};
inline std::atomic<long> g_bytes{0};  // bytes handed out by operator new and not yet deleted
inline std::atomic<long> g_peak{0};   // the most g_bytes has been since reset_peak_bytes()
inline constexpr std::size_t kHeader = alignof(std::max_align_t);
// Every operator new of this binary so far, on any thread.
inline long allocations() { return g_allocations.load(std::memory_order_relaxed); }
// Bytes held now (operator new only: not malloc called directly, not over-aligned new).
inline long bytes_in_use() { return g_bytes.load(std::memory_order_relaxed); }
// Starts a measurement: the peak becomes what is held now.
inline void reset_peak_bytes() { g_peak.store(bytes_in_use(), std::memory_order_relaxed); }
// The most bytes held at once since reset_peak_bytes().
inline long peak_bytes() { return g_peak.load(std::memory_order_relaxed); }
}  // namespace attn_test

void* operator new(std::size_t n) {
  attn_test::g_allocations.fetch_add(1, std::memory_order_relaxed);
  void* base = std::malloc(n + attn_test::kHeader);
  if (base == nullptr) throw std::bad_alloc();
  *static_cast<std::size_t*>(base) = n;
  const long now = attn_test::g_bytes.fetch_add(static_cast<long>(n), std::memory_order_relaxed) +
                   static_cast<long>(n);
  long peak = attn_test::g_peak.load(std::memory_order_relaxed);
  while (now > peak &&
         !attn_test::g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return static_cast<char*>(base) + attn_test::kHeader;
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept {
  // The header before p, found through an integer: GCC would read p - header as out of bounds.
  if (p == nullptr) return;
  void* base = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) - attn_test::kHeader);
  attn_test::g_bytes.fetch_sub(static_cast<long>(*static_cast<std::size_t*>(base)),
                               std::memory_order_relaxed);
  std::free(base);
}
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { operator delete(p); }
