// Wrong: h is never checked: 0 divides by zero, a negative or NaN h goes through.
#include <cmath>
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

std::vector<double> central_differences(const std::function<double(std::span<const double>)>& f,
                                        std::span<const double> x, double h) {
  std::vector<double> at(x.begin(), x.end()), grad(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    at[i] = x[i] + h;
    const double up = f(at);
    at[i] = x[i] - h;
    const double down = f(at);
    at[i] = x[i];
    grad[i] = (up - down) / (2.0 * h);
  }
  return grad;
}

}  // namespace ex08
