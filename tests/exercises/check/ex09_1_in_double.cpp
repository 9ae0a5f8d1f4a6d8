// A right ex09.1 that rounds otherwise: every element's update computed in double, rounded to
// float once (ctest solution.ch09_mine_other_rounding). ex09.1's tests accept it; its weights
// differ from the library's float arithmetic in the last bits, and 09_training --mine says how
// far, within the 1e-6 the tests accept.
#include <cmath>
#include <stdexcept>

#include "exercises.hpp"

namespace ex09 {

void adamw_update(std::span<float> p, std::span<const float> g, std::span<float> m,
                  std::span<float> v, float lr, float weight_decay, std::size_t step,
                  const attn::AdamWConfig& config) {
  if (g.size() != p.size() || m.size() != p.size() || v.size() != p.size() || step == 0)
    throw std::invalid_argument("adamw_update: lengths differ or step is 0");
  const double b1 = config.beta1, b2 = config.beta2, eps = config.eps,
               t = static_cast<double>(step);
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double gi = g[i];
    double pi = static_cast<double>(p[i]) *
                (1.0 - static_cast<double>(lr) * static_cast<double>(weight_decay));
    const double mi = b1 * static_cast<double>(m[i]) + (1.0 - b1) * gi;
    const double vi = b2 * static_cast<double>(v[i]) + (1.0 - b2) * gi * gi;
    const double m_hat = mi / (1.0 - std::pow(b1, t)), v_hat = vi / (1.0 - std::pow(b2, t));
    pi -= static_cast<double>(lr) * m_hat / (std::sqrt(v_hat) + eps);
    p[i] = static_cast<float>(pi);
    m[i] = static_cast<float>(mi);
    v[i] = static_cast<float>(vi);
  }
}

}  // namespace ex09
