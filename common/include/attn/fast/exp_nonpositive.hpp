// attn/fast/exp_nonpositive.hpp: the exp of the attention kernels' softmax
// (fast/attention.cpp, fast/flash.cpp, chapter 12's ladder.cpp): libm's expf is a function call the
// compiler cannot vectorise; this one is branch-free, so loops over it become SIMD instructions.
#pragma once

#include <bit>
#include <cstdint>

// The 8-float version below is always inlined: no vector crosses a call, so the ABI difference
// GCC notes (-Wpsabi) for 32-byte vectors without AVX does not arise. The note comes where the
// including file ends, so it stays switched off for that file.
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace attn::detail {

// Steps 2-4 of exp_nonpositive below, for a float or a vector of floats F (the same operations
// in the same order either way): from x, already clamped, t = x / ln 2 + 1.5 * 2^23 (n in its
// low mantissa bits) and exp(r), r = x - n ln 2.
template <class F>
[[gnu::always_inline]] inline F exp_reduced(F xc, F& t) {
  // 2. n = round(x / ln 2) by the 1.5 * 2^23 trick: adding it pushes the fraction bits out, so
  //    t holds n in its low mantissa bits and t - 1.5 * 2^23 is n as a float.
  t = xc * 1.44269504088896341f + 12582912.0f;
  const F n = t - 12582912.0f;
  // 3. r = x - n ln 2, with ln 2 split into an exact high part and a small correction.
  F r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  // 4. exp(r) = 1 + r + r^2 p(r), with p a degree-5 minimax polynomial (F{} + c: c, in every
  //    lane of a vector).
  F p = F{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

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
  // 2.-4. exp(r), and n in the bits of t.
  float t;
  const float er = exp_reduced(xc, t);
  // 5. 2^n built directly as float bits: biased exponent n + 127, or 0 (so the result is 0)
  //    when n + 127 <= 0, i.e. below the normal range.
  const std::int32_t biased = std::bit_cast<std::int32_t>(t) - 0x4B400000 + 127;
  const std::uint32_t keep = 0u - static_cast<std::uint32_t>(biased > 0);
  return er * std::bit_cast<float>((static_cast<std::uint32_t>(biased) << 23) & keep);
}

#if defined(__GNUC__)
// The same function on 8 floats at once, for the rows of the flash kernel (fast/flash.cpp), with
// the GCC/Clang vector extension. Why a second copy: g++ vectorises the scalar one above, but its
// clamp (step 1, done on the bits so that the loop vectorises at all) costs six instructions a
// lane; a vector select does it in one, and the whole exp takes a fifth less time. Every lane
// does exactly the scalar's IEEE operations in the same order (no FMA: -ffp-contract=off), so
// lane i of exp_nonpositive8(x) is bit for bit exp_nonpositive(x[i]), NaN, -inf and the
// underflow included (tests/common/test_flash.cpp checks it over every float exponent).
//
// Always inlined into the caller, a function compiled for SSE2 and AVX2 (ATTN_SIMD_CLONES): an
// 8-float vector is one AVX register or two SSE ones, and no vector ever crosses a call (GCC's
// -Wpsabi note about that difference is switched off at the top of this file).
using float8 = float __attribute__((vector_size(32)));
using int8 = std::int32_t __attribute__((vector_size(32)));

[[gnu::always_inline]] inline float8 splat8(float v) { return float8{v, v, v, v, v, v, v, v}; }

[[gnu::always_inline]] inline float8 exp_nonpositive8(float8 x) {
  // 1. Below -88.5, -88.5 (a NaN lane fails the test and stays NaN; -inf becomes -88.5).
  x = x < -88.5f ? splat8(-88.5f) : x;
  // 2.-4. As the scalar version.
  float8 t;
  const float8 er = exp_reduced(x, t);
  // 5. 2^n from the bits of t, or 0 below the normal range (a lane mask is all ones or zeros).
  const int8 biased = __builtin_bit_cast(int8, t) - 0x4B400000 + 127;
  const int8 keep = biased > 0;
  return er * __builtin_bit_cast(float8, (biased << 23) & keep);
}
#endif

}  // namespace attn::detail
