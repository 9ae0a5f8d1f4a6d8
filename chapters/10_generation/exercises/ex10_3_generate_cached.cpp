// Exercise ex10.3: the generation loop with a KV cache (chapter 10, docs/10-generation.md).
//
// Goal: like attn::lm_generate_cached, the same tokens as attn::lm_generate for the same seed.
//   1. Check like lm_generate: a non-empty prompt (std::invalid_argument otherwise); an empty
//      result for options.max_new_tokens = 0.
//   2. cache = attn::kv_cache_init(config, 1); sampler = attn::TokenSampler(V).
//   3. Prefill with the last min(len, T_max) tokens of the prompt: attn::lm_prefill gives the
//      logits (1, V) that predict the first new token.
//   4. Repeat max_new_tokens times: draw `next` with sampler.next(logits row,
//      {temperature, top_k, top_p, greedy}, rng); keep it; call on_token(next) if set; then,
//      unless it was the last one, get the logits for the token after it:
//        - cache.length < T_max: attn::lm_step(cache, {next}, ...)     one position, cheap
//        - else: the context is longer than T_max and lm_generate crops it to the last T_max
//          tokens, so every token sits one position lower: attn::lm_prefill of those T_max
//          tokens (a re-fill).
// Returns only the new tokens.
//
// Check: build/default/bin/attn-check 10
#include <stdexcept>

#include "attn/model/kvcache.hpp"
#include "attn/model/sample.hpp"
#include "exercises.hpp"

namespace ex10 {

std::vector<int> generate_cached(const attn::LmWeights& w, const attn::LmConfig& config,
                                 std::span<const int> prompt, const attn::GenerateOptions& options,
                                 attn::Rng& rng, const attn::TokenCallback& on_token) {
  // TODO(ex10.3): prefill the cropped prompt, then draw, keep, step (or re-fill once the cache
  // is full) until max_new_tokens tokens are drawn.
  throw std::logic_error("TODO ex10.3: generate with the cache");
}

}  // namespace ex10
