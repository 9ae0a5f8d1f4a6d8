// Wrong: a forward difference (f(x + h) - f(x)) / h, off by h f''/2 instead of h^2 f'''/6.
#include <cmath>
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

std::vector<double> central_differences(const std::function<double(std::span<const double>)>& f,
                                        std::span<const double> x, double h) {
  if (!(h > 0.0) || !std::isfinite(h)) throw std::invalid_argument("central_differences: bad h");
  std::vector<double> at(x.begin(), x.end()), grad(x.size());
  const double f0 = f(at);
  for (std::size_t i = 0; i < x.size(); ++i) {
    at[i] = x[i] + h;
    grad[i] = (f(at) - f0) / h;
    at[i] = x[i];
  }
  return grad;
}

}  // namespace ex08
