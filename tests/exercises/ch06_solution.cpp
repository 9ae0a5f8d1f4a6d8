// tests/exercises/ch06_solution.cpp: chapter 06's exercises answered by the reference library.
// Linked in place of the learner's stubs (ctest solution.ch06) to prove that every test in
// ch06_test.cpp passes against attn::.
#include "attn/model/block.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/ops/layernorm.hpp"
#include "exercises.hpp"
#include "reference.hpp"

namespace ex06 {

ATTN_REFERENCE attn::Tensor<3> layer_norm(const attn::Tensor<3>& x, const attn::Vector& gamma,
                                          const attn::Vector& beta, float eps) {
  return attn::layer_norm<3>(x, gamma, beta, eps);
}

ATTN_REFERENCE attn::Tensor<3> gelu(const attn::Tensor<3>& x) {
  return attn::activate<3>(x, attn::Activation::gelu);
}

ATTN_REFERENCE attn::Tensor<3> ffn_forward(const attn::Tensor<3>& x, const attn::FfnWeights& w,
                                           attn::Activation activation) {
  return attn::ffn_forward(x, w, activation);
}

ATTN_REFERENCE attn::Tensor<3> block_forward_pre_norm(const attn::Tensor<3>& x,
                                                      const attn::BlockWeights& w,
                                                      std::size_t n_heads, bool causal,
                                                      attn::Activation activation) {
  // The spec of a model as wide as x, with these heads and activation (resolve_spec refuses
  // sizes that do not fit, an std::invalid_argument).
  attn::ModelChoices choices;
  choices.n_embd = x.shape()[2];
  choices.n_heads = n_heads;
  choices.activation = activation;
  attn::BlockConfig config;
  config.spec = attn::resolve_spec(choices);
  config.causal = causal;
  config.norm = attn::NormPlacement::pre;
  return attn::block_forward(x, w, config).out;
}

}  // namespace ex06
