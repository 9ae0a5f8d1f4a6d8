// tests/grad64_helpers.hpp: float64 central differences for the chapter-11 ops (RoPE, RMSNorm,
// SwiGLU, grouped-query and sliding-window attention), whose references are templated on the
// scalar and so run entirely in double. With L = sum(out * R) for a fixed random R, every element
// theta_i gets
//   numeric_i = (L(theta_i + h) - L(theta_i - h)) / (2 h),   h = 1e-5
// whose error in double is ~1e-10 relative (truncation h^2 L''' / 6 plus rounding 1e-16 / h), far
// below what a wrong backward makes (1e-2 and up). A tensor's error is
//   max_i |analytic_i - numeric_i| / max(max_i |numeric_i|, 1e-12)
// and passes below kGrad64Tolerance (1e-6).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"

namespace attn::testing {

inline constexpr double kGrad64Tolerance = 1e-6;

// A standard-normal float64 tensor from the project's generator (drawn in float, exact in double).
template <std::size_t N>
xt::xtensor<double, N> randn64(Rng& rng, const std::array<std::size_t, N>& shape,
                               double std = 1.0) {
  xt::xtensor<double, N> t = xt::cast<double>(randn<N>(rng, shape));
  t *= std;
  return t;
}

// sum(a * b) in double: L = sum(out * R) has dL/dout = R.
template <class A, class B>
double dot64(const A& a, const B& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a.data()[i] * b.data()[i];
  return s;
}

// The relative error of `analytic` against central differences of `loss` over `values`
// (perturbed in place, restored afterwards).
template <class T>
double grad64_error(const std::function<double()>& loss, T& values, const T& analytic,
                    double h = 1e-5) {
  REQUIRE(values.size() == analytic.size());
  double max_diff = 0.0, max_numeric = 0.0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double keep = values.data()[i];
    values.data()[i] = keep + h;
    const double up = loss();
    values.data()[i] = keep - h;
    const double down = loss();
    values.data()[i] = keep;
    const double numeric = (up - down) / (2.0 * h);
    max_diff = std::max(max_diff, std::abs(analytic.data()[i] - numeric));
    max_numeric = std::max(max_numeric, std::abs(numeric));
  }
  return max_diff / std::max(max_numeric, 1e-12);
}

// CHECKs (and prints, for the issue notes) that a gradient passes.
inline void check_grad64(const std::string& op, const std::string& name, double error) {
  std::printf("grad64 %-28s %-8s rel_err=%.3e %s\n", op.c_str(), name.c_str(), error,
              error <= kGrad64Tolerance ? "PASS" : "FAIL");
  CHECK_MESSAGE(error <= kGrad64Tolerance, op << " " << name << ": relative error " << error);
}
// The opposite, for a deliberately wrong backward: it must be caught.
inline void check_grad64_caught(const std::string& op, const std::string& name, double error) {
  std::printf("grad64 %-28s %-8s rel_err=%.3e (wrong backward) %s\n", op.c_str(), name.c_str(),
              error, error > kGrad64Tolerance ? "caught" : "NOT CAUGHT");
  CHECK_MESSAGE(error > 1e-3,
                op << " " << name << ": the wrong gradient was not caught (error " << error << ")");
}

}  // namespace attn::testing
