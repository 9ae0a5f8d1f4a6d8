// attn/sample.hpp: turning logits into a token (chapters 01 and 07).
// Temperature divides the logits before the softmax: below 1 sharpens the distribution (1e-3 is
// nearly argmax), above 1 flattens it toward uniform. A temperature so small that logits /
// temperature overflows float (1e-38) gives the exact limit: argmax, ties shared equally.
#pragma once

#include <span>

#include "attn/random.hpp"
#include "attn/xt.hpp"

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
