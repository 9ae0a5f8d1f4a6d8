// Wrong: the gradient of the mean loss without the 1/N.
#include <algorithm>
#include <cmath>

#include "exercises.hpp"

namespace ex01 {

double cross_entropy(const attn::Matrix& logits, std::span<const int> targets) {
  const std::size_t N = logits.shape()[0], V = logits.shape()[1];
  double total = 0.0;
  for (std::size_t n = 0; n < N; ++n) {
    float m = logits(n, 0);
    for (std::size_t j = 1; j < V; ++j) m = std::max(m, logits(n, j));
    double sum = 0.0;
    for (std::size_t j = 0; j < V; ++j) sum += std::exp(static_cast<double>(logits(n, j) - m));
    total += std::log(sum) + static_cast<double>(m) -
             static_cast<double>(logits(n, static_cast<std::size_t>(targets[n])));
  }
  return total / static_cast<double>(N);
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
      grad(n, j) = static_cast<float>(p - (static_cast<int>(j) == targets[n] ? 1.0 : 0.0));
    }
  }
  return grad;
}

}  // namespace ex01
