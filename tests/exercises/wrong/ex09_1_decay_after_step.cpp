// Wrong: weight decay applied after the Adam step instead of before it.
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
  const double t = static_cast<double>(step);
  const double bias1 = 1.0 - std::pow(static_cast<double>(config.beta1), t);
  const double bias2 = 1.0 - std::pow(static_cast<double>(config.beta2), t);
  for (std::size_t i = 0; i < p.size(); ++i) {
    m[i] = config.beta1 * m[i] + (1.0f - config.beta1) * g[i];
    v[i] = config.beta2 * v[i] + (1.0f - config.beta2) * g[i] * g[i];
    const double denom = std::sqrt(static_cast<double>(v[i]) / bias2) + static_cast<double>(config.eps);
    p[i] -= static_cast<float>(static_cast<double>(lr) * static_cast<double>(m[i]) / bias1 / denom);
    p[i] -= lr * weight_decay * p[i];
  }
}

}  // namespace ex09
