// Wrong: forgets the final LayerNorm before the tied projection.
#include <stdexcept>

#include "attn/model/block.hpp"
#include "attn/ops/layernorm.hpp"
#include "exercises.hpp"

namespace ex07 {

attn::Tensor<3> lm_forward(const xt::xtensor<int, 2>& tokens, const attn::LmWeights& w,
                           const attn::ModelSpec& config) {
  if (tokens.shape()[1] == 0 || tokens.shape()[1] > config.block_size)
    throw std::invalid_argument("T must be in [1, block_size]");
  attn::Tensor<3> x = embed(tokens, w.wte, w.wpe);  // (B, T, C)
  attn::BlockConfig block;
  block.spec = config;

  for (std::size_t l = 0; l < w.blocks.size(); ++l)
    x = attn::block_forward(x, w.blocks[l], block).out;

  return tied_logits(x, w.wte);
}

}  // namespace ex07
