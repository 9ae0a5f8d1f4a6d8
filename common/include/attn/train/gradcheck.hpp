// attn/train/gradcheck.hpp: the gradient checker (chapter 08). Every backward of the library is
// proven against central differences computed here. Two checkers: check_gradients (float64, below),
// the one the course's checks use, and grad_check (float32), kept to show on the page why a float
// forward cannot check a backward to 0.1%.
//
// ---- grad_check: a float32 forward -----------------------------------------------------------
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
double weighted_sum(std::span<const double> a, std::span<const double> b);

// ---- check_gradients: a float64 forward (what PyTorch's gradcheck insists on) ----------------
//
// The same central differences, on double values through a double forward:
//   numeric_i = (L(theta_i + h_i) - L(theta_i - h_i)) / (2 h_i),   h_i = h max(1, |theta_i|).
// Why h = 1e-6 and a tolerance of 1e-4 (so a gradient off by 0.1% fails by a factor of 10):
//   truncation: h^2 L''' / 6 ~ 2e-13 for third derivatives ~1 (2e-10 for 1e3): nothing;
//   rounding:   a double forward rounds L by ~N eps relative to |L| (eps = 1.1e-16; the N ~ 1e3
//               terms of L = sum(out * R) cancel: |L| ~ sqrt(N) while sum |terms| ~ N), ~1e-13,
//               and divided by 2h that is ~5e-8 in the quotient: 1e-5 of a 5e-3 gradient.
// A correct backward then shows relative errors ~1e-10 to 1e-5 (chapter 08's ops, block and
// model over 300 seeds: at most 1e-5), 10x or more below the tolerance, and a backward scaled by
// 1.001 shows 1e-3, 10x above it. In float the rounding of L is ~1e-7 relative, a billion times
// larger: divided by any 2h small enough to keep the truncation error away, it exceeds the 0.1%
// the check must see.
// An element's relative error is |analytic - numeric| / max(|analytic|, |numeric|, floor,
// noise / tolerance), as for grad_check, with
//   floor = 1e-3 of the tensor's largest |numeric| (at least 1e-12);
//   noise = 1e-13 max(1, |L(theta + h)|, |L(theta - h)|) / (2 h): the rounding above. A tensor
//           whose largest gradient exceeds ~5e-5 max(1, |L|) still fails when scaled by 1.001.
// The analytic gradient may come from a float backward (chapter 08's --mine runs the learner's):
// its float rounding (~1e-6 relative) stays below the tolerance.
// Functions with kinks (ReLU): an input must lie within h of the kink to straddle it; keep
// inputs away from it anyway.
struct GradCheckOptions64 {
  double h = 1e-6;          // step, times max(1, |theta_i|)
  double tolerance = 1e-4;  // a tensor passes when max_rel <= tolerance
  double floor = 1e-3;      // near-zero elements: relative to this fraction of the tensor's max
  double noise = 1e-13;     // relative rounding noise of L allowed for (see above)
};

// One tensor to check, in double: its values (perturbed in place, restored afterwards, bit for
// bit) and the analytic gradient dL/dvalues computed beforehand by the backward under test.
struct GradTensor64 {
  std::string name;
  std::span<double> values;
  std::span<const double> grad;
};

// Central differences in double over every element of every tensor; `loss` evaluates L at the
// current values with a double forward (it is called 2 * count times). Throws
// std::invalid_argument when a grad's size differs from its values'.
std::vector<GradCheckResult> check_gradients(const std::function<double()>& loss,
                                             std::span<const GradTensor64> tensors,
                                             const GradCheckOptions64& options = {});
// The same, for a braced list at the call site: check_gradients(loss, {{"x", x, dx}, ...}).
std::vector<GradCheckResult> check_gradients(const std::function<double()>& loss,
                                             const std::vector<GradTensor64>& tensors,
                                             const GradCheckOptions64& options = {});

}  // namespace attn
