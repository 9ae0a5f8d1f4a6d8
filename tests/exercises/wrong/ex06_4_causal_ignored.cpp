// Wrong: the causal flag is ignored: the block never masks.
#include "attn/ops/attention.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/ops/layernorm.hpp"
#include "exercises.hpp"

namespace ex06 {

attn::Tensor<3> block_forward_pre_norm(const attn::Tensor<3>& x, const attn::BlockWeights& w,
                                       std::size_t n_heads, bool causal,
                                       attn::Activation activation) {
  const auto ln1 = [&](const attn::Tensor<3>& y) {
    return attn::layer_norm<3>(y, w.ln1_gamma, w.ln1_beta, 1e-5f);
  };
  const auto ln2 = [&](const attn::Tensor<3>& y) {
    return attn::layer_norm<3>(y, w.ln2_gamma, w.ln2_beta, 1e-5f);
  };
  const auto mha = [&](const attn::Tensor<3>& y) {
    return attn::mha_forward(y, w.attn, n_heads, false, false).out;
  };
  const auto ffn = [&](const attn::Tensor<3>& y) {
    return attn::ffn_forward(y, w.ffn, activation);
  };
  const attn::Tensor<3> r = x + mha(ln1(x));
  return r + ffn(ln2(r));
}

}  // namespace ex06
