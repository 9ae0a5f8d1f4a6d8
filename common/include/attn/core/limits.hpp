// attn/core/limits.hpp: the input contract in numbers, and checked size arithmetic.
// Every size a learner can type, every file the course reads and every buffer whose size is a
// product of such numbers has an upper bound stated here once (CONTRIBUTING.md, "The input
// contract", has the table). A product of sizes is never computed with a bare `*`: a size_t
// wraps around silently (2^61 * 8 = 0), and a 0-byte buffer then gets written past its end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace attn {

namespace limits {

inline constexpr std::size_t kMiB = std::size_t{1} << 20;

// Files.
inline constexpr std::size_t kMaxCorpusBytes = 64 * kMiB;  // a corpus (Tiny Shakespeare: 1.1 MB)
inline constexpr std::size_t kMaxNpyBytes = 256 * kMiB;    // one .npy file (a 07 model: < 1 MB)

// The backstop bound of a size flag that names none (attn::Cli::add_size): chapters give
// each flag its own, smaller bound.
inline constexpr std::size_t kMaxSizeFlag = 1'000'000;

// Tensors: at most 2^28 elements (1 GiB of float32) in any one buffer sized from user numbers.
inline constexpr std::size_t kMaxElements = std::size_t{1} << 28;

// A model a chapter draws from its flags: at most 2^25 parameters (128 MiB of float32; the
// chapter keeps a few copies: the weights, a saved and reloaded copy, the gradients later).
inline constexpr std::size_t kMaxModelParameters = std::size_t{1} << 25;
// A model read from a downloaded checkpoint (chapter 14: GPT-2 124M has 124,439,808): at most
// 2^28 parameters (1 GiB of float32), and never more than its file holds.
inline constexpr std::size_t kMaxLoadedParameters = std::size_t{1} << 28;

// Chapter 01 stores a (V, V) table, so the vocabulary it accepts is bounded (07 is not: it
// stores (V, C) numbers).
inline constexpr std::size_t kMaxBigramVocab = 2048;

}  // namespace limits

// Thrown when a size is too large: an overflowing product or one above a limit. A runtime error
// (exit code 1) when it reaches Cli::run; chapters check their flags first and report those as
// usage errors (exit code 2).
class SizeError : public std::length_error {
 public:
  using std::length_error::length_error;
};

// a * b, or throws SizeError("<what>: <a> x <b> overflows") when the product does not fit.
std::size_t checked_mul(std::size_t a, std::size_t b, std::string_view what);

// The number of elements of a tensor of this shape, checked: throws SizeError naming `what`
// when the product overflows or exceeds `max_elements`. A zero dimension counts as 1 in the
// check (not in the result): (0, 2^32, 2^32) holds no element, but its strides would still
// overflow, so it is rejected too.
std::size_t checked_elements(std::span<const std::size_t> shape, std::string_view what,
                             std::size_t max_elements = limits::kMaxElements);
inline std::size_t checked_elements(std::initializer_list<std::size_t> shape, std::string_view what,
                                    std::size_t max_elements = limits::kMaxElements) {
  return checked_elements(std::span<const std::size_t>(shape.begin(), shape.size()), what,
                          max_elements);
}

// "1 GiB", "64 MiB", "1.5 MiB", "512 bytes": a byte count for messages.
std::string bytes_text(std::uint64_t bytes);

}  // namespace attn
