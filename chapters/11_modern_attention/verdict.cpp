// chapters/11_modern_attention/verdict.cpp: section 6's rule (verdict.hpp), a row against the
// base row seed by seed.
#include "verdict.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

namespace ch11 {

Verdict judge(std::span<const double> row, std::span<const double> base) {
  if (row.empty() || row.size() != base.size()) {
    throw std::invalid_argument(fmt::format(
        "judge: one best val per seed in both rows, got {} and {}", row.size(), base.size()));
  }
  Verdict v;
  v.seeds = row.size();
  const auto [lo, hi] = std::minmax_element(base.begin(), base.end());
  v.spread = *hi - *lo;
  for (std::size_t s = 0; s < v.seeds; ++s) {
    const double d = row[s] - base[s];  // seed s against seed s
    v.gap += d / static_cast<double>(v.seeds);
    if (d < 0.0) ++v.lower;
    if (d > 0.0) ++v.higher;
  }
  if (v.seeds < kVerdictSeeds) {
    v.effect = Effect::too_few_seeds;
  } else if (v.lower == v.seeds && -v.gap > v.spread) {
    v.effect = Effect::helps;
  } else if (v.higher == v.seeds && v.gap > v.spread) {
    v.effect = Effect::hurts;
  } else {
    v.effect = Effect::within;
  }
  return v;
}

std::string verdict_text(const Verdict& v, std::string_view base) {
  const std::string seeds =
      fmt::format("lower in {} of {} seed{}", v.lower, v.seeds, v.seeds == 1 ? "" : "s");
  switch (v.effect) {
    case Effect::helps:
      return fmt::format("helps ({:+.4f}: {}, by more than {}'s spread {:.4f})", v.gap, seeds, base,
                         v.spread);
    case Effect::hurts:
      return fmt::format(
          "hurts ({:+.4f}: higher in {} of {} seeds, by more than {}'s spread {:.4f})", v.gap,
          v.higher, v.seeds, base, v.spread);
    case Effect::within:
      return fmt::format("within the seeds' spread ({:+.4f}: {}; {}'s spread {:.4f})", v.gap, seeds,
                         base, v.spread);
    case Effect::too_few_seeds:
      break;
  }
  return fmt::format("{:+.4f} ({}: too few to judge by)", v.gap, seeds);
}

}  // namespace ch11
