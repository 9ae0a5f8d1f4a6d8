// Wrong: a prompt longer than T_max is cut to its first T_max tokens instead of its last.
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
  if (prompt.empty()) throw std::invalid_argument("generate_cached: empty prompt");
  std::vector<int> out;
  if (options.max_new_tokens == 0) return out;
  const std::size_t V = config.vocab_size, T_max = config.block_size;
  std::vector<int> context(prompt.begin(), prompt.end());
  attn::TokenSampler sampler(V);
  const attn::SamplingOptions s{options.temperature, options.top_k, options.top_p, options.greedy};
  const std::size_t T = std::min(prompt.size(), T_max);
  const attn::Matrix* logits = &attn::lm_prefill(cache, prompt.first(T), w, config);
  for (std::size_t i = 0; i < options.max_new_tokens; ++i) {
    const int next = sampler.next(std::span<const float>(logits->data(), V), s, rng);
    out.push_back(next);
    context.push_back(next);
    if (on_token) on_token(next);
    if (i + 1 == options.max_new_tokens) break;
    if (cache.length < T_max) {
      logits = &attn::lm_step(cache, std::span<const int>(&next, 1), w, config);
    } else {
      const std::size_t n = std::min(context.size(), T_max);
      logits = &attn::lm_prefill(cache, std::span<const int>(context).last(n), w, config);
    }
  }
  return out;
}

}  // namespace ex10
