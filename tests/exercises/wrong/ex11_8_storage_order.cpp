// Wrong: the slots in storage order 0 .. n - 1, not oldest position first: right until the cache
// wraps, then the newest positions come before the oldest.
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

std::vector<std::size_t> rolling_slots(std::size_t length, std::size_t capacity) {
  if (capacity == 0) throw std::invalid_argument("rolling_slots: capacity 0");
  const std::size_t n = length < capacity ? length : capacity;
  std::vector<std::size_t> slots;
  for (std::size_t k = 0; k < n; ++k) slots.push_back(k);
  return slots;
}

}  // namespace ex11
