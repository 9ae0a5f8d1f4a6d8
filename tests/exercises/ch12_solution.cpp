// tests/exercises/ch12_solution.cpp: chapter 12's exercises answered by the reference library.
// Linked in place of the learner's stubs (ctest solution.ch12) to prove that every test in
// ch12_test.cpp passes against attn/ops/online_softmax.hpp.
#include <cmath>
#include <limits>

#include "attn/ops/online_softmax.hpp"
#include "exercises.hpp"
#include "reference.hpp"

namespace ex12 {

ATTN_REFERENCE void online_softmax_update(attn::OnlineRow& row, const attn::Vector& scores,
                                          const attn::Matrix& values) {
  attn::online_softmax_update(row, scores, values);
}

ATTN_REFERENCE attn::Matrix attention_tile(const attn::Matrix& q, const attn::Matrix& k,
                                           const attn::Matrix& v, std::size_t i0,
                                           std::size_t tile) {
  return attn::attention_tile(q, k, v, i0, tile);
}

// As attn::fast::flash_attention computes each row's lse from its state (fast/flash.cpp),
// which the library exposes for whole tensors only.
ATTN_REFERENCE float row_lse(const attn::OnlineRow& row) {
  if (row.l == 0.0f) return -std::numeric_limits<float>::infinity();
  return row.m + std::log(row.l);
}

}  // namespace ex12
