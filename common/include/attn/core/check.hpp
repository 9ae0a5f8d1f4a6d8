// attn/core/check.hpp: the shape checks every function of the library starts with.
// A mistake in a shape is the most common bug in attention code; we turn it into an exception
// that names the function, the expected and the actual shape, e.g.
//   attn::masked_softmax: expected scores of shape (..., T, S) with mask (T, S), got (2, 4, 4) and
//   (3, 3)
#pragma once

#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace attn {

// "(2, 4, 4)"
std::string shape_str(std::span<const std::size_t> shape);
template <class Shape>
std::string shape_str(const Shape& shape) {
  return shape_str(std::span<const std::size_t>(shape.data(), shape.size()));
}

// Throws std::invalid_argument("<function>: expected <expected>, got <actual>").
[[noreturn]] void shape_error(std::string_view function, std::string_view expected,
                              std::string_view actual);

// Throws std::invalid_argument("<function>: <message>") when `ok` is false. For argument checks
// that are not about shapes (a temperature of zero, a negative size).
void require(bool ok, std::string_view function, std::string_view message);

// The same, with the message built by `message()` only when the check fails: checks that run on
// every call of a hot path (every training step, every generated token) then allocate nothing.
//   require(id < V, kFn, [&] { return fmt::format("token id {} is outside [0, {})", id, V); });
template <class MakeMessage>
requires std::is_invocable_r_v<std::string, MakeMessage&>
void require(bool ok, std::string_view function, MakeMessage&& message) {
  if (!ok) require(false, function, std::string_view(message()));
}

}  // namespace attn
