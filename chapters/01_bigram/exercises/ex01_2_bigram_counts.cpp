// Exercise ex01.2: bigram counts (chapter 01, the bigram model).
//
// Goal: count how often each character follows each other character. The table is the whole
// "model" of the counting approach: row a, normalised, is the distribution of what comes after a.
//   input:  tokens (N,), ids in [0, V), and the vocabulary size V
//   output: counts (V, V), float; counts(a, b) = number of i in [0, N-1) with
//           tokens[i] == a and tokens[i+1] == b
// The entries add up to N - 1 (one pair per neighbouring position); a single token has no pair.
// Check: build/default/bin/attn-check 01
#include <stdexcept>

#include "exercises.hpp"

namespace ex01 {

attn::Matrix bigram_counts(std::span<const int> tokens, std::size_t V) {
  // TODO(ex01.2): return counts (V, V), counts(a, b) = #{i < N - 1 : tokens[i] == a, tokens[i+1] ==
  // b}; 0 or 1 tokens give a table of zeros.
  throw std::logic_error("TODO ex01.2: bigram counts");
}

}  // namespace ex01
