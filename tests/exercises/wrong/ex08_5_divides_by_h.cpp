// Wrong: the difference over the two points 2h apart is divided by h, not 2h.
#include <cmath>
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

std::vector<double> central_differences(const std::function<double(std::span<const double>)>& f,
                                        std::span<const double> x, double h) {
  if (!(h > 0.0) || !std::isfinite(h)) throw std::invalid_argument("central_differences: bad h");
  std::vector<double> at(x.begin(), x.end()), grad(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    at[i] = x[i] + h;
    const double up = f(at);
    at[i] = x[i] - h;
    grad[i] = (up - f(at)) / h;
    at[i] = x[i];
  }
  return grad;
}

}  // namespace ex08
