// tests/exercises/ch01_solution.cpp: the reference answers to chapter 01's exercises.
// Each ex01:: function forwards to the attn:: function it mirrors, so ctest `solution.ch01` runs
// the exercise tests against the library and proves that a correct solution passes them.
#include "attn/model/bigram.hpp"
#include "attn/ops/loss.hpp"
#include "attn/model/sample.hpp"
#include "exercises.hpp"
#include "reference.hpp"

namespace ex01 {

ATTN_REFERENCE std::vector<int> encode(const attn::Vocab& vocab, std::string_view text) {
  return vocab.encode(text);
}

ATTN_REFERENCE std::string decode(const attn::Vocab& vocab, std::span<const int> ids) {
  return vocab.decode(ids);
}

ATTN_REFERENCE attn::Matrix bigram_counts(std::span<const int> tokens, std::size_t V) {
  return attn::bigram_counts(tokens, V);
}

ATTN_REFERENCE double cross_entropy(const attn::Matrix& logits, std::span<const int> targets) {
  return attn::cross_entropy(logits, targets);
}

ATTN_REFERENCE attn::Matrix cross_entropy_grad(const attn::Matrix& logits,
                                               std::span<const int> targets) {
  return attn::cross_entropy_grad(logits, targets);
}

ATTN_REFERENCE int sample_logits(std::span<const float> logits, float temperature, attn::Rng& rng) {
  return attn::sample_logits(logits, temperature, rng);
}

}  // namespace ex01
