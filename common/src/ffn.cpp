// ffn.cpp: the position-wise feed-forward network and its activations (chapter 06).
//   FFN(x) = act(x @ w1 + b1) @ w2 + b2: two GEMMs (attn::linear) around an element-wise
// activation, applied to every token on its own. In the benchmark block (B*T = 4096 tokens,
// F = 2048) the activation runs on 8.4M values per forward, so GELU gets a vectorised kernel.
#include "attn/ffn.hpp"

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "attn/check.hpp"
#include "attn/linear.hpp"

namespace attn {

Activation parse_activation(std::string_view name) {
  if (name == "relu") return Activation::relu;
  if (name == "gelu") return Activation::gelu;
  if (name == "gelu_tanh") return Activation::gelu_tanh;
  throw std::invalid_argument("unknown activation '" + std::string(name) +
                              "': expected relu, gelu or gelu_tanh");
}

std::string_view activation_name(Activation a) {
  switch (a) {
    case Activation::relu: return "relu";
    case Activation::gelu: return "gelu";
    case Activation::gelu_tanh: return "gelu_tanh";
  }
  return "unknown";
}

namespace {

// ---- The activation kernels -------------------------------------------------------------------
// Written on 4 floats at a time with the GCC/Clang vector extension (one SSE register). Why not
// a plain loop over std::erf? std::erf costs ~10 ns a call here (84 ms for 8.4M values), and
// g++ -O2 does not vectorise the scalar formulas below: under the default -ftrapping-math it
// will not turn `x < 0 ? a : b` into branch-free code. Each lane does exactly what the scalar
// formula would (same IEEE operations, no FMA: -ffp-contract=off), so a value gets the same
// result wherever it sits in a buffer.
using f32x4 = float __attribute__((vector_size(16)));
using i32x4 = std::int32_t __attribute__((vector_size(16)));

f32x4 splat(float v) { return f32x4{v, v, v, v}; }

// |x|: clear the sign bit.
f32x4 abs4(f32x4 x) { return std::bit_cast<f32x4>(std::bit_cast<i32x4>(x) & 0x7fffffff); }

// e^x. Cephes expf (S. L. Moshier, Cephes Math Library, single/expf.c), relative error ~1e-7:
// x = n ln2 + r with |r| <= ln2 / 2, e^r from a polynomial, 2^n written into the exponent bits.
// Below -87.3 (where e^x leaves the normal floats) the result is exactly 0.
f32x4 exp4(f32x4 x) {
  const i32x4 underflow = x < -87.3f;
  // Clamp to the range where 2^n is a normal float. Written so that a NaN lane fails the test
  // and becomes a finite number: the float -> int conversion of step 4 must never see NaN or
  // infinity. (The callers carry NaN through x itself.)
  x = x < 88.3f ? x : splat(88.3f);
  x = x > -87.3f ? x : splat(-87.3f);
  // 1. n = round(x / ln 2): adding 1.5 * 2^23 pushes the fraction bits out of the float.
  const f32x4 n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  // 2. r = x - n ln2 in two parts: 0.693359375 has few mantissa bits, so n * it is exact.
  f32x4 r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  // 3. e^r = 1 + r + r^2 P(r) on [-ln2/2, ln2/2].
  f32x4 p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const f32x4 e_r = p * (r * r) + r + 1.0f;
  // 4. e^x = e^r * 2^n, with 2^n built directly: exponent field n + 127, mantissa 0.
  const i32x4 two_n = (__builtin_convertvector(n, i32x4) + 127) << 23;
  const f32x4 y = e_r * std::bit_cast<f32x4>(two_n);
  return underflow ? splat(0.0f) : y;
}

// x with +-inf replaced by +-1e30, for the products x * h below (inf * 0 would be NaN). A NaN
// lane becomes -1e30 here, so the callers use it only where x itself also enters the result.
f32x4 clamp_inf(f32x4 x) {
  x = x > -1e30f ? x : splat(-1e30f);
  return x < 1e30f ? x : splat(1e30f);
}

// Both GELUs are x * P(x) with P a smooth step from 0 to 1 and P(-x) = 1 - P(x). With
// h = P(-|x|) in [0, 1/2]:
//   x < 0:  GELU(x) = x h       h is small there and computed to a small relative error, so
//                               there is no cancellation as in 1 + erf(x / sqrt 2) -> 0;
//   x >= 0: GELU(x) = x - x h   which rounds better than x (1 - h).
f32x4 gelu_from_tail(f32x4 x, f32x4 h) {
  const f32x4 xh = clamp_inf(x) * h;
  return x < 0.0f ? xh : x - xh;
}

// Exact GELU: P = Phi, the standard normal CDF, and h = Phi(-|x|) = erfc(|x| / sqrt 2) / 2.
// erfc(z), z >= 0, from Numerical Recipes (Press et al., 2nd ed., section 6.2, erfcc):
//   erfc(z) = t exp(-z^2 - 1.26551223 + t (1.00002368 + ... + t 0.17087277)),  t = 1 / (1 + z/2)
// with a fractional error below 1.2e-7 for every z. Measured against 0.5 x erfc(-x / sqrt 2) in
// double on [-20, 20] (step 1e-4): max absolute error 2.4e-7 at x = 4.16 (half a float step
// there), 1.4e-7 on [-3, 3]; tested in test_ffn.cpp. Speed on the course's 2-core test machine:
// 48 ms for 8.4M values, vs 84 ms for a std::erf loop and 43 ms for PyTorch's (AVX2) F.gelu.
f32x4 gelu4(f32x4 x) {
  const f32x4 z = abs4(x) * 0.70710678118654752f;  // |x| / sqrt 2
  const f32x4 t = 1.0f / (1.0f + 0.5f * z);
  const f32x4 poly =
      -1.26551223f +
      t * (1.00002368f +
           t * (0.37409196f +
                t * (0.09678418f +
                     t * (-0.18628806f +
                          t * (0.27886807f +
                               t * (-1.13520398f +
                                    t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
  const f32x4 h = 0.5f * (t * exp4(-z * z + poly));  // Phi(-|x|) = erfc(z) / 2
  return gelu_from_tail(x, h);
}

// GELU, tanh approximation: P(x) = (1 + tanh(u)) / 2 with u = sqrt(2/pi) (x + 0.044715 x^3).
// (1 + tanh(u)) / 2 is the logistic sigmoid of 2u, so h = P(-|x|) = e / (1 + e), e = e^(-2|u|)
// (u has the sign of x, and e <= 1 never overflows).
f32x4 gelu_tanh4(f32x4 x) {
  const f32x4 xc = clamp_inf(x);  // x^3 of a huge x is inf, harmless; of inf, also fine
  const f32x4 u = 0.7978845608028654f * (xc + 0.044715f * xc * xc * xc);
  const f32x4 e = exp4(-2.0f * abs4(u));
  return gelu_from_tail(x, e / (1.0f + e));
}

// ReLU: max(0, x), NaN stays NaN.
f32x4 relu4(f32x4 x) { return x < 0.0f ? splat(0.0f) : x; }

// Applies a kernel to a buffer, 4 values at a time; the last 1-3 values go through the same
// kernel padded with zeros.
template <f32x4 (*Kernel)(f32x4)>
void apply4(std::span<float> values) {
  float* v = values.data();
  const std::size_t n = values.size();
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    f32x4 x;
    std::memcpy(&x, v + i, sizeof x);  // unaligned load
    x = Kernel(x);
    std::memcpy(v + i, &x, sizeof x);
  }
  if (i < n) {
    f32x4 x = splat(0.0f);
    std::memcpy(&x, v + i, (n - i) * sizeof(float));
    x = Kernel(x);
    std::memcpy(v + i, &x, (n - i) * sizeof(float));
  }
}

// "w2 is (32, 7), expected (32, 8)" when a weight does not have its shape.
template <std::size_t R>
void check_shape(std::string_view function, std::string_view name, const Tensor<R>& t,
                 const std::array<std::size_t, R>& want) {
  if (t.shape() != want) {
    require(false, function,
            std::string(name) + " is " + shape_str(t.shape()) + ", expected " + shape_str(want));
  }
}

}  // namespace

void activate(std::span<float> values, Activation a) {
  switch (a) {
    case Activation::relu: return apply4<relu4>(values);
    case Activation::gelu: return apply4<gelu4>(values);
    case Activation::gelu_tanh: return apply4<gelu_tanh4>(values);
  }
  throw std::invalid_argument("attn::activate: unknown activation");
}

template <std::size_t N>
Tensor<N> activate(const Tensor<N>& x, Activation a) {
  Tensor<N> y = x;  // same shape, contiguous row-major
  activate(std::span<float>(y.data(), y.size()), a);
  return y;
}

template Tensor<1> activate<1>(const Tensor<1>&, Activation);
template Tensor<2> activate<2>(const Tensor<2>&, Activation);
template Tensor<3> activate<3>(const Tensor<3>&, Activation);

FfnWeights ffn_init(Rng& rng, std::size_t C, std::size_t F, float std_dev) {
  FfnWeights w;
  w.w1 = randn(rng, C, F, std_dev);  // (C, F)
  w.b1 = xt::zeros<float>({F});      // (F,)
  w.w2 = randn(rng, F, C, std_dev);  // (F, C)
  w.b2 = xt::zeros<float>({C});      // (C,)
  return w;
}

Tensor<3> ffn_forward(const Tensor<3>& x, const FfnWeights& w, Activation a) {
  const std::size_t C = x.shape()[2];
  const std::size_t F = w.w1.shape()[1];
  check_shape<2>("attn::ffn_forward", "w1", w.w1, {C, F});
  check_shape<1>("attn::ffn_forward", "b1", w.b1, {F});
  check_shape<2>("attn::ffn_forward", "w2", w.w2, {F, C});
  check_shape<1>("attn::ffn_forward", "b2", w.b2, {C});
  // 1. Expand: every token to F (usually 4C) features, one GEMM over all B*T tokens.
  //    (B, T, C) @ (C, F) + (F,) -> (B, T, F)
  Tensor<3> hidden = linear(x, w.w1, w.b1);
  // 2. The non-linearity, in place. Without it the two products would collapse into a single
  //    (C, C) matrix and the FFN could only compute linear maps.
  activate(std::span<float>(hidden.data(), hidden.size()), a);
  // 3. Project back to the model width.
  //    (B, T, F) @ (F, C) + (C,) -> (B, T, C)
  return linear(hidden, w.w2, w.b2);
}

}  // namespace attn
