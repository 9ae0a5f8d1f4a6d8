// Tests for attn/term/narrate.hpp: claims that stop the program in self-check mode, and numbers for
// sentences that keep their significant digits.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>
#include <string>

#include "attn/core/xt.hpp"
#include "attn/term/narrate.hpp"

TEST_SUITE("common.narrate") {
TEST_CASE("a false claim is silent normally and stops a self-check run") {
  ::unsetenv("ATTN_SELF_CHECK");
  CHECK_FALSE(attn::self_check());
  CHECK_FALSE(attn::claim(false, "the loss is above log V"));  // normal run: no throw
  ::setenv("ATTN_SELF_CHECK", "0", 1);
  CHECK_FALSE(attn::self_check());
  ::setenv("ATTN_SELF_CHECK", "1", 1);
  CHECK(attn::self_check());
  const int before = attn::claims_checked();
  CHECK(attn::claim(true, "holds"));
  CHECK(attn::claims_checked() == before + 1);
  try {
    attn::claim(false, "the loss is above log V");
    FAIL("a false claim must throw in self-check mode");
  } catch (const attn::ClaimFailed& e) {
    CHECK(std::string(e.what()) ==
          "claim contradicted by the program's own numbers: \"the loss is above log V\"");
  }
  ::unsetenv("ATTN_SELF_CHECK");
}

TEST_CASE("format_significant keeps small values readable") {
  CHECK(attn::format_significant(1.0) == "1.00");
  CHECK(attn::format_significant(0.5) == "0.50");
  CHECK(attn::format_significant(0.001) == "0.001");
  CHECK(attn::format_significant(0.0012345) == "0.00123");
  CHECK(attn::format_significant(1.5) == "1.50");
  CHECK(attn::format_significant(1234.5) == "1234.50");
  CHECK(attn::format_significant(0.0) == "0.00");
}
}

TEST_SUITE("common.narrate.toolkit") {

TEST_CASE("num, grouped and thousands print numbers the way the pages show them") {
  CHECK(attn::num(0.5) == "0.5000");
  CHECK(attn::num(-0.0, 2) == "0.00");
  CHECK(attn::grouped(210747) == "210,747");
  CHECK(attn::grouped(999) == "999");
  CHECK(attn::grouped(1000) == "1,000");
  CHECK(attn::grouped(0) == "0");
  CHECK(attn::thousands(950) == "950");
  CHECK(attn::thousands(12345) == "12.3k");
  CHECK(attn::thousands(2.5e6) == "2.50M");
}

TEST_CASE(
    "max_abs_diff finds the largest difference, never hides a NaN, and refuses lengths that "
    "differ") {
  const std::vector<float> a{1.0f, 2.0f, 3.0f}, b{1.0f, 2.5f, 2.0f};
  CHECK(attn::max_abs_diff(a, b) == 1.0);
  std::vector<float> c = a;
  c[0] = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(attn::max_abs_diff(c, a)));
  CHECK_THROWS_AS(attn::max_abs_diff(a, std::vector<float>{1.0f}), std::invalid_argument);
  const attn::Matrix m = xt::zeros<float>({2, 3}), n = xt::zeros<float>({3, 2});
  CHECK_THROWS_AS(attn::max_abs_diff(m, n), std::invalid_argument);
  CHECK(attn::difference_text(0.0) == "0 (bitwise identical)");
  CHECK(attn::difference_text(0.25) == "0.25000000");
}

TEST_CASE("underlined_heading underlines the numbered title with as many dashes") {
  CHECK(attn::underlined_heading(1, "Why average") == "\n1. Why average\n--------------\n");
  CHECK(attn::underlined_heading(12, "") == "\n12. \n----\n");
}

TEST_CASE("align_right and align_left pad a table cell to its width and never cut it") {
  CHECK(attn::align_right("ab", 5) == "   ab");
  CHECK(attn::align_left("ab", 5) == "ab   ");
  CHECK(attn::align_right("abcdef", 3) == "abcdef");
  CHECK(attn::align_left("abcdef", 3) == "abcdef");
  CHECK(attn::align_right("", 2) == "  ");
}

TEST_CASE("rounding_text hides float rounding; char_name quotes a character for a sentence") {
  CHECK(attn::rounding_text(0.0) == "below 1e-5 (float rounding)");
  CHECK(attn::rounding_text(9.9e-6) == "below 1e-5 (float rounding)");
  CHECK(attn::rounding_text(1e-5) == "0.000010");
  CHECK(attn::rounding_text(0.25) == "0.250000");
  CHECK(attn::char_name(U'a') == "'a'");
  CHECK(attn::char_name(U'\n') == "'\\n'");
  CHECK(attn::char_name(U' ') == "' '");
  CHECK(attn::char_name(U'\u00e9') == "'\u00e9'");
}

}  // TEST_SUITE
