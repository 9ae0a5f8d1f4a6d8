// Wrong: the lengths of g and m are checked against p, v's is not.
#include <cmath>
#include <stdexcept>

#include "exercises.hpp"

namespace ex09 {

void adamw_update(std::span<float> p, std::span<const float> g, std::span<float> m,
                  std::span<float> v, float lr, float weight_decay, std::size_t step,
                  const attn::AdamWConfig& config) {
  if (g.size() != p.size() || m.size() != p.size() || step == 0) {
    throw std::invalid_argument("adamw_update: bad lengths or step");
  }
  const float c1 = 1.0f - std::pow(config.beta1, static_cast<float>(step));
  const float c2 = 1.0f - std::pow(config.beta2, static_cast<float>(step));
  for (std::size_t i = 0; i < p.size() && i < v.size(); ++i) {
    p[i] *= 1.0f - lr * weight_decay;
    m[i] = config.beta1 * m[i] + (1.0f - config.beta1) * g[i];
    v[i] = config.beta2 * v[i] + (1.0f - config.beta2) * g[i] * g[i];
    p[i] -= lr / c1 * m[i] / (std::sqrt(v[i]) / std::sqrt(c2) + config.eps);
  }
}

}  // namespace ex09
