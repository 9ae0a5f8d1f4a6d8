// rope_checks.hpp (private to common/src): the input checks of RoPE, shared by rope.cpp and
// gqa.cpp, so both reject the same inputs with the same one-line messages.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>

#include "attn/core/check.hpp"

namespace attn::detail {

// hs even and >= 2; theta a finite number > 0.
inline void check_rope(const char* fn, std::size_t hs, double theta) {
  require(hs >= 2 && hs % 2 == 0, fn, [&] {
    return "head size hs = " + std::to_string(hs) + (hs == 0 ? " is 0" : " is odd") +
           ", but RoPE rotates pairs of features (expected an even hs >= 2)";
  });
  require(std::isfinite(theta) && theta > 0.0, fn, [&] {
    return "theta must be a finite number > 0 (the base of the angles, e.g. 10000), got " +
           std::to_string(theta);
  });
}

}  // namespace attn::detail
