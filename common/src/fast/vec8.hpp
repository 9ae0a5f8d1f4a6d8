// vec8.hpp (private to common/src/fast): 8 floats at a time with the GCC/Clang vector
// extension, for the element-wise kernels of ffn.cpp (GELU, ReLU) and swiglu.cpp (silu). A
// file that includes it compiles its loops with ATTN_SIMD_CLONES (simd.hpp) and, under the fuzz
// build's Clang, with -mavx2 (common/CMakeLists.txt).
#pragma once

#include <bit>
#include <cstdint>

namespace attn::fast::detail8 {

// Written on 8 floats at a time with the GCC/Clang vector extension. Why not a plain loop over
// std::erf? std::erf costs ~10 ns a call here (84 ms for 8.4M values), and g++ -O2 does not
// vectorise the scalar formulas below: under the default -ftrapping-math it will not turn
// `x < 0 ? a : b` into branch-free code. An 8-float vector is one AVX register, or two SSE
// registers on a CPU without AVX; the loop that applies a kernel is compiled for both
// (ATTN_SIMD_CLONES, simd.hpp). Each lane does exactly what the scalar formula would (same IEEE
// operations, no FMA: -ffp-contract=off), so a value gets the same result wherever it sits in a
// buffer and whichever version runs.
//
// The kernels take and return vectors by value and are always inlined into the cloned loop:
// their code is generated once per target inside it, and no 32-byte vector ever crosses a call
// (where SSE-only code would pass it differently from AVX code). GCC still notes that ABI
// difference (-Wpsabi), at the end of a file, so the note is switched off where this is included.
#pragma GCC diagnostic ignored "-Wpsabi"
using f32x8 = float __attribute__((vector_size(32)));
using i32x8 = std::int32_t __attribute__((vector_size(32)));
#define ATTN_KERNEL [[gnu::always_inline]] inline

ATTN_KERNEL f32x8 splat(float v) { return f32x8{v, v, v, v, v, v, v, v}; }

// 8 floats from memory, and back (no alignment needed).
ATTN_KERNEL f32x8 load8(const float* p) {
  f32x8 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
ATTN_KERNEL void store8(float* p, f32x8 v) { __builtin_memcpy(p, &v, sizeof v); }

// |x|: clear the sign bit.
ATTN_KERNEL f32x8 abs8(f32x8 x) {
  return std::bit_cast<f32x8>(std::bit_cast<i32x8>(x) & 0x7fffffff);
}

// e^x. Cephes expf (S. L. Moshier, Cephes Math Library, single/expf.c), relative error ~1e-7:
// x = n ln2 + r with |r| <= ln2 / 2, e^r from a polynomial, 2^n written into the exponent bits.
// Below -87.3 (where e^x leaves the normal floats) the result is exactly 0.
ATTN_KERNEL f32x8 exp8(f32x8 x) {
  const i32x8 underflow = x < -87.3f;
  // Clamp to the range where 2^n is a normal float. Written so that a NaN lane fails the test
  // and becomes a finite number: the float -> int conversion of step 4 must never see NaN or
  // infinity. (The callers carry NaN through x itself.)
  x = x < 88.3f ? x : splat(88.3f);
  x = x > -87.3f ? x : splat(-87.3f);
  // 1. n = round(x / ln 2): adding 1.5 * 2^23 pushes the fraction bits out of the float.
  const f32x8 n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  // 2. r = x - n ln2 in two parts: 0.693359375 has few mantissa bits, so n * it is exact.
  f32x8 r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  // 3. e^r = 1 + r + r^2 P(r) on [-ln2/2, ln2/2].
  f32x8 p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const f32x8 e_r = p * (r * r) + r + 1.0f;
  // 4. e^x = e^r * 2^n, with 2^n built directly: exponent field n + 127, mantissa 0.
  const i32x8 two_n = (__builtin_convertvector(n, i32x8) + 127) << 23;
  const f32x8 y = e_r * std::bit_cast<f32x8>(two_n);
  return underflow ? splat(0.0f) : y;
}

}  // namespace attn::fast::detail8
