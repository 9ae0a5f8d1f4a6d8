// Wrong: exp of the raw logits (no row maximum subtracted): logits like 1000 overflow to inf.
#include <algorithm>
#include <cmath>

#include "exercises.hpp"

namespace ex01 {

double cross_entropy(const attn::Matrix& logits, std::span<const int> targets) {
  const std::size_t N = logits.shape()[0], V = logits.shape()[1];
  float total = 0.0f;
  for (std::size_t n = 0; n < N; ++n) {
    float sum = 0.0f;
    for (std::size_t j = 0; j < V; ++j) sum += std::exp(logits(n, j));
    total += -std::log(std::exp(logits(n, static_cast<std::size_t>(targets[n]))) / sum);
  }
  return static_cast<double>(total) / static_cast<double>(N);
}

attn::Matrix cross_entropy_grad(const attn::Matrix& logits, std::span<const int> targets) {
  const std::size_t N = logits.shape()[0], V = logits.shape()[1];
  attn::Matrix grad({N, V});
  for (std::size_t n = 0; n < N; ++n) {
    float m = logits(n, 0);
    for (std::size_t j = 1; j < V; ++j) m = std::max(m, logits(n, j));
    double sum = 0.0;
    for (std::size_t j = 0; j < V; ++j) sum += std::exp(static_cast<double>(logits(n, j) - m));
    for (std::size_t j = 0; j < V; ++j) {
      const double p = std::exp(static_cast<double>(logits(n, j) - m)) / sum;
      const double onehot = static_cast<int>(j) == targets[n] ? 1.0 : 0.0;
      grad(n, j) = static_cast<float>((p - onehot) / static_cast<double>(N));
    }
  }
  return grad;
}

}  // namespace ex01
