// Wrong: the activation applied after the second layer instead of between the two.
#include "attn/ops/ffn.hpp"
#include "attn/ops/linear.hpp"
#include "exercises.hpp"

namespace ex06 {

attn::Tensor<3> ffn_forward(const attn::Tensor<3>& x, const attn::FfnWeights& w,
                            attn::Activation activation) {
  return attn::activate<3>(attn::linear(attn::linear(x, w.w1, w.b1), w.w2, w.b2), activation);
}

}  // namespace ex06
