// Exercise ex10.4: the cut of top-p (nucleus) sampling (chapter 10, docs/10-generation.md).
//
// Goal: like attn::top_p_filter, the distribution that top-p sampling draws from (why it cuts
// the tail, and how: docs/10-generation.md, "The math", top-p).
//   in:  probs (V,), non-negative, summing to 1 (a softmax after temperature and top-k);
//        top_p in (0, 1]
//   out: (V,), in the order of the ids (not sorted): the kept ids' probabilities renormalised to
//        sum to 1, exactly 0 for the others
// The contract:
//   - keep the *fewest* most likely ids whose probabilities add up to *at least* top_p: the most
//     likely id is always kept, top_p = 1 keeps every id;
//   - among equal probabilities the lower id ranks first (so the result does not depend on the
//     sort algorithm);
//   - the mass is added up in double: over thousands of small probabilities a float running sum
//     drifts by more than the gap between two of them, and the cut lands on the wrong id;
//   - throw std::invalid_argument for empty probs or top_p outside (0, 1] (NaN included).
//
// Check: build/default/bin/attn-check 10
#include <stdexcept>

#include "exercises.hpp"

namespace ex10 {

std::vector<float> top_p_filter(std::span<const float> probs, float top_p) {
  // TODO(ex10.4): return (V,): the nucleus of probs for top_p, renormalised, 0 elsewhere.
  throw std::logic_error("TODO ex10.4: the top-p cut");
}

}  // namespace ex10
