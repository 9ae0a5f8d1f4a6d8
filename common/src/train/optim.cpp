// optim.cpp: AdamW, gradient clipping and the learning-rate schedule (chapter 09).
#include "attn/train/optim.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "attn/core/check.hpp"
#include "../core/simd.hpp"

namespace attn {

namespace {

constexpr std::size_t kLanes = 8;

// The per-tensor scalars of one AdamW step (computed once in adamw_update).
struct AdamStep {
  float decay;       // 1 - lr * weight_decay
  float b1, b2;      // the moments' decay rates
  float bias2_sqrt;  // sqrt(1 - b2^t)
  float eps;
  float step_size;   // lr / (1 - b1^t)
};

// One element, in torch.optim.AdamW's order of operations.
inline void adamw_one(float& p, float g, float& m, float& v, const AdamStep& k) {
  p *= k.decay;                                // 1. decoupled weight decay
  m += (g - m) * (1.0f - k.b1);                // 2. m = b1 m + (1 - b1) g (torch's lerp)
  v = v * k.b2 + (1.0f - k.b2) * g * g;        // 3. v = b2 v + (1 - b2) g^2
  const float denom = std::sqrt(v) / k.bias2_sqrt + k.eps;
  p -= k.step_size * (m / denom);              // 4. the bias-corrected step
}

// Every element: kLanes at a time (read into locals, then written back), which the compiler
// turns into SIMD instructions, then the last few one by one. Same arithmetic either way.
ATTN_SIMD_CLONES void adamw_lanes(float* p, const float* g, float* m, float* v, std::size_t n,
                                  const AdamStep& k) {
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    float pl[kLanes], ml[kLanes], vl[kLanes];
    for (std::size_t u = 0; u < kLanes; ++u) {
      pl[u] = p[i + u];
      ml[u] = m[i + u];
      vl[u] = v[i + u];
      adamw_one(pl[u], g[i + u], ml[u], vl[u], k);
    }
    for (std::size_t u = 0; u < kLanes; ++u) {
      p[i + u] = pl[u];
      m[i + u] = ml[u];
      v[i + u] = vl[u];
    }
  }
  for (; i < n; ++i) adamw_one(p[i], g[i], m[i], v[i], k);
}

}  // namespace

void adamw_update(std::span<float> p, std::span<const float> g, std::span<float> m,
                  std::span<float> v, float lr, float weight_decay, std::size_t step,
                  const AdamWConfig& config) {
  constexpr const char* kFn = "attn::adamw_update";
  // (Messages built only on failure: the training step calls this for every tensor.)
  if (g.size() != p.size() || m.size() != p.size() || v.size() != p.size()) {
    require(false, kFn, [&] {
      return "p, g, m and v must have the same length, got " + std::to_string(p.size()) + ", " +
             std::to_string(g.size()) + ", " + std::to_string(m.size()) + ", " +
             std::to_string(v.size());
    });
  }
  if (step == 0) require(false, kFn, "step counts from 1");
  const float b1 = config.beta1, b2 = config.beta2;
  // The scalars once per tensor, in double and rounded once, as PyTorch computes them in Python.
  const double t = static_cast<double>(step);
  const auto decay = static_cast<float>(1.0 - static_cast<double>(lr) * static_cast<double>(weight_decay));
  const double bias1 = 1.0 - std::pow(static_cast<double>(b1), t);
  const auto bias2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(b2), t)));
  const auto step_size = static_cast<float>(static_cast<double>(lr) / bias1);
  adamw_lanes(p.data(), g.data(), m.data(), v.data(), p.size(),
              AdamStep{decay, b1, b2, bias2_sqrt, config.eps, step_size});
}

bool decays(std::size_t rank) { return rank >= 2; }

double global_norm(std::span<const std::span<float>> grads) {
  double sum = 0.0;
  for (std::span<float> g : grads) {
    for (float x : g) sum += static_cast<double>(x) * static_cast<double>(x);
  }
  return std::sqrt(sum);
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
  const double progress = static_cast<double>(step - s.warmup) /
                          static_cast<double>(s.total - s.warmup);
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
