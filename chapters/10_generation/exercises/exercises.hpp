// chapters/10_generation/exercises/exercises.hpp: the exercises of chapter 10, generating fast
// with a KV cache. Each function mirrors a piece of attn/model/kvcache.hpp and is written in its
// own file beside this one. Check them with `build/default/bin/attn-check 10`.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "attn/model/kvcache.hpp"
#include "attn/model/model.hpp"
#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"

namespace ex10 {

// ex10.1, ex10_1_kv_append.cpp: write one new key (or value) per sequence into a layer's cache,
// like attn::kv_append: cache[b, h, pos, :] = rows[b, h*hs : (h+1)*hs]. Throws
// std::invalid_argument for pos >= T_max or rows that are not (B, H*hs).
void kv_append(attn::Tensor<4>& cache, const attn::Matrix& rows,
               std::size_t pos);  // (B, H, T_max, hs), (B, C)

// ex10.2, ex10_2_attend_cache.cpp: one query per sequence attending over the first n cached
// keys and values, like attn::attend_cache. Per head h: softmax(q_h . k_j / sqrt(hs)) over
// j < n, then the weighted sum of the v_j. Throws std::invalid_argument for n = 0, n > T_max or
// mismatched shapes.
attn::Matrix attend_cache(const attn::Matrix& q, const attn::Tensor<4>& keys,
                          const attn::Tensor<4>& values,
                          std::size_t n);  // (B, C), (B, H, T_max, hs) x 2 -> (B, C)

// ex10.3, ex10_3_generate_cached.cpp: the generation loop with the cache, like
// attn::lm_generate_cached: prefill the (cropped) prompt, then draw a token and step, re-filling
// from the cropped context once the cache is full. The same tokens as attn::lm_generate. The
// loop runs through `cache` (an empty kv_cache_init(config, 1), handed in), whose `work` counts
// what it did.
std::vector<int> generate_cached(attn::KvCache& cache, const attn::LmWeights& w,
                                 const attn::ModelSpec& config, std::span<const int> prompt,
                                 const attn::GenerateOptions& options, attn::Rng& rng,
                                 const attn::TokenCallback& on_token);

// ex10.4, ex10_4_top_p_filter.cpp: top-p (nucleus) sampling's cut, like attn::top_p_filter:
// probs (V,) -> (V,), the fewest most likely ids whose probabilities reach top_p, renormalised,
// 0 elsewhere. Throws std::invalid_argument for empty probs or top_p outside (0, 1].
std::vector<float> top_p_filter(std::span<const float> probs, float top_p);

}  // namespace ex10
