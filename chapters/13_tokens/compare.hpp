// chapters/13_tokens/compare.hpp: --compare, chapter 09's model trained on characters and on BPE
// tokens with the same steps and the same tokens per step, compared in bits per character.
#pragma once

#include <cstddef>

#include "attn/term/cli.hpp"

namespace ch13 {

// Bounds of --steps (stated in --help): two runs of a small model, a few ms a step each.
inline constexpr std::size_t kMaxCompareSteps = 20000;

void run_compare(const attn::CommonOptions& common, std::size_t vocab_size, std::size_t steps);

}  // namespace ch13
