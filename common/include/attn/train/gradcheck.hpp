// attn/gradcheck.hpp: the gradient checker (chapter 08). Every backward of the library is proven
// against central differences computed here.
//
// For a scalar loss L(theta) and each element theta_i of the tensors given,
//   numeric_i = (L(theta_i + h_i) - L(theta_i - h_i)) / (2 h_i)
// with the perturbation made on the float parameter and the quotient taken in double: h_i is the
// step actually stored (fl(theta_i + h) - theta_i, exact in double), and L should be accumulated
// in double, e.g. L = sum(out * R) for a fixed random R (weighted_sum below), so that the only
// noise left is the float rounding of the forward itself.
//
// Why h = 3e-3 (relative to max(1, |theta_i|)) and a 1% tolerance: the truncation error of the
// central difference is h^2 L''' / 6, ~2e-6 for O(1) third derivatives (composite ops such as
// attention, cubic in x through q k^T and P v, have larger ones: at h = 1e-2 the x gradient of a
// small MHA was off by 2%), and the forward's float rounding (~1e-7 relative per output, ~1e-6
// in L for a few hundred outputs) divided by 2h is ~2e-4. A correct gradient then shows relative
// errors ~1e-4 to 1e-3 (the tests print them), 10x or more below the tolerance, while the subtle
// bugs chapter 08 shows (unbiased variance in LayerNorm: a factor C / (C - 1); a missing
// 1 / sqrt(hs); the causal mask ignored) are off by 10% or more.
// An element's relative error is |analytic - numeric| / max(|analytic|, |numeric|, floor,
// noise / tolerance) with
//   floor = 1% of the tensor's largest |numeric| (at least 1e-6): a near-zero gradient is
//           judged against its tensor's scale;
//   noise = 1e-6 max(1, |L(theta + h)|, |L(theta - h)|) / (2 h): what ~8 float ulps of rounding
//           in L make of the difference quotient. A float forward cannot resolve a gradient
//           below that (measured in the block tests: errors up to ~2e-4 on w_q gradients of
//           ~5e-3 with |L| ~ 2, h = 3e-3), so such an element may be off by up to `noise`.
// Functions with kinks (ReLU) need a smaller h, or inputs away from the kink.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace attn {

struct GradCheckOptions {
  double h = 3e-3;          // step, times max(1, |theta_i|)
  double tolerance = 1e-2;  // a tensor passes when max_rel <= tolerance
  double floor = 1e-2;      // near-zero elements: relative to this fraction of the tensor's max
  double noise = 1e-6;      // relative rounding noise of L allowed for (see above)
};

// One tensor to check: its values (perturbed in place, restored afterwards) and the analytic
// gradient dL/dvalues computed beforehand by the backward under test (any function: a wrong one
// is how the tests show the checker catches bugs).
struct GradTensor {
  std::string name;
  std::span<float> values;
  std::span<const float> grad;
};

struct GradCheckResult {
  std::string name;
  std::size_t count = 0;  // elements checked
  double max_abs = 0.0;   // max |analytic - numeric|
  double max_rel = 0.0;   // max relative error (see above)
  bool pass = false;
};

// Central differences over every element of every tensor. `loss` evaluates L at the current
// values (it is called 2 * count times). Throws std::invalid_argument when a grad's size differs
// from its values'.
std::vector<GradCheckResult> grad_check(const std::function<double()>& loss,
                                        const std::vector<GradTensor>& tensors,
                                        const GradCheckOptions& options = {});
bool all_pass(const std::vector<GradCheckResult>& results);

// sum_i a_i b_i accumulated in double: the scalar loss L = sum(out * R) whose gradient with
// respect to out is R.
double weighted_sum(std::span<const float> a, std::span<const float> b);

}  // namespace attn
