// Exercise ex13.1: counting pairs (chapter 13, docs/13-tokens.md).
//
// Goal: like attn::count_pairs. Training BPE starts every step by counting how often each pair
// of adjacent tokens occurs; the most frequent pair becomes the next token.
// Input: token ids (n,). Output: a map from (left, right) to its count.
// Contract: every adjacent position counts, overlapping: [5, 5, 5] holds (5, 5) twice, and
// [1, 2, 1, 2] holds (1, 2) twice and (2, 1) once. Fewer than two ids: an empty map.
//
// Check: build/default/bin/attn-check 13
#include <stdexcept>

#include "exercises.hpp"

namespace ex13 {

std::map<attn::TokenPair, std::size_t> count_pairs(std::span<const int> ids) {
  // TODO(ex13.1): for each position i with a right neighbour, count the pair (ids[i], ids[i+1]).
  throw std::logic_error("TODO ex13.1: count the adjacent pairs");
}

}  // namespace ex13
