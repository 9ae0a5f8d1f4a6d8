// tests/exercises/ch03_solution.cpp: chapter 03's exercises answered by the reference library.
// Linked in place of the learner's stubs (ctest solution.ch03) to prove that every test in
// ch03_test.cpp passes against attn::.
#include "attn/ops/mask.hpp"
#include "attn/ops/softmax.hpp"
#include "exercises.hpp"
#include "reference.hpp"

namespace ex03 {

ATTN_REFERENCE attn::Mask causal_mask(std::size_t T) { return attn::causal_mask(T); }

ATTN_REFERENCE attn::Matrix causal_mask_additive(std::size_t T) {
  return attn::causal_mask_additive(T);
}

ATTN_REFERENCE attn::Matrix softmax(const attn::Matrix& x) { return attn::softmax<2>(x); }

ATTN_REFERENCE attn::Matrix masked_softmax(const attn::Matrix& scores, const attn::Mask& allowed) {
  return attn::masked_softmax<2>(scores, allowed);
}

}  // namespace ex03
