// Shape checks shared by the whole library (see attn/core/check.hpp).
#include "attn/core/check.hpp"

#include <stdexcept>

namespace attn {

std::string shape_str(std::span<const std::size_t> shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ",";  // (5,) like Python, so a 1-D shape is recognisable
  return out + ")";
}

void shape_error(std::string_view function, std::string_view expected, std::string_view actual) {
  throw std::invalid_argument(std::string(function) + ": expected " + std::string(expected) +
                              ", got " + std::string(actual));
}

void require(bool ok, std::string_view function, std::string_view message) {
  if (!ok) throw std::invalid_argument(std::string(function) + ": " + std::string(message));
}

}  // namespace attn
