// attn/core/random.hpp: the course's own random number generator.
// Every chapter must print the same numbers on every machine, so we never use rand() or
// std::normal_distribution (whose output differs between standard libraries). Instead:
//   - PCG32 (O'Neill 2014): 64-bit state, 32-bit output, a few lines of integer arithmetic;
//   - uniform floats from the top 24 bits, so every value is exact: u = (x >> 8) * 2^-24;
//   - normals by Box-Muller computed in double, then rounded to float;
//   - categorical (multinomial) sampling by walking the cumulative sum with one uniform draw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "attn/core/xt.hpp"

namespace attn {

class Rng {
 public:
  // Any seed is fine; equal seeds give equal streams on every platform.
  explicit Rng(std::uint64_t seed = 1337, std::uint64_t stream = 54);

  std::uint32_t next_u32();
  // Uniform in [0, 1) with 24 random bits: exact in float.
  float uniform();
  // Uniform in [lo, hi).
  float uniform(float lo, float hi);
  // Uniform in [0, 1) with 53 random bits (two draws), for algorithms that need double.
  double uniform_double();
  // Standard normal N(0, 1) by Box-Muller in double. Caches the second value of each pair.
  float normal();
  float normal(float mean, float std);
  // Uniform integer in [0, n), unbiased (Lemire's rejection method). n must be >= 1.
  std::size_t below(std::size_t n);
  // One draw from the categorical distribution `probs` (non-negative, summing to ~1; it is
  // renormalised by its sum). Throws std::invalid_argument on empty, negative, NaN or all-zero.
  std::size_t categorical(std::span<const float> probs);

  // The generator's whole state, so a checkpoint can stop and resume a stream exactly.
  struct State {
    std::uint64_t state = 0;
    std::uint64_t inc = 0;
    bool has_spare = false;
    double spare = 0.0;
  };
  State state() const { return {state_, inc_, has_spare_, spare_}; }
  void restore(const State& s) {
    state_ = s.state;
    inc_ = s.inc;
    has_spare_ = s.has_spare;
    spare_ = s.spare;
  }

 private:
  std::uint64_t state_;
  std::uint64_t inc_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// n samples with replacement from `probs`, like torch.multinomial(probs, n, replacement=True).
std::vector<std::size_t> multinomial(Rng& rng, std::span<const float> probs, std::size_t n);

// Tensors filled from the generator, in row-major order (so the numbers do not depend on how
// xtensor iterates).
Matrix randn(Rng& rng, std::size_t rows, std::size_t cols, float std = 1.0f);
Matrix rand_uniform(Rng& rng, std::size_t rows, std::size_t cols, float lo, float hi);
template <std::size_t N>
Tensor<N> randn(Rng& rng, const std::array<std::size_t, N>& shape, float std = 1.0f);

extern template Tensor<1> randn<1>(Rng&, const std::array<std::size_t, 1>&, float);
extern template Tensor<2> randn<2>(Rng&, const std::array<std::size_t, 2>&, float);
extern template Tensor<3> randn<3>(Rng&, const std::array<std::size_t, 3>&, float);
extern template Tensor<4> randn<4>(Rng&, const std::array<std::size_t, 4>&, float);

}  // namespace attn
