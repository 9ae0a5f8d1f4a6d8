// attn/train/central_difference.hpp: the idea under every gradient check (chapter 08), on a
// plain function of a few doubles: the numerical gradient by central differences,
//   g_i = (f(x + h e_i) - f(x - h e_i)) / (2 h)
// whose error is h^2 f'''(x) / 6, where a forward difference (f(x + h e_i) - f(x)) / h is off by
// h f''(x) / 2 (a thousand times more at h = 1e-3). attn::grad_check (gradcheck.hpp) applies it
// to the float tensors of a model; chapter 08's exercise ex08.5 writes this one.
#pragma once

#include <cmath>
#include <cstddef>
#include <functional>
#include <span>
#include <stdexcept>
#include <vector>

namespace attn {

// (n,) the central differences of f at x, one coordinate at a time: f is called 2n times, every
// time at x with exactly one coordinate moved by +h or -h (the others exactly as given). Throws
// std::invalid_argument unless h is finite and > 0.
inline std::vector<double> central_differences(
    const std::function<double(std::span<const double>)>& f, std::span<const double> x, double h) {
  if (!(h > 0.0 && std::isfinite(h))) {
    throw std::invalid_argument("attn::central_differences: h must be finite and > 0");
  }
  std::vector<double> at(x.begin(), x.end()), grad(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    at[i] = x[i] + h;
    const double up = f(at);
    at[i] = x[i] - h;
    const double down = f(at);
    at[i] = x[i];  // exactly as given, not x[i] - h + h
    grad[i] = (up - down) / (2.0 * h);
  }
  return grad;
}

}  // namespace attn
