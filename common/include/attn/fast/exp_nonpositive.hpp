// attn/fast/exp_nonpositive.hpp: the exp of the attention kernels' softmax
// (fast/attention.cpp, fast/flash.cpp, chapter 12's ladder.cpp): libm's expf is a function call the
// compiler cannot vectorise; this one is branch-free, so loops over it become SIMD instructions.
#pragma once

#include <bit>
#include <cstdint>

namespace attn::detail {

// exp(x) for x <= 0, to 1 ulp (Cephes' expf polynomial), 0 below about -88 where the true value
// is no longer a normal float; NaN stays NaN. Branch-free so that it vectorises.
//   exp(x) = 2^n * exp(r),  n = round(x / ln 2),  r = x - n ln 2 in [-ln2/2, ln2/2]
inline float exp_nonpositive(float x) {
  // 1. Clamp x to -88.5 (exp(-88.5) ~ 4e-39 is already below the smallest normal float). The
  //    comparison is done on the bits: for negative floats a larger unsigned pattern means a
  //    more negative number, and -inf (0xFF800000) is the largest. NaNs are left alone.
  const auto xi = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t too_small = (0u - static_cast<std::uint32_t>(xi > 0xC2B10000u)) &
                                  (0u - static_cast<std::uint32_t>(xi <= 0xFF800000u));
  const float xc = std::bit_cast<float>((0xC2B10000u & too_small) | (xi & ~too_small));
  // 2. n = round(x / ln 2) by the 1.5 * 2^23 trick: adding it pushes the fraction bits out, so
  //    t holds n in its low mantissa bits and t - 1.5 * 2^23 is n as a float.
  const float t = xc * 1.44269504088896341f + 12582912.0f;
  const float n = t - 12582912.0f;
  // 3. r = x - n ln 2, with ln 2 split into an exact high part and a small correction.
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  // 4. exp(r) = 1 + r + r^2 p(r), with p a degree-5 minimax polynomial.
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * r * r + r + 1.0f;
  // 5. 2^n built directly as float bits: biased exponent n + 127, or 0 (so the result is 0)
  //    when n + 127 <= 0, i.e. below the normal range.
  const std::int32_t biased = std::bit_cast<std::int32_t>(t) - 0x4B400000 + 127;
  const std::uint32_t keep = 0u - static_cast<std::uint32_t>(biased > 0);
  return er * std::bit_cast<float>((static_cast<std::uint32_t>(biased) << 23) & keep);
}

}  // namespace attn::detail
