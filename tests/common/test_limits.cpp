// Tests for attn/core/limits.hpp: checked size arithmetic, the one helper every allocation sized
// from user numbers goes through (issue 7, label robust).
#include <doctest/doctest.h>

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "attn/ops/averaging.hpp"
#include "attn/core/limits.hpp"
#include "attn/ops/mask.hpp"
#include "attn/ops/posenc.hpp"
#include "attn/core/random.hpp"
#include "attn/io/text.hpp"
#include "attn/io/data.hpp"

namespace {

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

std::string size_error(auto&& f) {
  try {
    f();
  } catch (const attn::SizeError& e) {
    return e.what();
  }
  return "(no SizeError)";
}

}  // namespace

TEST_SUITE("limits") {
TEST_CASE("checked_mul returns the product when it fits and names the product when not") {
  CHECK(attn::checked_mul(3, 4, "x") == 12);
  CHECK(attn::checked_mul(0, kMax, "x") == 0);
  CHECK(attn::checked_mul(std::size_t{1} << 32, (std::size_t{1} << 32) - 1, "x") ==
        (std::size_t{1} << 32) * ((std::size_t{1} << 32) - 1));
  // The product that crashed 01_bigram: B * T = 2^61 * 8 wraps around to 0.
  CHECK(size_error([] { attn::checked_mul(std::size_t{1} << 61, 8, "B * T"); }) ==
        "B * T: 2305843009213693952 x 8 overflows a 64-bit size");
  CHECK(size_error([] { attn::checked_mul(kMax, 2, "y"); }).find("overflows") != std::string::npos);
}

TEST_CASE("checked_elements counts elements and rejects shapes above the limit") {
  CHECK(attn::checked_elements({2, 3, 4}, "t") == 24);
  CHECK(attn::checked_elements({}, "scalar") == 1);
  CHECK(attn::checked_elements({0, 5}, "empty") == 0);
  CHECK(attn::checked_elements({attn::limits::kMaxElements}, "t") == attn::limits::kMaxElements);
  CHECK(size_error([] { attn::checked_elements({attn::limits::kMaxElements + 1}, "t"); }) ==
        "t: shape (268435457,) is too large (268435457 elements; the limit is 268435456 "
        "elements, 1 GiB of float32)");
  CHECK(attn::checked_elements({10, 10}, "t", 100) == 100);
  CHECK_THROWS_AS(attn::checked_elements({10, 11}, "t", 100), attn::SizeError);
}

TEST_CASE("a shape whose product overflows is rejected, even with a zero dimension") {
  // (0, 2^32, 2^32) holds no element, but its strides (2^64) do not fit in a size_t.
  const std::vector<std::size_t> shape = {0, std::size_t{1} << 32, std::size_t{1} << 32};
  const std::string message = size_error([&] { attn::checked_elements(shape, "a.npy"); });
  CHECK(message ==
        "a.npy: shape (0, 4294967296, 4294967296) is too large (more than 2^64 "
        "elements; the limit is 268435456 elements, 1 GiB of float32)");
  CHECK_THROWS_AS(attn::checked_elements({kMax, kMax}, "t", kMax), attn::SizeError);
  CHECK_THROWS_AS(attn::checked_elements({0, kMax, 2}, "t", kMax), attn::SizeError);
}

TEST_CASE("a SizeError is a std::length_error, so Cli::run reports it as a runtime error") {
  CHECK_THROWS_AS(attn::checked_mul(kMax, kMax, "x"), std::length_error);
}

TEST_CASE("the library's allocators sized from user numbers refuse overflowing sizes") {
  // Each of these once wrapped around size_t and allocated a tiny buffer (issue 7).
  constexpr std::size_t big = std::size_t{1} << 33;  // big * big = 2^66
  attn::Rng rng(1);
  CHECK_THROWS_AS(attn::randn(rng, big, big), attn::SizeError);
  CHECK_THROWS_AS(attn::rand_uniform(rng, big, big, 0.0f, 1.0f), attn::SizeError);
  CHECK_THROWS_AS(attn::causal_mask(big), attn::SizeError);
  CHECK_THROWS_AS(attn::causal_mask_additive(big), attn::SizeError);
  CHECK_THROWS_AS(attn::averaging_weights_tril(big), attn::SizeError);
  CHECK_THROWS_AS(attn::sinusoidal_positions(big, big), attn::SizeError);
  const std::vector<int> data(100, 0);
  // B * T = 2^61 * 8 = 2^64 wraps to 0: the batch that crashed 01_bigram.
  CHECK_THROWS_AS(attn::get_batch(data, std::size_t{1} << 61, 8, rng), attn::SizeError);
  // T = SIZE_MAX: "n < T + 1" wrapped around; now the data is simply too short.
  CHECK_THROWS_AS(attn::get_batch(data, 1, kMax, rng), std::invalid_argument);
}

TEST_CASE("bytes_text names byte counts in the largest whole unit") {
  CHECK(attn::bytes_text(512) == "512 bytes");
  CHECK(attn::bytes_text(64 * attn::limits::kMiB) == "64 MiB");
  CHECK(attn::bytes_text(std::uint64_t{1} << 30) == "1 GiB");
  CHECK(attn::bytes_text(1536) == "1.5 KiB");
}
}
