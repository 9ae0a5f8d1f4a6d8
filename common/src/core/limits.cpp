// limits.cpp: checked size arithmetic (attn/core/limits.hpp), the one place where a product of
// sizes that a learner typed (or a file declared) is computed.
#include "attn/core/limits.hpp"

#include <limits>

#include <fmt/format.h>

#include "attn/core/check.hpp"

namespace attn {

std::size_t checked_mul(std::size_t a, std::size_t b, std::string_view what) {
  std::size_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    throw SizeError(fmt::format("{}: {} x {} overflows a 64-bit size", what, a, b));
  }
  return product;
}

std::size_t checked_elements(std::span<const std::size_t> shape, std::string_view what,
                             std::size_t max_elements) {
  // 1. The product with every zero counted as 1: the largest stride the tensor would have.
  std::size_t span = 1;
  std::size_t elements = 1;
  bool overflow = false;
  for (const std::size_t d : shape) {
    overflow = overflow || __builtin_mul_overflow(span, d == 0 ? 1 : d, &span);
    elements = d == 0 ? 0 : elements;
  }
  if (overflow || span > max_elements) {
    throw SizeError(fmt::format(
        "{}: shape {} is too large ({} elements; the limit is {} elements, {} of float32)", what,
        shape_str(shape), overflow ? std::string("more than 2^64") : std::to_string(span),
        max_elements, bytes_text(static_cast<std::uint64_t>(max_elements) * 4)));
  }
  // 2. The real count: the same product, or 0 when a dimension is 0.
  return elements == 0 ? 0 : span;
}

std::string bytes_text(std::uint64_t bytes) {
  constexpr std::uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  const auto unit = [bytes](std::uint64_t size, const char* name) {
    if (bytes % size == 0) return fmt::format("{} {}", bytes / size, name);
    return fmt::format("{:.1f} {}", static_cast<double>(bytes) / static_cast<double>(size), name);
  };
  if (bytes >= kGiB) return unit(kGiB, "GiB");
  if (bytes >= kMiB) return unit(kMiB, "MiB");
  if (bytes >= kKiB) return unit(kKiB, "KiB");
  return fmt::format("{} bytes", bytes);
}

}  // namespace attn
