// Wrong: the tanh approximation of GELU where the exact erf form is asked for.
#include <cmath>

#include "exercises.hpp"

namespace ex06 {

attn::Tensor<3> gelu(const attn::Tensor<3>& x) {
  attn::Tensor<3> y = x;
  for (float& v : y) v = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  return y;
}

}  // namespace ex06
