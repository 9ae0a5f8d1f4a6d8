// tests/exercises/ch11_solution.cpp: chapter 11's exercises answered by the reference library.
// Linked in place of the learner's stubs (ctest solution.ch11) to prove that every test in
// ch11_test.cpp passes against attn::.
#include "attn/ops/gqa.hpp"
#include "attn/ops/rmsnorm.hpp"
#include "attn/ops/rope.hpp"
#include "attn/ops/swa.hpp"
#include "exercises.hpp"
#include "reference.hpp"

namespace ex11 {

ATTN_REFERENCE attn::Tensor<4> rope(const attn::Tensor<4>& x, double theta, std::size_t offset) {
  return attn::rope<float>(x, theta, offset);
}

ATTN_REFERENCE attn::Tensor<3> rms_norm(const attn::Tensor<3>& x, const attn::Vector& gamma,
                                        double eps) {
  return attn::rms_norm<float, 3>(x, gamma, eps);
}

ATTN_REFERENCE attn::Tensor<4> repeat_kv(const attn::Tensor<4>& kv, std::size_t n_heads) {
  return attn::repeat_kv<float>(kv, n_heads);
}

ATTN_REFERENCE attn::WindowAttention<float> sliding_window_attention(const attn::Tensor<4>& q,
                                                                     const attn::Tensor<4>& k,
                                                                     const attn::Tensor<4>& v,
                                                                     std::size_t window) {
  return attn::sliding_window_attention<float>(q, k, v, window);
}

}  // namespace ex11

namespace ex11 {

ATTN_REFERENCE attn::RmsNormGrads<float, 3> rms_norm_backward(const attn::Tensor<3>& dy,
                                                              const attn::Tensor<3>& x,
                                                              const attn::Vector& gamma,
                                                              double eps) {
  attn::RmsNormCache<float> cache;
  (void)attn::rms_norm<float, 3>(x, gamma, eps, cache);
  return attn::rms_norm_backward<float, 3>(dy, x, gamma, cache);
}

}  // namespace ex11
