// Tests for chapters/11_modern_attention/verdict.hpp: the one rule by which chapter 11's table
// judges a row against the base row, seed by seed. Each case is a set of best val losses on which
// a simpler rule (the ranges apart, the mean alone, the values without their seeds) gives another
// verdict than the rule the page states.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "verdict.hpp"  // chapters/11_modern_attention/, compiled into this test

namespace {

using ch11::Effect;
using ch11::judge;

const std::vector<double> kBase{2.00, 2.01, 2.02, 2.03, 2.04};  // spread 0.04, mean 2.02

}  // namespace

TEST_SUITE("ch11.table_verdict") {
TEST_CASE("lower in every seed by more than the base's spread helps; higher hurts") {
  const std::vector<double> lower{1.90, 1.91, 1.92, 1.93, 1.94},
      higher{2.10, 2.11, 2.12, 2.13, 2.14};
  const ch11::Verdict h = judge(lower, kBase);
  CHECK(h.effect == Effect::helps);
  CHECK(h.gap == doctest::Approx(-0.10));
  CHECK(h.spread == doctest::Approx(0.04));
  CHECK(h.lower == 5);
  CHECK(h.higher == 0);
  CHECK(judge(higher, kBase).effect == Effect::hurts);
  CHECK(ch11::verdict_text(h).rfind("helps (-0.1000: lower in 5 of 5 seeds", 0) == 0);
}

TEST_CASE("a mean beyond the spread that one seed makes is within (the mean alone would help)") {
  // Four seeds equal to the base, one far below: the mean is 0.06 lower, more than the spread.
  const std::vector<double> row{2.00, 2.01, 2.02, 2.03, 1.74};
  const ch11::Verdict v = judge(row, kBase);
  CHECK(v.gap == doctest::Approx(-0.06));
  CHECK(-v.gap > v.spread);
  CHECK(v.lower == 1);
  CHECK(v.effect == Effect::within);
}

TEST_CASE("ranges apart but a gain smaller than the base's spread is within") {
  // Every value below the base's best (the old rule, ranges that do not overlap, said "helps"),
  // every seed lower, but by 0.074 on average against a base that moves 0.10 between seeds.
  const std::vector<double> base{2.30, 2.32, 2.34, 2.36, 2.40}, row{2.25, 2.26, 2.27, 2.28, 2.29};
  const ch11::Verdict v = judge(row, base);
  CHECK(v.lower == 5);
  CHECK(v.gap == doctest::Approx(-0.074));
  CHECK(v.spread == doctest::Approx(0.10));
  CHECK(v.effect == Effect::within);
}

TEST_CASE("the seeds pair the runs: the same values in another seed order judge otherwise") {
  const std::vector<double> paired{1.90, 1.91, 1.92, 1.93, 2.035};
  const std::vector<double> reordered{2.035, 1.90, 1.91, 1.92, 1.93};  // seed 1 above its base
  CHECK(judge(paired, kBase).effect == Effect::helps);
  const ch11::Verdict v = judge(reordered, kBase);
  CHECK(v.lower == 4);
  CHECK(v.higher == 1);
  CHECK(v.effect == Effect::within);
}

TEST_CASE("a seed equal to the base is not lower; the same numbers are within") {
  CHECK(judge(kBase, kBase).effect == Effect::within);
  CHECK(judge(kBase, kBase).lower == 0);
  const std::vector<double> tie{1.90, 1.91, 1.92, 1.93, 2.04};  // the last seed ties
  CHECK(judge(tie, kBase).effect == Effect::within);
}

TEST_CASE("fewer than five seeds get a gap and no verdict") {
  const std::vector<double> base{2.0, 2.1, 2.2, 2.3}, row{1.0, 1.1, 1.2, 1.3};
  const ch11::Verdict v = judge(row, base);
  CHECK(v.effect == Effect::too_few_seeds);
  CHECK(v.gap == doctest::Approx(-1.0));
  CHECK(ch11::verdict_text(v) == "-1.0000 (lower in 4 of 4 seeds: too few to judge by)");
  const std::vector<double> one{2.0};
  CHECK(judge(one, one).effect == Effect::too_few_seeds);
}

TEST_CASE("one best val per seed in both rows, or an error naming the sizes") {
  const std::vector<double> four{1, 2, 3, 4}, none;
  CHECK_THROWS_WITH_AS(judge(four, kBase), "judge: one best val per seed in both rows, got 4 and 5",
                       std::invalid_argument);
  CHECK_THROWS_AS(judge(none, none), std::invalid_argument);
}
}
