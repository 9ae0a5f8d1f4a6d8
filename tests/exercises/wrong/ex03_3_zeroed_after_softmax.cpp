// Wrong: softmax over every key, then the masked weights set to 0 without renormalising.
#include <stdexcept>

#include "attn/ops/softmax.hpp"
#include "exercises.hpp"

namespace ex03 {

attn::Matrix masked_softmax(const attn::Matrix& scores, const attn::Mask& allowed) {
  if (scores.shape() != allowed.shape()) throw std::invalid_argument("shapes differ");
  attn::Matrix out = attn::softmax<2>(scores);
  for (std::size_t i = 0; i < out.size(); ++i)
    if (!allowed.data()[i]) out.data()[i] = 0.0f;
  return out;
}

}  // namespace ex03
