// gradcheck.cpp: central differences against an analytic gradient (chapter 08), through a
// float forward (grad_check) or a double one (check_gradients): one checker, in the scalar of
// the values. The block and the model in double that the checks run are the reference's
// (attn/model/reference.hpp).
#include "attn/train/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "attn/core/check.hpp"

namespace attn {

namespace {

// Central differences over every element of every tensor, in the scalar of its values (float for
// grad_check, double for check_gradients): perturb, evaluate twice, restore; then compare.
// min_floor: the smallest near-zero floor (1e-6 in float, 1e-12 in double).
template <class Tensor, class Options>
std::vector<GradCheckResult> central_differences(const char* fn,
                                                 const std::function<double()>& loss,
                                                 std::span<const Tensor> tensors,
                                                 const Options& options, double min_floor) {
  using S = typename decltype(Tensor::values)::value_type;
  std::vector<GradCheckResult> results;
  for (const Tensor& t : tensors) {
    require(t.values.size() == t.grad.size(), fn,
            "tensor '" + t.name + "' has " + std::to_string(t.values.size()) +
                " values but its gradient has " + std::to_string(t.grad.size()));
    // 1. The numeric gradient of every element: perturb, evaluate twice, restore.
    std::vector<double> numeric(t.values.size());
    std::vector<double> noise(t.values.size());  // the rounding noise of each quotient
    for (std::size_t i = 0; i < t.values.size(); ++i) {
      const S x0 = t.values[i];
      const double step = options.h * std::max(1.0, std::abs(static_cast<double>(x0)));
      // The steps actually taken: x0 +- step rounded to S, measured in double.
      const S up = static_cast<S>(static_cast<double>(x0) + step);
      const S down = static_cast<S>(static_cast<double>(x0) - step);
      t.values[i] = up;
      const double l_up = loss();
      t.values[i] = down;
      const double l_down = loss();
      t.values[i] = x0;
      const double width = static_cast<double>(up) - static_cast<double>(down);
      numeric[i] = (l_up - l_down) / width;
      noise[i] = options.noise * std::max({1.0, std::abs(l_up), std::abs(l_down)}) / width;
    }
    // 2. Compare: absolute error, and relative error against max(|a|, |n|, floor, noise / tol).
    double scale = 0.0;
    for (double n : numeric) scale = std::max(scale, std::abs(n));
    const double floor = std::max(options.floor * scale, min_floor);
    GradCheckResult r;
    r.name = t.name;
    r.count = t.values.size();
    bool finite = true;
    for (std::size_t i = 0; i < numeric.size(); ++i) {
      const double a = static_cast<double>(t.grad[i]);
      if (!std::isfinite(a) || !std::isfinite(numeric[i])) finite = false;
      const double err = std::abs(a - numeric[i]);
      r.max_abs = std::max(r.max_abs, err);
      const double denominator =
          std::max({std::abs(a), std::abs(numeric[i]), floor, noise[i] / options.tolerance});
      r.max_rel = std::max(r.max_rel, err / denominator);
    }
    r.pass = finite && r.max_rel <= options.tolerance;
    results.push_back(r);
  }
  return results;
}

}  // namespace

std::vector<GradCheckResult> grad_check(const std::function<double()>& loss,
                                        const std::vector<GradTensor>& tensors,
                                        const GradCheckOptions& options) {
  return central_differences("attn::grad_check", loss, std::span<const GradTensor>(tensors),
                             options, 1e-6);
}

std::vector<GradCheckResult> check_gradients(const std::function<double()>& loss,
                                             std::span<const GradTensor64> tensors,
                                             const GradCheckOptions64& options) {
  return central_differences("attn::check_gradients", loss, tensors, options, 1e-12);
}

std::vector<GradCheckResult> check_gradients(const std::function<double()>& loss,
                                             const std::vector<GradTensor64>& tensors,
                                             const GradCheckOptions64& options) {
  return check_gradients(loss, std::span<const GradTensor64>(tensors), options);
}

bool all_pass(const std::vector<GradCheckResult>& results) {
  return std::all_of(results.begin(), results.end(),
                     [](const GradCheckResult& r) { return r.pass; });
}

double weighted_sum(std::span<const double> a, std::span<const double> b) {
  require(a.size() == b.size(), "attn::weighted_sum",
          "sizes differ: " + std::to_string(a.size()) + " and " + std::to_string(b.size()));
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

double weighted_sum(std::span<const float> a, std::span<const float> b) {
  require(a.size() == b.size(), "attn::weighted_sum",
          "sizes differ: " + std::to_string(a.size()) + " and " + std::to_string(b.size()));
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return s;
}

}  // namespace attn
