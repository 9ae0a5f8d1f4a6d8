// attn/model/sample.hpp: turning logits into a token (chapters 01 and 07).
// Temperature divides the logits before the softmax: below 1 sharpens the distribution (1e-3 is
// nearly argmax), above 1 flattens it toward uniform. A temperature so small that logits /
// temperature overflows float (1e-38) gives the exact limit: argmax, ties shared equally.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"

namespace attn {

// softmax(logits / temperature). Throws std::invalid_argument if temperature is not > 0 (or is
// NaN/inf) or logits is empty.
Vector probs_with_temperature(std::span<const float> logits, float temperature);

// One token id drawn from softmax(logits / temperature).
int sample_logits(std::span<const float> logits, float temperature, Rng& rng);

}  // namespace attn

namespace attn {

// Top-k sampling: keep the k largest logits (ties broken by lower index), renormalise
// softmax(logits / temperature) over them, draw one. Throws std::invalid_argument if
// top_k == 0 or top_k > V ("attn::sample_top_k: top_k must be in [1, 65], got 0"), or for a
// bad temperature.
int sample_top_k(std::span<const float> logits, float temperature, std::size_t top_k, Rng& rng);

}  // namespace attn

// The draw of attn::lm_generate and attn::lm_generate_cached (chapters 07 and 10), with its
// buffers allocated once for a vocabulary of V ids, so that drawing a token allocates nothing.
//   greedy:  the argmax of the logits (lowest id on ties); no random number is drawn.
//   else:    softmax(logits / temperature), restricted to the top_k most likely ids (0 = all;
//            the same draws as sample_logits and sample_top_k from the same generator), then to
//            the nucleus when top_p < 1: the fewest most likely ids whose probabilities add up
//            to at least top_p (ties: lower id first), renormalised; one draw from rng.
// Throws std::invalid_argument for logits of the wrong length, temperature not > 0, top_k > V or
// top_p outside (0, 1].
namespace attn {

struct SamplingOptions {
  float temperature = 1.0f;  // > 0
  std::size_t top_k = 0;     // 0: all V ids; else the k most likely (1..V)
  float top_p = 1.0f;        // in (0, 1]; 1: no nucleus cut
  bool greedy = false;       // argmax instead of a draw (temperature, top_k, top_p unused)
};

// The nucleus of one distribution, written out (chapter 10's exercise ex10.4; TokenSampler::next
// makes the same cut in its own buffers): probs (V,), non-negative and summing to 1; rank the ids
// by probability (ties: lower id first), keep the fewest at the head of the ranking whose
// probabilities add up to at least top_p, zero the others, and renormalise the kept ones to sum
// to 1. Returns (V,). Throws std::invalid_argument for empty probs or top_p outside (0, 1].
std::vector<float> top_p_filter(std::span<const float> probs, float top_p);

// The nucleus cut every TokenSampler makes: nullptr (the default) is the cut written out in
// TokenSampler::next; a function given here decides instead which ids stay (those it leaves above
// 0; the draw renormalises). Chapter 10's --mine puts the learner's ex10.4 here, so that the
// learner's cut drives the generation. Returns the previous filter.
using TopPFilter = std::vector<float> (*)(std::span<const float> probs, float top_p);
TopPFilter set_top_p_filter(TopPFilter filter);

// "attn::lm_generate: top_p must be in (0, 1], got 0" etc., for a vocabulary of V ids.
void check_sampling_options(const SamplingOptions& options, std::size_t V, const char* function);

class TokenSampler {
 public:
  explicit TokenSampler(std::size_t vocab_size);
  int next(std::span<const float> logits, const SamplingOptions& options, Rng& rng);
  // The probabilities of the last draw (V,): 0 outside the top-k and the nucleus. Empty after a
  // greedy pick.
  std::span<const float> last_probs() const { return {probs_.data(), last_probs_size_}; }

 private:
  std::vector<float> probs_;        // (V,)
  std::vector<std::size_t> order_;  // (V,) ids ranked by logit, then by probability
  std::size_t last_probs_size_ = 0;
};

}  // namespace attn
