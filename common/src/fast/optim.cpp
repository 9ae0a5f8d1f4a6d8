// optim.cpp (fast): the AdamW step, the zeroing and the global norm as training runs them (see
// attn/fast/optim.hpp). The reference, one element after another in the page's order, is
// common/src/ops/optim.cpp; this is the same arithmetic per element, eight lanes at a time and
// the elements over the threads (the norm: the tensors side by side), equal bit for bit.
#include "attn/fast/optim.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "attn/core/check.hpp"
#include "../ops/optim_checks.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/simd.hpp"

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

// The per-tensor scalars, in double and rounded once, exactly as the reference computes them.
AdamStep adam_step(float lr, float weight_decay, std::size_t step, const AdamWConfig& config) {
  const double t = static_cast<double>(step), lr_t = static_cast<double>(lr);
  const auto decay = static_cast<float>(1.0 - lr_t * static_cast<double>(weight_decay));
  const auto step_size =
      static_cast<float>(lr_t / (1.0 - std::pow(static_cast<double>(config.beta1), t)));
  const auto bias2_sqrt =
      static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(config.beta2), t)));
  return AdamStep{decay, config.beta1, config.beta2, bias2_sqrt, config.eps, step_size};
}

// Below this many elements in all, a model's tensors are worked on by one thread.
constexpr std::size_t kMinRun = 4096;

std::size_t total_size(std::span<const std::span<float>> tensors) {
  std::size_t total = 0;
  for (std::span<float> t : tensors) total += t.size();
  return total;
}

// Elementwise work on every tensor: the tensors' elements, laid end to end, cut into equal runs,
// a run to a thread; fn(i, begin, end) is called for each stretch [begin, end) of tensor i that a
// run covers. An element's result does not depend on the run it falls in, so the cut changes no
// bit; equal runs keep every thread equally busy (a model's tensors range from 64 to 100,000s
// of elements, so whole tensors to a thread would leave most threads waiting for one).
template <class Fn>
void for_each_run(std::span<const std::span<float>> tensors, const Fn& fn) {
  const std::size_t total = total_size(tensors);
  detail::run_parts(total, detail::worker_count(total / kMinRun),
                    [&](std::size_t first, std::size_t last, std::size_t) {
                      std::size_t offset = 0;  // where tensor i starts in the whole
                      for (std::size_t i = 0; i < tensors.size() && offset < last; ++i) {
                        const std::size_t n = tensors[i].size();
                        const std::size_t lo = std::max(first, offset);
                        const std::size_t hi = std::min(last, offset + n);
                        if (lo < hi) fn(i, lo - offset, hi - offset);
                        offset += n;
                      }
                    });
}

}  // namespace

void adamw_update(std::span<float> p, std::span<const float> g, std::span<float> m,
                  std::span<float> v, float lr, float weight_decay, std::size_t step,
                  const AdamWConfig& config) {
  attn::detail::check_adamw_inputs("attn::fast::adamw_update", p.size(), g.size(), m.size(),
                                   v.size(), step);
  adamw_lanes(p.data(), g.data(), m.data(), v.data(), p.size(),
              adam_step(lr, weight_decay, step, config));
}

void adamw_update_all(std::span<const std::span<float>> p, std::span<const std::span<float>> g,
                      std::span<const std::span<float>> m, std::span<const std::span<float>> v,
                      const std::vector<bool>& decay, float lr, std::size_t step,
                      const AdamWConfig& config) {
  constexpr const char* kFn = "attn::fast::adamw_update_all";
  const std::size_t n = p.size();
  if (g.size() != n || m.size() != n || v.size() != n || decay.size() != n) {
    require(false, kFn, "p, g, m, v and decay must list the same number of tensors");
  }
  // Every check before the threads start (a worker must not throw).
  for (std::size_t i = 0; i < n; ++i)
    attn::detail::check_adamw_inputs(kFn, p[i].size(), g[i].size(), m[i].size(), v[i].size(), step);
  for_each_run(p, [&](std::size_t i, std::size_t begin, std::size_t end) {
    const AdamStep k = adam_step(lr, decay[i] ? config.weight_decay : 0.0f, step, config);
    adamw_lanes(p[i].data() + begin, g[i].data() + begin, m[i].data() + begin, v[i].data() + begin,
                end - begin, k);
  });
}

void zero_all(std::span<const std::span<float>> tensors) {
  for_each_run(tensors, [&](std::size_t i, std::size_t begin, std::size_t end) {
    std::fill(tensors[i].begin() + static_cast<std::ptrdiff_t>(begin),
              tensors[i].begin() + static_cast<std::ptrdiff_t>(end), 0.0f);
  });
}

double global_norm(std::span<const std::span<float>> grads, Workspace& ws) {
  // Each tensor's sum of squares by one thread, element by element as the reference sums it:
  // the thread whose run holds the tensor's first element sums the whole tensor (the runs'
  // other stretches of it are skipped). Then the sums added in tensor order, as the reference.
  double* sum = at_least(ws.sums, grads.size());  // (tensors,), each written by one thread
  std::fill(sum, sum + grads.size(), 0.0);        // (an empty tensor is never visited)
  for_each_run(grads, [&](std::size_t i, std::size_t begin, std::size_t) {
    if (begin != 0) return;
    double s = 0.0;
    for (float x : grads[i]) s += static_cast<double>(x) * static_cast<double>(x);
    sum[i] = s;
  });
  double all = 0.0;
  for (std::size_t i = 0; i < grads.size(); ++i) all += sum[i];
  return std::sqrt(all);
}

double global_norm(std::span<const std::span<float>> grads) {
  Workspace ws;
  return global_norm(grads, ws);
}

double clip_grad_norm(std::span<const std::span<float>> grads, float max_norm, Workspace& ws) {
  const double norm = fast::global_norm(grads, ws);
  if (max_norm <= 0.0f) return norm;
  const double coef = static_cast<double>(max_norm) / (norm + 1e-6);
  if (coef < 1.0) {
    const auto c = static_cast<float>(coef);
    for_each_run(grads, [&](std::size_t i, std::size_t begin, std::size_t end) {
      for (std::size_t j = begin; j < end; ++j) grads[i][j] *= c;
    });
  }
  return norm;
}

double clip_grad_norm(std::span<const std::span<float>> grads, float max_norm) {
  Workspace ws;
  return clip_grad_norm(grads, max_norm, ws);
}

}  // namespace attn::fast
