// attn/term/narrate.hpp: narration that stays true for every seed and flag.
// A chapter's sentence that depends on a number is chosen by that number
// (`if (loss > log_v) ... else ...`), never fixed text that happens to match the default seed.
// Where a sentence states something its numbers could contradict, the chapter also calls
// attn::claim(holds, sentence). Normally that costs nothing; with ATTN_SELF_CHECK=1 in the
// environment (the `narration` tests run every chapter over a grid of seeds and flags this way)
// a false claim stops the program: "claim contradicted by the program's own numbers: ...",
// exit code 1.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
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
// The other heading style, underlined: a blank line, then "3. One step, taken apart" over a line
// of as many dashes (one per byte of the heading). underlined_heading returns that text,
// underlined_section prints it.
std::string underlined_heading(int number, std::string_view title);
void underlined_section(int number, std::string_view title);

// ---- The narration toolkit: the few helpers every chapter's "show" functions use ----
// Text to stdout as it is (no format string, so a '{' in it is safe).
void print(std::string_view text);
// A number the way the pages show it: fixed `precision` decimals (attn::format_number), "-inf",
// "inf", "nan"; negative zero prints as zero.
std::string num(double value, int precision = 4);
// A count with its digits grouped by thousands: 210747 -> "210,747" (negative and non-finite
// values print as by num with 0 decimals).
std::string grouped(double count);
// A count in thousands or millions for tables: 950 -> "950", 12345 -> "12.3k", 2.5e6 -> "2.50M".
std::string thousands(double count);
// max_i |a_i - b_i| in double, over two sequences of the same length (std::invalid_argument
// otherwise). NaN anywhere gives NaN: a difference never hides a NaN.
double max_abs_diff(std::span<const float> a, std::span<const float> b);
// The same for any two containers of floats with data() and size() (xtensor tensors, vectors),
// which must also have the same shape when they have one.
template <class A, class B>
double max_abs_diff(const A& a, const B& b) {
  if constexpr (requires {
                  a.shape();
                  b.shape();
                }) {
    if (!std::equal(a.shape().begin(), a.shape().end(), b.shape().begin(), b.shape().end()))
      throw std::invalid_argument("attn::max_abs_diff: the two tensors have different shapes");
  }
  return max_abs_diff(std::span<const float>(a.data(), a.size()),
                      std::span<const float>(b.data(), b.size()));
}
// A max |difference| for a sentence: "0 (bitwise identical)" when it is exactly 0, else the value
// with 8 decimals (below 1e-5 the page check reads it as float rounding, ~0).
std::string difference_text(double d);
// A difference that may be float rounding, for a page that must print the same on every machine:
// "below 1e-5 (float rounding)" under 1e-5 (whether it is 0 or 1e-7 depends on the machine's
// BLAS kernels), else the value with 6 decimals.
std::string rounding_text(double d);
// One character for a sentence: quoted as attn::printable shows it ('a', '\n'), the space as
// printable's "' '" alone.
std::string char_name(char32_t c);
// A table cell: `text` padded with spaces to `width` columns, right- or left-aligned (never cut:
// a longer text comes back whole).
std::string align_right(std::string_view text, std::size_t width);
std::string align_left(std::string_view text, std::size_t width);

}  // namespace attn
