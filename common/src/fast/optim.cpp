// optim.cpp (fast): the AdamW step as training runs it (see attn/fast/optim.hpp). The reference,
// one element after another in the page's order, is common/src/train/optim.cpp; this is the same
// arithmetic per element, eight lanes at a time and tensors over the threads, equal bit for bit.
#include "attn/fast/optim.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "attn/core/check.hpp"
#include "../train/optim_checks.hpp"
#include "../core/parallel.hpp"
#include "../core/simd.hpp"

namespace attn::fast {

namespace {

constexpr std::size_t kLanes = 8;

// The per-tensor scalars of one AdamW step (computed once in adamw_update).
struct AdamStep {
  float decay;       // 1 - lr * weight_decay
  float b1, b2;      // the moments' decay rates
  float bias2_sqrt;  // sqrt(1 - b2^t)
  float eps;
  float step_size;  // lr / (1 - b1^t)
};

// One element: the reference's four lines, the same operations in the same order.
inline void adamw_one(float& p, float g, float& m, float& v, const AdamStep& k) {
  p *= k.decay;                          // 1. decoupled weight decay
  m += (g - m) * (1.0f - k.b1);          // 2. m = b1 m + (1 - b1) g (torch's lerp)
  v = v * k.b2 + (1.0f - k.b2) * g * g;  // 3. v = b2 v + (1 - b2) g^2
  const float denom = std::sqrt(v) / k.bias2_sqrt + k.eps;
  p -= k.step_size * (m / denom);  // 4. the bias-corrected step
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
  constexpr const char* kFn = "attn::fast::adamw_update";
  attn::detail::check_adamw_inputs(kFn, p.size(), g.size(), m.size(), v.size(), step);
  const float b1 = config.beta1, b2 = config.beta2;
  // The scalars once per tensor, in double and rounded once, exactly as the reference does.
  const double t = static_cast<double>(step), lr_t = static_cast<double>(lr);
  const auto decay = static_cast<float>(1.0 - lr_t * static_cast<double>(weight_decay));
  const auto step_size = static_cast<float>(lr_t / (1.0 - std::pow(static_cast<double>(b1), t)));
  const auto bias2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(b2), t)));
  adamw_lanes(p.data(), g.data(), m.data(), v.data(), p.size(),
              AdamStep{decay, b1, b2, bias2_sqrt, config.eps, step_size});
}

void adamw_update_all(std::span<const std::span<float>> p, std::span<const std::span<float>> g,
                      std::span<const std::span<float>> m, std::span<const std::span<float>> v,
                      const std::vector<bool>& decay, float lr, std::size_t step,
                      const AdamWConfig& config) {
  const std::size_t n = p.size();
  if (g.size() != n || m.size() != n || v.size() != n || decay.size() != n) {
    require(false, "attn::fast::adamw_update_all",
            "p, g, m, v and decay must list the same number of tensors");
  }
  detail::run_parts(n, detail::worker_count(n),
                    [&](std::size_t first, std::size_t last, std::size_t) {
                      for (std::size_t i = first; i < last; ++i) {
                        fast::adamw_update(p[i], g[i], m[i], v[i], lr,
                                           decay[i] ? config.weight_decay : 0.0f, step, config);
                      }
                    });
}

void zero_all(std::span<const std::span<float>> tensors) {
  const std::size_t n = tensors.size();
  detail::run_parts(n, detail::worker_count(n),
                    [&](std::size_t first, std::size_t last, std::size_t) {
                      for (std::size_t i = first; i < last; ++i)
                        std::fill(tensors[i].begin(), tensors[i].end(), 0.0f);
                    });
}

}  // namespace attn::fast
