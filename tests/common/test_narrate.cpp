// Tests for attn/narrate.hpp: claims that stop the program in self-check mode, and numbers for
// sentences that keep their significant digits.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "attn/io/narrate.hpp"

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
