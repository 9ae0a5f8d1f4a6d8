// Exercise ex11.8: the rolling cache's slots (chapter 11, docs/11-modern-attention.md;
// attn/model/kvcache.hpp).
//
// Goal: a sliding-window model keeps only `capacity` positions per layer and never shifts them:
// position p is written into slot p % capacity, over the oldest position there. After `length`
// positions 0 .. length - 1 were written, return the slots that hold the visible positions,
// the oldest position first:
//   (length, capacity) -> slots, min(length, capacity) of them
//   slots[k] holds position length - n + k, n = slots.size()
// Edge cases: length 0 gives no slot; length <= capacity gives 0 .. length - 1 (nothing
// overwritten yet). Throw std::invalid_argument for capacity 0.
//
// Check: build/default/bin/attn-check 11
#include <stdexcept>

#include "exercises.hpp"

namespace ex11 {

std::vector<std::size_t> rolling_slots(std::size_t length, std::size_t capacity) {
  // TODO(ex11.8): check capacity; the slots of the last min(length, capacity) positions, oldest
  // first.
  throw std::logic_error("TODO ex11.8: the rolling cache's slots");
}

}  // namespace ex11
