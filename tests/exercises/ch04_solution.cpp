// tests/exercises/ch04_solution.cpp: chapter 04's exercises answered by the reference library.
// Linked in place of the learner's stubs (ctest solution.ch04) to prove that every test in
// ch04_test.cpp passes against attn::. A single head is attn::scaled_dot_product_attention with
// B = H = 1, so the (T, hs) matrices are viewed as (1, 1, T, hs) tensors and back.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "attn/fast/gemm.hpp"
#include "attn/ops/attention.hpp"
#include "attn/core/check.hpp"
#include "attn/ops/linear.hpp"
#include "exercises.hpp"
#include "reference.hpp"

namespace {

attn::Tensor<4> as_4d(const attn::Matrix& m) {  // (R, K) -> (1, 1, R, K)
  attn::Tensor<4> t({1, 1, m.shape()[0], m.shape()[1]});
  std::copy(m.begin(), m.end(), t.begin());
  return t;
}

attn::Matrix as_2d(const attn::Tensor<4>& t) {  // (1, 1, R, K) -> (R, K)
  attn::Matrix m({t.shape()[2], t.shape()[3]});
  std::copy(t.begin(), t.end(), m.begin());
  return m;
}

}  // namespace

namespace ex04 {

ATTN_REFERENCE attn::Matrix project(const attn::Matrix& x, const attn::Matrix& w) {
  return attn::fast::matmul_blas(x, w);
}

ATTN_REFERENCE attn::Matrix attention_scores(const attn::Matrix& q, const attn::Matrix& k) {
  const std::size_t T = q.shape()[0];
  const std::size_t S = k.shape()[0];
  const std::size_t hs = q.shape()[1];
  if (k.shape()[1] != hs) {
    attn::shape_error("ex04::attention_scores", "q (T, hs) and k (S, hs) with the same hs",
                      attn::shape_str(q.shape()) + " and " + attn::shape_str(k.shape()));
  }
  attn::Matrix scores({T, S});
  // (T, hs) @ (S, hs)^T -> (T, S), with the scale folded into the GEMM's alpha.
  attn::fast::gemm(T, S, hs, 1.0f / std::sqrt(static_cast<float>(hs)), q.data(), false, k.data(),
                   true, 0.0f, scores.data());
  return scores;
}

ATTN_REFERENCE AttentionResult single_head_attention(const attn::Matrix& q, const attn::Matrix& k,
                                                     const attn::Matrix& v, bool causal) {
  const attn::AttentionResult r =
      attn::scaled_dot_product_attention(as_4d(q), as_4d(k), as_4d(v), causal);
  return {as_2d(r.out), as_2d(r.weights)};
}

}  // namespace ex04
