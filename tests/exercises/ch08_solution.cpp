// tests/exercises/ch08_solution.cpp: chapter 08's exercises answered by the reference library.
// Linked in place of the learner's stubs (ctest solution.ch08) to prove that every test in
// ch08_test.cpp passes against attn::.
#include "attn/ops/attention.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/linear.hpp"
#include "attn/ops/softmax.hpp"
#include "attn/train/central_difference.hpp"
#include "exercises.hpp"
#include "reference.hpp"

namespace ex08 {

ATTN_REFERENCE attn::Matrix softmax_backward(const attn::Matrix& y, const attn::Matrix& dy) {
  return attn::softmax_backward<2>(y, dy);
}

ATTN_REFERENCE attn::LinearGrads linear_backward(const attn::Tensor<3>& dy,
                                                 const attn::Tensor<3>& x, const attn::Matrix& w) {
  return attn::linear_backward(dy, x, w);
}

ATTN_REFERENCE attn::LayerNormGrads<3> layer_norm_backward(const attn::Tensor<3>& dy,
                                                           const attn::Tensor<3>& x,
                                                           const attn::Vector& gamma, float eps) {
  return attn::layer_norm_backward<3>(dy, x, gamma, eps);
}

// One head is the library's attention with B = H = 1: (T, hs) <-> (1, 1, T, hs).
ATTN_REFERENCE AttentionGrads attention_backward(const attn::Matrix& dout, const attn::Matrix& q,
                                                 const attn::Matrix& k, const attn::Matrix& v,
                                                 bool causal) {
  const auto as4 = [](const attn::Matrix& m) {
    attn::Tensor<4> t =
        xt::zeros<float>({std::size_t{1}, std::size_t{1}, m.shape()[0], m.shape()[1]});
    std::copy(m.begin(), m.end(), t.begin());
    return t;
  };
  const auto as2 = [](const attn::Tensor<4>& t) {
    attn::Matrix m = xt::zeros<float>({t.shape()[2], t.shape()[3]});
    std::copy(t.begin(), t.end(), m.begin());
    return m;
  };
  const attn::Tensor<4> q4 = as4(q), k4 = as4(k), v4 = as4(v);
  const attn::AttentionResult forward = attn::scaled_dot_product_attention(q4, k4, v4, causal);
  const attn::Tensor<4> d4 = as4(dout);
  const attn::AttentionGrads g =
      attn::scaled_dot_product_attention_backward(d4, q4, k4, v4, forward.weights, causal);
  return {as2(g.dq), as2(g.dk), as2(g.dv)};
}

ATTN_REFERENCE std::vector<double> central_differences(
    const std::function<double(std::span<const double>)>& f, std::span<const double> x, double h) {
  return attn::central_differences(f, x, h);
}

ATTN_REFERENCE attn::TiedEmbeddingGrads tied_embedding_backward(const attn::Tensor<3>& dx,
                                                                const xt::xtensor<int, 2>& tokens,
                                                                const attn::Matrix& dlogits,
                                                                const attn::Matrix& h,
                                                                const attn::Matrix& wte) {
  return attn::tied_embedding_backward(dx, tokens, dlogits, h, wte);
}

}  // namespace ex08
