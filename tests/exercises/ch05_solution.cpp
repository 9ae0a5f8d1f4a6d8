// tests/exercises/ch05_solution.cpp: chapter 05's exercises answered by the reference library.
// Linked in place of the learner's stubs (ctest solution.ch05) to prove that every test in
// ch05_test.cpp passes against attn::.
#include "attn/ops/attention.hpp"
#include "exercises.hpp"
#include "reference.hpp"

namespace ex05 {

ATTN_REFERENCE attn::Tensor<4> split_heads(const attn::Tensor<3>& x, std::size_t n_heads) {
  return attn::split_heads(x, n_heads);
}

ATTN_REFERENCE attn::Tensor<3> merge_heads(const attn::Tensor<4>& x) {
  return attn::merge_heads(x);
}

ATTN_REFERENCE attn::Tensor<3> mha_forward(const attn::Tensor<3>& x, const attn::MhaWeights& w,
                                           std::size_t n_heads, bool causal) {
  return attn::mha_forward(x, w, n_heads, causal, /*need_weights=*/false).out;
}

}  // namespace ex05
