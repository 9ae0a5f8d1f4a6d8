// Narration that stays true: claim() and its self-check mode (see attn/term/narrate.hpp).
#include "attn/term/narrate.hpp"

#include "attn/io/text.hpp"
#include "attn/term/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <system_error>

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

void section(int number, std::string_view title) { fmt::print("\n== {}. {} ==\n", number, title); }

std::string underlined_heading(int number, std::string_view title) {
  const std::string line = fmt::format("{}. {}", number, title);
  return fmt::format("\n{}\n{}\n", line, std::string(line.size(), '-'));
}

void underlined_section(int number, std::string_view title) {
  print(underlined_heading(number, title));
}

void print(std::string_view text) {
  // A short write (a full disk, a file limit) throws as fmt::print does, so the run stops at
  // the line that failed and Cli::run names the output and the reason.
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
    throw std::system_error(errno, std::generic_category(), "cannot write to file");
  }
}

std::string num(double value, int precision) {
  return format_number(static_cast<float>(value), precision);
}

std::string grouped(double count) {
  if (!std::isfinite(count) || count < 0.0) return num(count, 0);
  const std::string digits = fmt::format("{:.0f}", count);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string thousands(double count) {
  if (count >= 1e6) return fmt::format("{:.2f}M", count / 1e6);
  if (count >= 1e3) return fmt::format("{:.1f}k", count / 1e3);
  return fmt::format("{:.0f}", count);
}

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size())
    throw std::invalid_argument(fmt::format(
        "attn::max_abs_diff: {} values against {}, expected the same number", a.size(), b.size()));
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    if (d != d) return std::numeric_limits<double>::quiet_NaN();
    worst = std::max(worst, d);
  }
  return worst;
}

std::string difference_text(double d) { return d == 0.0 ? "0 (bitwise identical)" : num(d, 8); }

std::string rounding_text(double d) {
  return d < 1e-5 ? "below 1e-5 (float rounding)" : fmt::format("{:.6f}", d);
}

std::string char_name(char32_t c) { return c == U' ' ? printable(c) : "'" + printable(c) + "'"; }

std::string align_right(std::string_view text, std::size_t width) {
  return fmt::format("{:>{}}", text, width);
}

std::string align_left(std::string_view text, std::size_t width) {
  return fmt::format("{:<{}}", text, width);
}

}  // namespace attn
