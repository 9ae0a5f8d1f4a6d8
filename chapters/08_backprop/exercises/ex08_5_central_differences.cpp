// Exercise ex08.5: the gradient checker's core, central differences (chapter 08,
// docs/08-backprop.md).
//
// Goal: like attn::central_differences, the numbers every backward of the course is checked
// against (why central and not one-sided: docs/08-backprop.md, "ex08.5 Central differences").
//   in:  f, a scalar function of n doubles; x (n,), the point; h > 0, the step
//   out: (n,), element i the numerical df/dx_i at x
// The contract:
//   - one coordinate at a time: every call of f sees x with exactly one coordinate moved (by +h
//     or by -h) and every other coordinate *exactly* as given; 2n calls in all;
//   - the error shrinks like h^2 (a quadratic f gives its exact gradient, up to rounding);
//   - x itself is const; n = 0 gives an empty result and no call of f;
//   - throw std::invalid_argument unless h is finite and > 0.
//
// Check: build/default/bin/attn-check 08
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

std::vector<double> central_differences(const std::function<double(std::span<const double>)>& f,
                                        std::span<const double> x, double h) {
  // TODO(ex08.5): return (n,): the central difference of f in each coordinate of x, step h.
  throw std::logic_error("TODO ex08.5: central differences");
}

}  // namespace ex08
