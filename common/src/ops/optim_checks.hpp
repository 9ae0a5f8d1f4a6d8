// optim_checks.hpp (private to common/src): the input checks of the AdamW update, shared by the
// reference (ops/optim.cpp) and the fast kernel (fast/optim.cpp), so both reject the same
// inputs with the same one-line messages.
#pragma once

#include <cstddef>
#include <string>

#include "attn/core/check.hpp"

namespace attn::detail {

// p, g, m and v of one length; step counts from 1. (Messages built only on failure: the
// training step calls this for every tensor.)
inline void check_adamw_inputs(const char* function, std::size_t p, std::size_t g, std::size_t m,
                               std::size_t v, std::size_t step) {
  if (g != p || m != p || v != p) {
    require(false, function, [&] {
      return "p, g, m and v must have the same length, got " + std::to_string(p) + ", " +
             std::to_string(g) + ", " + std::to_string(m) + ", " + std::to_string(v);
    });
  }
  if (step == 0) require(false, function, "step counts from 1");
}

}  // namespace attn::detail
