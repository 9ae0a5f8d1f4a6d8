// optim.cpp: AdamW, gradient clipping and the learning-rate schedule (chapter 09), the reference:
// plain loops in the page's order. Training runs attn::fast::adamw_update (fast/optim.cpp), the
// same arithmetic eight lanes at a time, tested equal bit for bit (tests/common/test_optim.cpp).
#include "attn/ops/optim.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "attn/core/check.hpp"
#include "optim_checks.hpp"

namespace attn {

void adamw_update(std::span<float> p, std::span<const float> g, std::span<float> m,
                  std::span<float> v, float lr, float weight_decay, std::size_t step,
                  const AdamWConfig& config) {
  constexpr const char* kFn = "attn::adamw_update";
  attn::detail::check_adamw_inputs(kFn, p.size(), g.size(), m.size(), v.size(), step);
  const float b1 = config.beta1, b2 = config.beta2, eps = config.eps;
  // The scalars once per tensor, in double and rounded once, as PyTorch computes them in Python:
  // the decay factor 1 - lr wd, the step lr / (1 - b1^t) and the second bias sqrt(1 - b2^t).
  const double t = static_cast<double>(step), lr_t = static_cast<double>(lr);
  const auto decay = static_cast<float>(1.0 - lr_t * static_cast<double>(weight_decay));
  const auto step_size = static_cast<float>(lr_t / (1.0 - std::pow(static_cast<double>(b1), t)));
  const auto bias2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(b2), t)));
  // Per element, the page's four lines in torch.optim.AdamW's order of operations.
  for (std::size_t i = 0; i < p.size(); ++i) {
    p[i] *= decay;                                 // 1. p -= lr wd p
    m[i] += (g[i] - m[i]) * (1.0f - b1);           // 2. m = b1 m + (1 - b1) g
    v[i] = v[i] * b2 + (1.0f - b2) * g[i] * g[i];  // 3. v = b2 v + (1 - b2) g^2
    p[i] -= step_size * (m[i] / (std::sqrt(v[i]) / bias2_sqrt + eps));  // 4. the step
  }
}

bool decays(std::size_t rank) { return rank >= 2; }

double global_norm(std::span<const std::span<float>> grads) {
  // The page's sum over tensors of each tensor's sum of squares, in that order: each tensor's
  // own sum first, then the sums added tensor by tensor (what lets attn::fast::global_norm sum
  // the tensors side by side on several threads and still give these bits).
  double total = 0.0;
  for (std::span<float> g : grads) {
    double sum = 0.0;
    for (float x : g) sum += static_cast<double>(x) * static_cast<double>(x);
    total += sum;
  }
  return std::sqrt(total);
}

double clip_grad_norm(std::span<const std::span<float>> grads, float max_norm) {
  const double norm = global_norm(grads);
  if (max_norm <= 0.0f) return norm;
  const double coef = static_cast<double>(max_norm) / (norm + 1e-6);
  if (coef < 1.0) {
    const auto c = static_cast<float>(coef);
    for (std::span<float> g : grads) {
      for (float& x : g) x *= c;
    }
  }
  return norm;
}

float learning_rate(const LrSchedule& s, std::size_t step) {
  if (s.shape == LrShape::constant) return s.lr;
  // Warmup: lr * t / warmup for t = 1..warmup.
  if (step <= s.warmup) {
    return s.lr * static_cast<float>(step) / static_cast<float>(s.warmup);
  }
  if (step >= s.total) return s.min_lr;
  // Cosine: from lr at the end of warmup to min_lr at `total`.
  const double progress =
      static_cast<double>(step - s.warmup) / static_cast<double>(s.total - s.warmup);
  const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  const auto lo = static_cast<double>(s.min_lr), hi = static_cast<double>(s.lr);
  return static_cast<float>(lo + (hi - lo) * cosine);
}

LrShape parse_lr_shape(std::string_view name) {
  if (name == "constant") return LrShape::constant;
  if (name == "cosine") return LrShape::cosine;
  throw std::invalid_argument("unknown learning-rate schedule '" + std::string(name) +
                              "': expected constant or cosine");
}

}  // namespace attn
