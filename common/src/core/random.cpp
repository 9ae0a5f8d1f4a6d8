// PCG32 and the distributions built on it (see attn/core/random.hpp).
#include "attn/core/random.hpp"
#include "attn/core/limits.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "attn/core/check.hpp"

namespace attn {

// PCG32 (pcg-random.org, "pcg32_srandom_r"): a 64-bit LCG whose output is permuted by an
// xorshift and a data-dependent rotation. Integer arithmetic only, so it is bit-identical on
// every compiler and platform.
Rng::Rng(std::uint64_t seed, std::uint64_t stream) : state_(0), inc_((stream << 1u) | 1u) {
  next_u32();
  state_ += seed;
  next_u32();
}

std::uint32_t Rng::next_u32() {
  const std::uint64_t old = state_;
  state_ = old * 6364136223846793005ULL + inc_;
  const auto xorshifted = static_cast<std::uint32_t>(((old >> 18u) ^ old) >> 27u);
  const auto rot = static_cast<std::uint32_t>(old >> 59u);
  return (xorshifted >> rot) | (xorshifted << ((-rot) & 31u));
}

float Rng::uniform() {
  // The top 24 bits, scaled by 2^-24: every value is a float exactly, in [0, 1).
  return static_cast<float>(next_u32() >> 8) * 0x1.0p-24f;
}

float Rng::uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }

double Rng::uniform_double() {
  const std::uint64_t hi = next_u32() >> 5;  // 27 bits
  const std::uint64_t lo = next_u32() >> 6;  // 26 bits
  return static_cast<double>((hi << 26) | lo) * 0x1.0p-53;
}

float Rng::normal() {
  // Box-Muller: two uniforms u1 in (0, 1], u2 in [0, 1) give two independent normals
  //   r = sqrt(-2 ln u1),  z0 = r cos(2 pi u2),  z1 = r sin(2 pi u2).
  // Computed in double and rounded once, so libm differences stay far below float precision.
  if (has_spare_) {
    has_spare_ = false;
    return static_cast<float>(spare_);
  }
  const double u1 = 1.0 - uniform_double();  // (0, 1]: log never sees 0
  const double u2 = uniform_double();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2.0 * std::numbers::pi * u2;
  spare_ = r * std::sin(angle);
  has_spare_ = true;
  return static_cast<float>(r * std::cos(angle));
}

float Rng::normal(float mean, float std) { return mean + std * normal(); }

std::size_t Rng::below(std::size_t n) {
  require(n >= 1, "attn::Rng::below", "n must be at least 1");
  require(n <= 0xFFFFFFFFull, "attn::Rng::below", "n must fit in 32 bits");
  // Lemire's multiply-shift with rejection: unbiased, usually one draw.
  const auto range = static_cast<std::uint32_t>(n);
  std::uint64_t m = static_cast<std::uint64_t>(next_u32()) * range;
  auto low = static_cast<std::uint32_t>(m);
  if (low < range) {
    const std::uint32_t threshold = (0u - range) % range;
    while (low < threshold) {
      m = static_cast<std::uint64_t>(next_u32()) * range;
      low = static_cast<std::uint32_t>(m);
    }
  }
  return static_cast<std::size_t>(m >> 32);
}

std::size_t Rng::categorical(std::span<const float> probs) {
  require(!probs.empty(), "attn::Rng::categorical", "probabilities must not be empty");
  double total = 0.0;
  for (float p : probs) {
    require(std::isfinite(p) && p >= 0.0f, "attn::Rng::categorical",
            "probabilities must be finite and non-negative");
    total += static_cast<double>(p);
  }
  require(total > 0.0, "attn::Rng::categorical", "probabilities must not all be zero");
  // Walk the cumulative sum until it passes u * total. The last non-zero entry catches any
  // rounding left over at the end.
  const double u = uniform_double() * total;
  double cumulative = 0.0;
  std::size_t last_nonzero = 0;
  for (std::size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] <= 0.0f) continue;
    cumulative += static_cast<double>(probs[i]);
    last_nonzero = i;
    if (u < cumulative) return i;
  }
  return last_nonzero;
}

std::vector<std::size_t> multinomial(Rng& rng, std::span<const float> probs, std::size_t n) {
  std::vector<std::size_t> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(rng.categorical(probs));
  return out;
}

template <std::size_t N>
Tensor<N> randn(Rng& rng, const std::array<std::size_t, N>& shape, float std) {
  Tensor<N> out(shape);
  for (float& v : out) v = std * rng.normal();  // xtensor containers are row-major
  return out;
}

template Tensor<1> randn<1>(Rng&, const std::array<std::size_t, 1>&, float);
template Tensor<2> randn<2>(Rng&, const std::array<std::size_t, 2>&, float);
template Tensor<3> randn<3>(Rng&, const std::array<std::size_t, 3>&, float);
template Tensor<4> randn<4>(Rng&, const std::array<std::size_t, 4>&, float);

Matrix randn(Rng& rng, std::size_t rows, std::size_t cols, float std) {
  checked_elements({rows, cols}, "attn::randn: (rows, cols)");
  return randn<2>(rng, {rows, cols}, std);
}

Matrix rand_uniform(Rng& rng, std::size_t rows, std::size_t cols, float lo, float hi) {
  checked_elements({rows, cols}, "attn::rand_uniform: (rows, cols)");
  Matrix out({rows, cols});
  for (float& v : out) v = rng.uniform(lo, hi);
  return out;
}

}  // namespace attn
