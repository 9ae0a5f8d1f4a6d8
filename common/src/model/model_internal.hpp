// model_internal.hpp (private to common/src): the checks lm_generate (model.cpp) and
// lm_generate_cached (kvcache.cpp) share, so both reject the same inputs with the same words, and
// the training step's check of its views of the weights (train.cpp).
#pragma once

#include <span>

#include "attn/model/model.hpp"
#include "attn/model/sample.hpp"

namespace attn::detail {

// The weights must be the ones the config describes (every tensor's shape).
void check_weights(const LmWeights& w, const ModelSpec& config, const char* function);
// A non-empty prompt of ids in [0, V), valid sampling options, matching weights.
void check_generate_inputs(const LmWeights& w, const ModelSpec& config, std::span<const int> prompt,
                           const GenerateOptions& options, const char* function);
SamplingOptions sampling_options(const GenerateOptions& options);
// Whether `views` are still the flat views of w's non-empty tensors, in lm_parameters' order,
// each on its tensor's buffer with its size: what a caller that keeps such views between calls
// (the training step) checks before it writes through them. Allocates nothing.
bool are_views_of(const LmWeights& w, std::span<const std::span<float>> views);

}  // namespace attn::detail
