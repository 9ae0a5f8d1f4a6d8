// Exercise ex09.2: a batch of training windows (chapter 09, docs/09-training.md).
//
// Goal: B random windows from the encoded text, with their targets.
//   data (n,) token ids, B, T, rng -> x (B, T), y (B, T)
//   For each row b in order: a start i = rng.below(n - T), then
//     x[b] = data[i : i+T]      the inputs
//     y[b] = data[i+1 : i+T+1]  the targets: y[b, t] is the token after x[b, 0..t]
// One window gives T training examples at once, one per prefix length.
// Throw std::invalid_argument if B or T is 0, or if n < T + 1.
//
// Check: build/default/bin/attn-check 09
#include <stdexcept>

#include "exercises.hpp"

namespace ex09 {

attn::Batch get_batch(std::span<const int> data, std::size_t batch_size, std::size_t block_size,
                      attn::Rng& rng) {
  // TODO(ex09.2): B windows of T inputs and their T next-token targets, starts from rng.below.
  throw std::logic_error("TODO ex09.2: get_batch");
}

}  // namespace ex09
