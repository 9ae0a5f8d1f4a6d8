// attn/narrate.hpp: narration that stays true for every seed and flag.
// A chapter's sentence that depends on a number is chosen by that number
// (`if (loss > log_v) ... else ...`), never fixed text that happens to match the default seed.
// Where a sentence states something its numbers could contradict, the chapter also calls
// attn::claim(holds, sentence). Normally that costs nothing; with ATTN_SELF_CHECK=1 in the
// environment (the `narration` tests run every chapter over a grid of seeds and flags this way)
// a false claim stops the program: "claim contradicted by the program's own numbers: ...",
// exit code 1.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace attn {

// Thrown by claim() in self-check mode. Cli::run reports it like any runtime error (exit 1).
class ClaimFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// True when ATTN_SELF_CHECK is set and is neither empty nor "0".
bool self_check();

// Records a claim of the narration. In self-check mode a false one throws ClaimFailed naming
// `sentence`, and the first claim registers an exit report on stderr,
// "self-check: N claims held", so a test can see that the claims were really checked.
// Returns `holds`, so it can sit in a condition.
bool claim(bool holds, std::string_view sentence);

// The number of claims checked so far (all held, or the program would have stopped).
int claims_checked();

// A value for a sentence with at least two decimals and at least `digits` significant digits,
// however small it is: 1 -> "1.00", 0.5 -> "0.50", 0.001 -> "0.001", 0.0012345 -> "0.00123".
// Used where a fixed "%.2f" would print a temperature of 0.001 as 0.00.
std::string format_significant(double value, int digits = 3);

// A section heading of a walkthrough: a blank line, then "== 3. One step, taken apart ==".
void section(int number, std::string_view title);

}  // namespace attn
