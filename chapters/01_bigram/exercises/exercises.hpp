// chapters/01_bigram/exercises/exercises.hpp: the exercises of chapter 01, the bigram model.
// Each function has the signature of its reference in attn:: (text.hpp, bigram.hpp, loss.hpp,
// sample.hpp). You write the bodies in the ex01_M_*.cpp files beside this header; the chapter
// runs them with `build/default/bin/01_bigram --mine`, and `build/default/bin/attn-check 01`
// tests them.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/io/text.hpp"
#include "attn/core/xt.hpp"

namespace ex01 {

// ex01.1 (ex01_1_encode_decode.cpp), like attn::Vocab::encode / decode.
// encode: text of n characters -> n ids in [0, V).  decode: n ids -> the text.
std::vector<int> encode(const attn::Vocab& vocab, std::string_view text);
std::string decode(const attn::Vocab& vocab, std::span<const int> ids);

// ex01.2 (ex01_2_bigram_counts.cpp), like attn::bigram_counts.
// tokens (N,) -> counts (V, V): counts(a, b) = how often b directly follows a.
attn::Matrix bigram_counts(std::span<const int> tokens, std::size_t V);

// ex01.3 (ex01_3_cross_entropy.cpp), like attn::cross_entropy / cross_entropy_grad.
// logits (N, V), targets (N,) -> the mean loss (a number) and its gradient (N, V).
double cross_entropy(const attn::Matrix& logits, std::span<const int> targets);
attn::Matrix cross_entropy_grad(const attn::Matrix& logits, std::span<const int> targets);

// ex01.4 (ex01_4_sample.cpp), like attn::sample_logits.
// logits (V,) -> one id in [0, V), drawn from softmax(logits / temperature).
int sample_logits(std::span<const float> logits, float temperature, attn::Rng& rng);

}  // namespace ex01
