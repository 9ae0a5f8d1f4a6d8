// gradcheck.cpp: central differences against an analytic gradient (chapter 08), through a
// float forward (grad_check) or a double one (check_gradients).
#include "attn/train/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "attn/core/check.hpp"

namespace attn {

std::vector<GradCheckResult> grad_check(const std::function<double()>& loss,
                                        const std::vector<GradTensor>& tensors,
                                        const GradCheckOptions& options) {
  std::vector<GradCheckResult> results;
  for (const GradTensor& t : tensors) {
    require(t.values.size() == t.grad.size(), "attn::grad_check",
            "tensor '" + t.name + "' has " + std::to_string(t.values.size()) +
                " values but its gradient has " + std::to_string(t.grad.size()));
    // 1. The numeric gradient of every element: perturb, evaluate twice, restore.
    std::vector<double> numeric(t.values.size());
    std::vector<double> noise(t.values.size());  // the rounding noise of each quotient
    for (std::size_t i = 0; i < t.values.size(); ++i) {
      const float x0 = t.values[i];
      const double step = options.h * std::max(1.0, std::abs(static_cast<double>(x0)));
      // The steps actually taken: x0 +- step rounded to float, measured in double.
      const float up = static_cast<float>(static_cast<double>(x0) + step);
      const float down = static_cast<float>(static_cast<double>(x0) - step);
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
    const double floor = std::max(options.floor * scale, 1e-6);
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

bool all_pass(const std::vector<GradCheckResult>& results) {
  return std::all_of(results.begin(), results.end(),
                     [](const GradCheckResult& r) { return r.pass; });
}

std::vector<GradCheckResult> check_gradients(const std::function<double()>& loss,
                                             std::span<const GradTensor64> tensors,
                                             const GradCheckOptions64& options) {
  std::vector<GradCheckResult> results;
  for (const GradTensor64& t : tensors) {
    require(t.values.size() == t.grad.size(), "attn::check_gradients",
            "tensor '" + t.name + "' has " + std::to_string(t.values.size()) +
                " values but its gradient has " + std::to_string(t.grad.size()));
    // 1. The numeric gradient of every element: perturb, evaluate twice, restore.
    std::vector<double> numeric(t.values.size());
    std::vector<double> noise(t.values.size());  // the rounding noise of each quotient
    for (std::size_t i = 0; i < t.values.size(); ++i) {
      const double x0 = t.values[i];
      const double step = options.h * std::max(1.0, std::abs(x0));
      const double up = x0 + step, down = x0 - step;  // the values actually taken
      t.values[i] = up;
      const double l_up = loss();
      t.values[i] = down;
      const double l_down = loss();
      t.values[i] = x0;
      const double width = up - down;
      numeric[i] = (l_up - l_down) / width;
      noise[i] = options.noise * std::max({1.0, std::abs(l_up), std::abs(l_down)}) / width;
    }
    // 2. Compare: absolute error, and relative error against max(|a|, |n|, floor, noise / tol).
    double scale = 0.0;
    for (double n : numeric) scale = std::max(scale, std::abs(n));
    const double floor = std::max(options.floor * scale, 1e-12);
    GradCheckResult r;
    r.name = t.name;
    r.count = t.values.size();
    bool finite = true;
    for (std::size_t i = 0; i < numeric.size(); ++i) {
      const double a = t.grad[i];
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

std::vector<GradCheckResult> check_gradients(const std::function<double()>& loss,
                                             const std::vector<GradTensor64>& tensors,
                                             const GradCheckOptions64& options) {
  return check_gradients(loss, std::span<const GradTensor64>(tensors), options);
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
