// Wrong: counts(b, a) instead of counts(a, b): rows hold what precedes.

#include "exercises.hpp"

namespace ex01 {

attn::Matrix bigram_counts(std::span<const int> tokens, std::size_t V) {
  attn::Matrix counts = xt::zeros<float>({V, V});
  for (std::size_t i = 0; i + 1 < tokens.size(); ++i)
    counts(static_cast<std::size_t>(tokens[i + 1]), static_cast<std::size_t>(tokens[i])) += 1.0f;
  return counts;
}

}  // namespace ex01
