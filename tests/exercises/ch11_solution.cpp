// tests/exercises/ch11_solution.cpp: chapter 11's exercises answered by the reference library.
// Linked in place of the learner's stubs (ctest solution.ch11) to prove that every test in
// ch11_test.cpp passes against attn::.
#include <stdexcept>

#include "attn/ops/attention_ref.hpp"
#include "attn/ops/gqa.hpp"
#include "attn/ops/rmsnorm.hpp"
#include "attn/ops/rope.hpp"
#include "attn/ops/swa.hpp"
#include "attn/ops/swiglu.hpp"
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

ATTN_REFERENCE attn::Tensor<4> sum_kv_groups(const attn::Tensor<4>& d, std::size_t n_kv_heads) {
  return attn::sum_kv_groups<float>(d, n_kv_heads);
}

ATTN_REFERENCE attn::Tensor<3> alibi_bias(std::size_t n_heads, std::size_t T) {
  return attn::alibi_bias<float>(n_heads, T, T);
}

// The rolling cache's rule (attn/model/kvcache.hpp: position p in slot p % capacity), which the
// library applies inside lm_step and exposes no function for.
ATTN_REFERENCE std::vector<std::size_t> rolling_slots(std::size_t length, std::size_t capacity) {
  if (capacity == 0) throw std::invalid_argument("rolling_slots: capacity must be at least 1");
  const std::size_t n = length < capacity ? length : capacity;
  std::vector<std::size_t> slots;
  for (std::size_t p = length - n; p < length; ++p) slots.push_back(p % capacity);
  return slots;
}

ATTN_REFERENCE attn::Tensor<4> rope_rotate_half(const attn::Tensor<4>& x, double theta,
                                                std::size_t offset) {
  return attn::rope<float>(x, theta, offset, attn::RopeLayout::rotate_half);
}

ATTN_REFERENCE attn::Tensor<3> swiglu(const attn::Tensor<3>& x,
                                      const attn::SwigluWeights<float>& w) {
  return attn::swiglu_forward<float>(x, w);
}

}  // namespace ex11
