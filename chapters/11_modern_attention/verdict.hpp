// chapters/11_modern_attention/verdict.hpp: the one rule by which section 6 (table.cpp) judges
// every row against the base row. Seeds pair the runs: the same seed gives both rows the same
// batches and the same validation batches, so a row is compared with the base seed by seed.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace ch11 {

// The fewest seeds the rule judges with; below it a row gets its gap and no verdict.
inline constexpr std::size_t kVerdictSeeds = 5;

enum class Effect { helps, hurts, within, too_few_seeds };

struct Verdict {
  Effect effect = Effect::too_few_seeds;
  double gap = 0.0;     // mean over the seeds of row - base (best val; below 0: a lower loss)
  double spread = 0.0;  // the base row's own max - min over the same seeds
  std::size_t seeds = 0, lower = 0, higher = 0;  // seeds where the row is below / above the base
};

// The rule: with at least kVerdictSeeds seeds, a row helps when its best val is below the base
// row's in every seed (seed s against seed s) and its mean is below the base row's by more than
// the base row's own spread over those seeds; it hurts when the same holds the other way; else it
// is within the seeds' spread. `row` and `base` hold one best val per seed, in the same seed order.
// Throws std::invalid_argument when their sizes differ or are 0.
Verdict judge(std::span<const double> row, std::span<const double> base);

// "helps (-0.1776: lower in 5 of 5 seeds, by more than the base's spread 0.0348)" and the like;
// `base` names the row judged against ("the base", or "llama" for the window row).
std::string verdict_text(const Verdict& v, std::string_view base = "the base");

}  // namespace ch11
