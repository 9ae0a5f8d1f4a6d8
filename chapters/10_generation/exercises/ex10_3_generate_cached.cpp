// Exercise ex10.3: the generation loop with a KV cache (chapter 10, docs/10-generation.md).
//
// Goal: like attn::lm_generate_cached: exactly the tokens of attn::lm_generate for the same
// seed and options, at the cost of a cache.
//   in:  cache, an empty KV cache for one sequence (attn::kv_cache_init(config, 1)): generate
//        through it, not a cache of your own; the model (w, config), a prompt of token ids (any
//        length >= 1), options (max_new_tokens, temperature, top_k, top_p, greedy), rng,
//        on_token (may be empty)
//   out: the max_new_tokens new tokens only; on_token(t) called for each, in order, as drawn.
// Tools: attn::lm_prefill, attn::lm_step (attn/model/kvcache.hpp) and
// attn::TokenSampler (attn/model/sample.hpp), which draws exactly as lm_generate does.
// The contract:
//   - throw std::invalid_argument for an empty prompt; return {} for max_new_tokens = 0;
//   - the cache is used: while it has room, one new position per new token (the tests read
//     cache.work, the prefills, steps and positions that cache computed, and so does
//     10_generation --mine);
//   - lm_generate sees only the last T_max tokens of the context: a longer prompt, and every
//     token once the context outgrows T_max, must give the logits of that cropped window (why
//     the cache cannot simply step on then: docs/10-generation.md, section 6).
//
// Check: build/default/bin/attn-check 10
#include <stdexcept>

#include "attn/model/kvcache.hpp"
#include "attn/model/sample.hpp"
#include "exercises.hpp"

namespace ex10 {

std::vector<int> generate_cached(attn::KvCache& cache, const attn::LmWeights& w,
                                 const attn::ModelSpec& config, std::span<const int> prompt,
                                 const attn::GenerateOptions& options, attn::Rng& rng,
                                 const attn::TokenCallback& on_token) {
  // TODO(ex10.3): return max_new_tokens tokens, lm_generate's, computing one position per token
  // while the cache has room.
  throw std::logic_error("TODO ex10.3: generate with the cache");
}

}  // namespace ex10
