// Exercise ex10.1: append one position to a layer's KV cache (chapter 10,
// docs/10-generation.md).
//
// Goal: like attn::kv_append. A step computes one key (and one value) per sequence, all H heads
// side by side in a row of C = H * hs floats; the cache keeps them per head.
//   cache (B, H, T_max, hs), rows (B, C), pos in [0, T_max)
//   cache[b, h, pos, j] = rows[b, h * hs + j]     for every b, h and j < hs
// Nothing else in the cache changes: the keys of the past stay as they are, which is the whole
// point of a cache.
// Throw std::invalid_argument when rows is not (B, H * hs) or pos >= T_max.
//
// Check: build/default/bin/attn-check 10
#include <stdexcept>

#include "exercises.hpp"

namespace ex10 {

void kv_append(attn::Tensor<4>& cache, const attn::Matrix& rows, std::size_t pos) {
  // TODO(ex10.1): check the shapes and pos, then copy head h of each row (its hs floats at
  // column h * hs) to cache[b, h, pos, :].
  throw std::logic_error("TODO ex10.1: append to the cache");
}

}  // namespace ex10
