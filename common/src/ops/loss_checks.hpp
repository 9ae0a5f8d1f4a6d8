// loss_checks.hpp (private to common/src): the input checks of cross-entropy, shared by the
// reference (ops/loss.cpp) and the fast kernels (fast/loss.cpp), so both reject the same inputs
// with the same one-line messages.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "attn/core/check.hpp"
#include "attn/core/xt.hpp"

namespace attn::detail {

// logits (N, V) and N targets in [0, V), with messages naming what was expected and what came.
template <class Real>  // float, or double for chapter 08's float64 gradient checks
void check_loss_inputs(const xt::xtensor<Real, 2>& logits, std::span<const int> targets,
                       const char* function) {
  const std::size_t N = logits.shape()[0];
  const std::size_t V = logits.shape()[1];
  // (Messages built only on failure: the training step checks its logits every step.)
  if (N == 0 || V == 0) {
    shape_error(function, N == 0 ? "logits (N, V) with N >= 1" : "logits (N, V) with V >= 1",
                "logits " + shape_str(logits.shape()));
  }
  if (targets.size() != N) {
    shape_error(function, std::to_string(N) + " targets for logits " + shape_str(logits.shape()),
                std::to_string(targets.size()) + " targets");
  }
  for (std::size_t n = 0; n < N; ++n) {
    if (targets[n] < 0 || static_cast<std::size_t>(targets[n]) >= V) {
      shape_error(function, "targets in [0, " + std::to_string(V) + ")",
                  std::to_string(targets[n]) + " at index " + std::to_string(n));
    }
  }
}

}  // namespace attn::detail
