// tests/test_helpers.hpp: comparing tensors in doctest.
// CHECK_TENSOR_NEAR(got, want, atol, rtol) passes when the shapes are equal and every element
// satisfies |got - want| <= atol + rtol * |want| (NaN never passes; equal infinities do). On
// failure it reports, in words a learner can read (attn-check prints it), the shapes or the first
// offending element with its index, e.g. "ex06::gelu(x): at (0, 0, 1) got 0.3457, expected
// 0.3461 (|diff| 4e-04, tolerance 1e-06)".
// error_of(f) runs f and returns the message of the std::invalid_argument it throws, or
// "(no error)".
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include "attn/core/check.hpp"
#include "attn/core/xt.hpp"

namespace attn::testing {

template <class A, class B>
std::string tensor_mismatch(const A& got, const B& want, double atol, double rtol) {
  if (got.dimension() != want.dimension() ||
      !std::equal(got.shape().begin(), got.shape().end(), want.shape().begin())) {
    return "got shape " + attn::shape_str(got.shape()) + ", expected " +
           attn::shape_str(want.shape());
  }
  auto g = got.begin();
  auto w = want.begin();
  for (std::size_t i = 0; g != got.end(); ++g, ++w, ++i) {
    const double gv = static_cast<double>(*g);
    const double wv = static_cast<double>(*w);
    const bool same_inf = std::isinf(gv) && std::isinf(wv) && (gv > 0) == (wv > 0);
    if (same_inf) continue;
    if (!(std::abs(gv - wv) <= atol + rtol * std::abs(wv))) {
      // The flat (row-major) index i as (i0, i1, ...).
      std::string where;
      std::size_t rest = i;
      for (std::size_t d = got.dimension(); d-- > 0;) {
        const std::size_t extent = got.shape()[d];
        where =
            std::to_string(extent == 0 ? 0 : rest % extent) + (where.empty() ? "" : ", ") + where;
        rest = extent == 0 ? 0 : rest / extent;
      }
      std::ostringstream out;
      out << "at (" << where << ") got " << gv << ", expected " << wv << " (|diff| "
          << std::abs(gv - wv) << ", tolerance " << atol + rtol * std::abs(wv) << ")";
      return out.str();
    }
  }
  return {};
}

// The one-line message of the std::invalid_argument f() throws, or "(no error)".
inline std::string error_of(auto&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace attn::testing

#define CHECK_TENSOR_NEAR(got, want, atol, rtol)                          \
  do {                                                                    \
    const std::string attn_mismatch_ =                                    \
        attn::testing::tensor_mismatch((got), (want), (atol), (rtol));    \
    if (!attn_mismatch_.empty()) FAIL_CHECK(#got ": " << attn_mismatch_); \
  } while (false)
