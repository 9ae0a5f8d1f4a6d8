// tests/exercises/ch14_solution.cpp: chapter 14's exercises answered by the reference library.
// Linked in place of the learner's stubs (ctest solution.ch14) to prove that every test in
// ch14_test.cpp passes against attn/model/gpt2.hpp.
#include "attn/model/gpt2.hpp"
#include "exercises.hpp"
#include "reference.hpp"

namespace ex14 {

ATTN_REFERENCE std::array<attn::Matrix, 3> split_qkv(const attn::Matrix& fused) {
  return attn::split_qkv(fused);
}

}  // namespace ex14
