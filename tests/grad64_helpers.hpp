// tests/grad64_helpers.hpp: the float64 gradient checks of chapter 11's ops (RoPE, RMSNorm,
// SwiGLU, grouped-query and sliding-window attention). Their references are templated on the
// scalar, so forward and backward run entirely in double, and attn::check_gradients
// (attn/train/gradcheck.hpp: central differences, h 1e-6, tolerance 1e-4) judges each backward
// on L = sum(out * R) for a fixed random R:
//   check_grad64(op, name, central_differences64(loss, values, analytic))          must pass
//   check_grad64_caught(op, name, central_differences64(loss, values, wrong))      must fail
// Both print one line per tensor (gradcheck <op> <tensor> ... max_abs=... max_rel=...).
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"
#include "attn/train/gradcheck.hpp"
#include "gradcheck_helpers.hpp"

namespace attn::testing {

// A standard-normal float64 tensor from the project's generator (drawn in float, exact in double).
template <std::size_t N>
Tensor64<N> randn64(Rng& rng, const std::array<std::size_t, N>& shape, double std = 1.0) {
  Tensor64<N> t = xt::cast<double>(randn<N>(rng, shape));
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

// attn::check_gradients on one tensor: `values` perturbed in place (restored), `analytic` the
// backward's dL/dvalues.
template <class T>
std::vector<GradCheckResult> central_differences64(const std::function<double()>& loss, T& values,
                                                   const T& analytic) {
  REQUIRE(values.size() == analytic.size());
  return attn::check_gradients(
      loss, std::vector<GradTensor64>{{"", span_of(values), cspan_of(analytic)}});
}

// CHECKs that the gradient passes (printing its errors for the issue notes) ...
inline void check_grad64(const std::string& op, const std::string& name,
                         std::vector<GradCheckResult> results) {
  for (GradCheckResult& r : results) r.name = name;
  check_gradients(op, results);
}
// ... or, for a deliberately wrong backward, that it fails.
inline void check_grad64_caught(const std::string& op, const std::string& name,
                                std::vector<GradCheckResult> results) {
  for (GradCheckResult& r : results) r.name = name;
  check_caught(op, results);
}

}  // namespace attn::testing
