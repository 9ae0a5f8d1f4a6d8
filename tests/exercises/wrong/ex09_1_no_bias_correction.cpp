// Wrong: the moments used without the bias corrections 1 - beta^t.
#include <cmath>
#include <stdexcept>

#include "exercises.hpp"

namespace ex09 {

void adamw_update(std::span<float> p, std::span<const float> g, std::span<float> m,
                  std::span<float> v, float lr, float weight_decay, std::size_t step,
                  const attn::AdamWConfig& config) {
  if (g.size() != p.size() || m.size() != p.size() || v.size() != p.size() || step == 0) {
    throw std::invalid_argument("adamw_update: bad lengths or step");
  }
  for (std::size_t i = 0; i < p.size(); ++i) {
    p[i] *= 1.0f - lr * weight_decay;
    m[i] = config.beta1 * m[i] + (1.0f - config.beta1) * g[i];
    v[i] = config.beta2 * v[i] + (1.0f - config.beta2) * g[i] * g[i];
    p[i] -= lr * m[i] / (std::sqrt(v[i]) + config.eps);
  }
}

}  // namespace ex09
