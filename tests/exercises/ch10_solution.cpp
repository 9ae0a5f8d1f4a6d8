// tests/exercises/ch10_solution.cpp: chapter 10's exercises answered by the reference library.
// Linked in place of the learner's stubs (ctest solution.ch10) to prove that every test in
// ch10_test.cpp passes against attn::.
#include "attn/model/kvcache.hpp"
#include "attn/model/sample.hpp"
#include "exercises.hpp"
#include "reference.hpp"

namespace ex10 {

ATTN_REFERENCE void kv_append(attn::Tensor<4>& cache, const attn::Matrix& rows, std::size_t pos) {
  attn::kv_append(cache, rows, pos);
}

ATTN_REFERENCE attn::Matrix attend_cache(const attn::Matrix& q, const attn::Tensor<4>& keys,
                                         const attn::Tensor<4>& values, std::size_t n) {
  return attn::attend_cache(q, keys, values, n);
}

ATTN_REFERENCE std::vector<int> generate_cached(attn::KvCache& cache, const attn::LmWeights& w,
                                                const attn::ModelSpec& config,
                                                std::span<const int> prompt,
                                                const attn::GenerateOptions& options,
                                                attn::Rng& rng,
                                                const attn::TokenCallback& on_token) {
  return attn::lm_generate_cached(cache, w, config, prompt, options, rng, on_token);
}

ATTN_REFERENCE std::vector<float> top_p_filter(std::span<const float> probs, float top_p) {
  return attn::top_p_filter(probs, top_p);
}

}  // namespace ex10
