// Wrong: counts a pair (last, first) as if the text were a circle: N pairs, not N - 1.

#include "exercises.hpp"

namespace ex01 {

attn::Matrix bigram_counts(std::span<const int> tokens, std::size_t V) {
  attn::Matrix counts = xt::zeros<float>({V, V});
  const std::size_t N = tokens.size();
  for (std::size_t i = 0; i < N; ++i)
    counts(static_cast<std::size_t>(tokens[i]), static_cast<std::size_t>(tokens[(i + 1) % N])) +=
        1.0f;
  return counts;
}

}  // namespace ex01
