// Wrong: ignores the cache it is handed and makes a fresh one per token, prefilled with the whole
// (cropped) context: the same tokens, the handed cache idle.
#include <algorithm>
#include <stdexcept>

#include "attn/model/kvcache.hpp"
#include "attn/model/sample.hpp"
#include "exercises.hpp"

namespace ex10 {

std::vector<int> generate_cached(attn::KvCache& cache, const attn::LmWeights& w,
                                 const attn::ModelSpec& config, std::span<const int> prompt,
                                 const attn::GenerateOptions& options, attn::Rng& rng,
                                 const attn::TokenCallback& on_token) {
  (void)cache;
  if (prompt.empty()) throw std::invalid_argument("generate_cached: empty prompt");
  const std::size_t T_max = config.block_size;
  std::vector<int> context(prompt.begin(), prompt.end()), out;
  attn::TokenSampler sampler(config.vocab_size);
  const attn::SamplingOptions sampling{options.temperature, options.top_k, options.top_p,
                                       options.greedy};
  for (std::size_t i = 0; i < options.max_new_tokens; ++i) {
    attn::KvCache fresh = attn::kv_cache_init(config, 1);
    const std::span<const int> window =
        std::span<const int>(context).last(std::min(context.size(), T_max));
    const attn::Matrix& logits = attn::lm_prefill(fresh, window, w, config);
    const int next =
        sampler.next(std::span<const float>(logits.data(), config.vocab_size), sampling, rng);
    context.push_back(next);
    out.push_back(next);
    if (on_token) on_token(next);
  }
  return out;
}

}  // namespace ex10
