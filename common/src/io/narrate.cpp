// Narration that stays true: claim() and its self-check mode (see attn/narrate.hpp).
#include "attn/io/narrate.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace attn {

namespace {
int g_claims = 0;

void report_claims() { std::fprintf(stderr, "self-check: %d claims held\n", g_claims); }
}  // namespace

bool self_check() {
  const char* v = std::getenv("ATTN_SELF_CHECK");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

bool claim(bool holds, std::string_view sentence) {
  if (!self_check()) return holds;
  if (!holds) {
    throw ClaimFailed(
        fmt::format("claim contradicted by the program's own numbers: \"{}\"", sentence));
  }
  if (g_claims++ == 0) std::atexit(report_claims);
  return holds;
}

int claims_checked() { return g_claims; }

std::string format_significant(double value, int digits) {
  if (!std::isfinite(value)) return value != value ? "nan" : (value > 0 ? "inf" : "-inf");
  if (value == 0.0) return fmt::format("{:.{}f}", 0.0, digits - 1);
  const int magnitude = static_cast<int>(std::floor(std::log10(std::abs(value))));
  const int decimals = std::max(2, digits - 1 - magnitude);
  std::string text = fmt::format("{:.{}f}", value, decimals);
  // Zeros after the significant digits say nothing: 0.00100 -> 0.001, but keep two decimals.
  while (text.size() > 1 && text.back() == '0' && text.size() - text.find('.') > 3) text.pop_back();
  return text;
}

void section(int number, std::string_view title) {
  fmt::print("\n== {}. {} ==\n", number, title);
}

}  // namespace attn
