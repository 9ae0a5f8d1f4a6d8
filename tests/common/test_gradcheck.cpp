// Tests for attn/train/gradcheck.hpp: the float64 checker (check_gradients) on losses whose
// gradients are known in closed form, written here as naive loops: it passes each exact gradient,
// fails each one off by 0.1%, restores the values bit for bit, and refuses mismatched sizes. The
// float32 checker (grad_check) is shown missing the same 0.1% error: the reason for the float64
// one.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/train/gradcheck.hpp"

namespace {

// L(x, w) = sum_t r_t sin(x_t w_t) + (sum_t x_t)^2 / 2 + sum_t exp(w_t / 3): every element
// matters, the Hessian is not diagonal, and the third derivatives are O(1).
//   dL/dx_t = r_t w_t cos(x_t w_t) + sum_u x_u
//   dL/dw_t = r_t x_t cos(x_t w_t) + exp(w_t / 3) / 3
struct Closed {
  std::vector<double> x, w, r;
  double loss() const {
    double s = 0.0, sx = 0.0;
    for (std::size_t t = 0; t < x.size(); ++t) {
      s += r[t] * std::sin(x[t] * w[t]) + std::exp(w[t] / 3.0);
      sx += x[t];
    }
    return s + 0.5 * sx * sx;
  }
  std::vector<double> dx() const {
    double sx = 0.0;
    for (double v : x) sx += v;
    std::vector<double> g(x.size());
    for (std::size_t t = 0; t < x.size(); ++t) g[t] = r[t] * w[t] * std::cos(x[t] * w[t]) + sx;
    return g;
  }
  std::vector<double> dw() const {
    std::vector<double> g(x.size());
    for (std::size_t t = 0; t < x.size(); ++t)
      g[t] = r[t] * x[t] * std::cos(x[t] * w[t]) + std::exp(w[t] / 3.0) / 3.0;
    return g;
  }
};

Closed draw(std::uint64_t seed, std::size_t n) {
  attn::Rng rng(seed);
  Closed c;
  for (std::size_t t = 0; t < n; ++t) {
    c.x.push_back(rng.normal(0.0f, 1.5f));
    c.w.push_back(rng.normal(0.0f, 1.5f));
    c.r.push_back(rng.normal());
  }
  return c;
}

// A softmax row, L = sum_j r_j p_j with p = softmax(z): dL/dz = p * (r - sum_j p_j r_j), by loops.
struct SoftmaxLoss {
  std::vector<double> z, r;
  std::vector<double> probs() const {
    double m = z[0], s = 0.0;
    for (double v : z) m = std::max(m, v);
    std::vector<double> p(z.size());
    for (std::size_t j = 0; j < z.size(); ++j) s += p[j] = std::exp(z[j] - m);
    for (double& v : p) v /= s;
    return p;
  }
  double loss() const {
    const std::vector<double> p = probs();
    double l = 0.0;
    for (std::size_t j = 0; j < z.size(); ++j) l += r[j] * p[j];
    return l;
  }
  std::vector<double> dz() const {
    const std::vector<double> p = probs();
    double pr = 0.0;
    for (std::size_t j = 0; j < z.size(); ++j) pr += p[j] * r[j];
    std::vector<double> g(z.size());
    for (std::size_t j = 0; j < z.size(); ++j) g[j] = p[j] * (r[j] - pr);
    return g;
  }
};

void print(const char* what, const std::vector<attn::GradCheckResult>& rs) {
  for (const attn::GradCheckResult& r : rs)
    std::printf("gradcheck64 %-24s %-3s n=%-5zu max_abs=%.3e max_rel=%.3e %s\n", what,
                r.name.c_str(), r.count, r.max_abs, r.max_rel, r.pass ? "PASS" : "FAIL");
}

}  // namespace

TEST_SUITE("gradcheck") {

TEST_CASE("the float64 check passes exact gradients, far below its tolerance, for many draws") {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    Closed c = draw(seed, 50);
    const std::vector<double> dx = c.dx(), dw = c.dw();
    const auto rs =
        attn::check_gradients([&] { return c.loss(); }, {{"x", c.x, dx}, {"w", c.w, dw}});
    if (seed == 1) print("closed form", rs);
    INFO("seed " << seed);
    REQUIRE(rs.size() == 2);
    for (const attn::GradCheckResult& r : rs) {
      CHECK(r.pass);
      CHECK(r.count == 50);
      CHECK(r.max_rel < 1e-6);  // 100x below the tolerance (1e-4)
    }
  }
}

TEST_CASE("the float64 check fails a gradient off by 0.1%, or off in one element by 0.1%") {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    Closed c = draw(seed, 50);
    std::vector<double> dx = c.dx();
    const std::vector<double> dw = c.dw();
    for (double& g : dx) g *= 1.001;
    const auto rs =
        attn::check_gradients([&] { return c.loss(); }, {{"x", c.x, dx}, {"w", c.w, dw}});
    if (seed == 1) print("closed form, dx * 1.001", rs);
    INFO("seed " << seed);
    CHECK_FALSE(rs[0].pass);
    CHECK(rs[0].max_rel > 5e-4);
    CHECK(rs[1].pass);  // only the wrong tensor is blamed
    // One element only: the largest |dw| times 1.001.
    std::vector<double> dw1 = dw;
    std::size_t big = 0;
    for (std::size_t t = 0; t < dw1.size(); ++t)
      if (std::abs(dw1[t]) > std::abs(dw1[big])) big = t;
    dw1[big] *= 1.001;
    const auto one = attn::check_gradients([&] { return c.loss(); }, {{"w", c.w, dw1}});
    CHECK_FALSE(one[0].pass);
  }
}

TEST_CASE("a softmax row: exact gradient passes, 0.1% off fails, sign error fails") {
  attn::Rng rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    SoftmaxLoss s;
    for (int j = 0; j < 9; ++j) {
      s.z.push_back(rng.normal(0.0f, 3.0f));
      s.r.push_back(rng.normal());
    }
    const std::vector<double> g = s.dz();
    CHECK(attn::check_gradients([&] { return s.loss(); }, {{"z", s.z, g}})[0].pass);
    std::vector<double> off = g, neg = g;
    for (double& v : off) v *= 1.001;
    for (double& v : neg) v = -v;
    CHECK_FALSE(attn::check_gradients([&] { return s.loss(); }, {{"z", s.z, off}})[0].pass);
    CHECK_FALSE(attn::check_gradients([&] { return s.loss(); }, {{"z", s.z, neg}})[0].pass);
  }
}

TEST_CASE("the float32 check cannot see the same 0.1% error: its rounding noise is larger") {
  // The closed-form loss again, evaluated from float values as a float forward would: the
  // quotient's noise (float rounding of L, ~1e-7 |L|, over 2h = 6e-3) exceeds 0.1% of the
  // gradient, so the float check must pass the gradient scaled by 1.001 (at 1% tolerance).
  Closed c = draw(3, 50);
  std::vector<float> xf(c.x.begin(), c.x.end()), wf(c.w.begin(), c.w.end());
  const auto loss = [&] {
    float s = 0.0f, sx = 0.0f;
    for (std::size_t t = 0; t < xf.size(); ++t) {
      s += static_cast<float>(c.r[t]) * std::sin(xf[t] * wf[t]) + std::exp(wf[t] / 3.0f);
      sx += xf[t];
    }
    return static_cast<double>(s + 0.5f * sx * sx);
  };
  for (std::size_t t = 0; t < xf.size(); ++t) {
    c.x[t] = xf[t];
    c.w[t] = wf[t];
  }
  std::vector<float> dx, dw;
  for (double g : c.dx()) dx.push_back(static_cast<float>(g * 1.001));
  for (double g : c.dw()) dw.push_back(static_cast<float>(g));
  const auto rs = attn::grad_check(loss, {{"x", xf, dx}, {"w", wf, dw}});
  print("float32, dx * 1.001", rs);
  CHECK(attn::all_pass(rs));
}

TEST_CASE("values are restored bit for bit, and the loss is called twice per element") {
  Closed c = draw(5, 13);
  const std::vector<double> x0 = c.x, w0 = c.w, dx = c.dx(), dw = c.dw();
  int calls = 0;
  attn::check_gradients(
      [&] {
        ++calls;
        return c.loss();
      },
      {{"x", c.x, dx}, {"w", c.w, dw}});
  CHECK(calls == 2 * 26);
  for (std::size_t t = 0; t < 13; ++t) {
    CHECK(c.x[t] == x0[t]);
    CHECK(c.w[t] == w0[t]);
  }
}

TEST_CASE("a non-finite gradient fails, and a size mismatch is refused by name") {
  Closed c = draw(6, 8);
  std::vector<double> dx = c.dx();
  dx[3] = std::nan("");
  CHECK_FALSE(attn::check_gradients([&] { return c.loss(); }, {{"x", c.x, dx}})[0].pass);
  std::vector<double> short_grad(7, 0.0);
  try {
    attn::check_gradients([&] { return c.loss(); }, {{"x", c.x, short_grad}});
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.find("'x' has 8 values but its gradient has 7") != std::string::npos);
  }
}

TEST_CASE("a near-zero gradient is judged against its tensor's scale, not on its own") {
  // L = sum_t r_t x_t^2 with one x_t = 1e-9: its gradient 2 r_t x_t ~ 1e-9 is resolved only to
  // the quotient's rounding; it must not fail the tensor on a relative error of its own.
  std::vector<double> x = {0.7, -1.2, 1e-9, 2.0}, r = {1.0, 0.5, -2.0, 0.25};
  const auto loss = [&] {
    double s = 0.0;
    for (std::size_t t = 0; t < x.size(); ++t) s += r[t] * x[t] * x[t];
    return s;
  };
  std::vector<double> g(4);
  for (std::size_t t = 0; t < 4; ++t) g[t] = 2.0 * r[t] * x[t];
  CHECK(attn::check_gradients(loss, {{"x", x, g}})[0].pass);
}

}  // TEST_SUITE
