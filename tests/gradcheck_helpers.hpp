// tests/gradcheck_helpers.hpp: running attn::check_gradients (float64) or attn::grad_check
// (float32) from doctest (chapter 08's tests, and the float64 checks of chapter 11's ops).
// check_gradients(op, results) CHECKs that every tensor passes and prints one line per tensor,
//   gradcheck <op> <tensor> max_abs=... max_rel=...
// so a test run shows the errors the notes quote. For one tensor of an op templated on the scalar
// (RoPE, RMSNorm, SwiGLU, grouped-query and sliding-window attention, run entirely in double):
//   check_grad64(op, name, central_differences64(loss, values, analytic))          must pass
//   check_grad64_caught(op, name, central_differences64(loss, values, wrong))      must fail
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"
#include "attn/train/gradcheck.hpp"

namespace attn::testing {

// A tensor's numbers as a span (float for Tensor, double for Tensor64).
template <class T>
std::span<typename T::value_type> span_of(T& t) {
  return {t.data(), t.size()};
}
template <class T>
std::span<const typename T::value_type> cspan_of(const T& t) {
  return {t.data(), t.size()};
}

// A fixed random R shaped like `like`: the upstream gradient of L = sum(out * R).
template <std::size_t N>
Tensor<N> upstream(const Tensor<N>& like, std::uint64_t seed) {
  Rng rng(seed);
  std::array<std::size_t, N> shape;
  std::copy(like.shape().begin(), like.shape().end(), shape.begin());
  return randn<N>(rng, shape);
}

// The same R in double, for the float64 checks (attn::check_gradients).
template <std::size_t N>
Tensor64<N> upstream64(const Tensor64<N>& like, std::uint64_t seed) {
  Rng rng(seed);
  Tensor64<N> r(like.shape());
  for (double& v : r) v = rng.normal();
  return r;
}

inline void check_gradients(const std::string& op, const std::vector<GradCheckResult>& results) {
  REQUIRE(!results.empty());
  for (const GradCheckResult& r : results) {
    std::printf("gradcheck %-28s %-12s n=%-5zu max_abs=%.3e max_rel=%.3e %s\n", op.c_str(),
                r.name.c_str(), r.count, r.max_abs, r.max_rel, r.pass ? "PASS" : "FAIL");
    CHECK_MESSAGE(r.pass,
                  op << " " << r.name << ": max_abs " << r.max_abs << ", max_rel " << r.max_rel);
  }
}

// The opposite: at least one tensor must fail (a deliberately wrong gradient).
inline void check_caught(const std::string& op, const std::vector<GradCheckResult>& results) {
  bool any_fail = false;
  for (const GradCheckResult& r : results) {
    std::printf("gradcheck %-28s %-12s n=%-5zu max_abs=%.3e max_rel=%.3e %s (wrong gradient)\n",
                op.c_str(), r.name.c_str(), r.count, r.max_abs, r.max_rel,
                r.pass ? "PASS" : "FAIL");
    any_fail = any_fail || !r.pass;
  }
  CHECK_MESSAGE(any_fail, op << ": the wrong gradient was not caught");
}

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
  return attn::weighted_sum(cspan_of(a), cspan_of(b));
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

// CHECKs that the gradient passes, under the tensor's name ...
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
