// Wrong: once the cache is full, the oldest kept position taken as length - capacity + 1, one too
// late: every slot named is one past the right one, so the oldest position comes last.
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

std::vector<std::size_t> rolling_slots(std::size_t length, std::size_t capacity) {
  if (capacity == 0) throw std::invalid_argument("rolling_slots: capacity 0");
  if (length <= capacity) {
    std::vector<std::size_t> slots;
    for (std::size_t k = 0; k < length; ++k) slots.push_back(k);
    return slots;
  }
  std::vector<std::size_t> slots;
  for (std::size_t k = 0; k < capacity; ++k) slots.push_back((length - capacity + 1 + k) % capacity);
  return slots;
}

}  // namespace ex11
