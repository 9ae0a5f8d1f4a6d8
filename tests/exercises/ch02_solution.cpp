// The reference answers to chapter 02's exercises: every ex02:: function forwards to attn::.
// Linked with ch02_test.cpp as ch02_solution, where every test case must pass (ctest
// solution.ch02).
#include "attn/ops/averaging.hpp"
#include "exercises.hpp"
#include "reference.hpp"

namespace ex02 {

ATTN_REFERENCE attn::Matrix running_mean_loop(const attn::Matrix& x) {
  return attn::running_mean_loop(x);
}

ATTN_REFERENCE attn::Matrix averaging_weights_tril(std::size_t T) {
  return attn::averaging_weights_tril(T);
}

ATTN_REFERENCE attn::Matrix averaging_weights_softmax(std::size_t T) {
  return attn::averaging_weights_softmax(T);
}

}  // namespace ex02
