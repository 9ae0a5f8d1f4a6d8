// chapters/12_fast_attention/heap_count.cpp: the global operator new and delete of this program,
// malloc and free plus two counters (heap_count.hpp). Each block carries its size in a header of
// alignof(std::max_align_t) bytes, so delete knows how much it gives back; the block handed out
// is aligned as malloc's. Over-aligned new (std::align_val_t) keeps the library's and is not
// counted: nothing in the learner's tile asks for it.
#include "heap_count.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {
std::atomic<long> g_bytes{0};
std::atomic<long> g_peak{0};
constexpr std::size_t kHeader = alignof(std::max_align_t);
}  // namespace

namespace ch12 {
long heap_bytes() { return g_bytes.load(std::memory_order_relaxed); }
void reset_heap_peak() { g_peak.store(heap_bytes(), std::memory_order_relaxed); }
long heap_peak() { return g_peak.load(std::memory_order_relaxed); }
}  // namespace ch12

void* operator new(std::size_t n) {
  void* base = std::malloc(n + kHeader);
  if (base == nullptr) throw std::bad_alloc();
  *static_cast<std::size_t*>(base) = n;
  const long now =
      g_bytes.fetch_add(static_cast<long>(n), std::memory_order_relaxed) + static_cast<long>(n);
  long peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return static_cast<char*>(base) + kHeader;
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept {
  // The header before p, found through an integer: GCC would read p - header as out of bounds.
  if (p == nullptr) return;
  void* base = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) - kHeader);
  g_bytes.fetch_sub(static_cast<long>(*static_cast<std::size_t*>(base)), std::memory_order_relaxed);
  std::free(base);
}
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { operator delete(p); }
