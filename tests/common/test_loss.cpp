// Tests for attn/fast/loss.hpp: cross-entropy and its hand-derived gradient (chapter 01).
// The loss is checked against hand-computed numbers and a double-precision reference; the
// gradient against central finite differences of that reference, entry by entry.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "attn/ops/loss.hpp"
#include "attn/core/random.hpp"
#include "test_helpers.hpp"

namespace {

// -(1/N) sum_n log softmax(l_n)[y_n], everything in double, straight from the definition.
double reference_loss(const std::vector<double>& logits, std::size_t N, std::size_t V,
                      const std::vector<int>& targets) {
  double total = 0.0;
  for (std::size_t n = 0; n < N; ++n) {
    double m = logits[n * V];
    for (std::size_t v = 1; v < V; ++v) m = std::max(m, logits[n * V + v]);
    double s = 0.0;
    for (std::size_t v = 0; v < V; ++v) s += std::exp(logits[n * V + v] - m);
    total -= logits[n * V + static_cast<std::size_t>(targets[n])] - m - std::log(s);
  }
  return total / static_cast<double>(N);
}

}  // namespace

TEST_SUITE("loss") {

TEST_CASE("a 2 x 3 example computed by hand") {
  // Row 0: -log softmax([1, 2, 3])[2] = log(e + e^2 + e^3) - 3 = 0.40760596
  // Row 1: -log softmax([1, 1, 1])[0] = log 3               = 1.09861229
  const attn::Matrix logits = {{1.0f, 2.0f, 3.0f}, {1.0f, 1.0f, 1.0f}};
  const std::vector<int> targets = {2, 0};
  CHECK(attn::cross_entropy(logits, targets) == doctest::Approx(0.75310913).epsilon(1e-7));
  // grad = (softmax - onehot) / N
  const attn::Matrix want = {{0.09003057f / 2, 0.24472847f / 2, (0.66524096f - 1.0f) / 2},
                             {(1.0f / 3 - 1.0f) / 2, 1.0f / 6, 1.0f / 6}};
  CHECK_TENSOR_NEAR(attn::cross_entropy_grad(logits, targets), want, 1e-7, 1e-6);
}

TEST_CASE("uniform logits cost log(V) whatever the targets") {
  const attn::Matrix logits = xt::zeros<float>({5, 65});
  const std::vector<int> targets = {0, 64, 17, 3, 3};
  CHECK(attn::cross_entropy(logits, targets) == doctest::Approx(std::log(65.0)).epsilon(1e-7));
}

TEST_CASE("huge logits do not overflow") {
  const attn::Matrix logits = {{1000.0f, 1001.0f}};
  const std::vector<int> targets = {0};
  CHECK(attn::cross_entropy(logits, targets) == doctest::Approx(1.31326169).epsilon(1e-6));
}

TEST_CASE("the loss matches a double-precision reference on random logits") {
  attn::Rng rng(12);
  const attn::Matrix logits = attn::randn(rng, 16, 30, 3.0f);
  std::vector<int> targets;
  for (std::size_t n = 0; n < 16; ++n) targets.push_back(static_cast<int>(rng.below(30)));
  const std::vector<double> l(logits.begin(), logits.end());
  CHECK(attn::cross_entropy(logits, targets) ==
        doctest::Approx(reference_loss(l, 16, 30, targets)).epsilon(1e-6));
}

TEST_CASE("the gradient matches central finite differences of the loss") {
  const std::size_t N = 4;
  const std::size_t V = 7;
  attn::Rng rng(5);
  const attn::Matrix logits = attn::randn(rng, N, V, 2.0f);
  const std::vector<int> targets = {3, 0, 6, 3};
  const attn::Matrix grad = attn::cross_entropy_grad(logits, targets);
  std::vector<double> l(logits.begin(), logits.end());
  const double h = 1e-5;
  for (std::size_t i = 0; i < N * V; ++i) {
    const double saved = l[i];
    l[i] = saved + h;
    const double up = reference_loss(l, N, V, targets);
    l[i] = saved - h;
    const double down = reference_loss(l, N, V, targets);
    l[i] = saved;
    const double numeric = (up - down) / (2.0 * h);
    CAPTURE(i);
    CHECK(static_cast<double>(grad.data()[i]) ==
          doctest::Approx(numeric).epsilon(1e-4).scale(1e-3));
  }
}

TEST_CASE("every gradient row sums to 0 (softmax sums to 1, the one-hot too)") {
  attn::Rng rng(1);
  const attn::Matrix logits = attn::randn(rng, 8, 65, 4.0f);
  std::vector<int> targets;
  for (std::size_t n = 0; n < 8; ++n) targets.push_back(static_cast<int>(rng.below(65)));
  const attn::Matrix grad = attn::cross_entropy_grad(logits, targets);
  for (std::size_t n = 0; n < 8; ++n) {
    double sum = 0.0;
    for (std::size_t v = 0; v < 65; ++v) sum += static_cast<double>(grad(n, v));
    CHECK(std::abs(sum) < 1e-7);
    CHECK(grad(n, static_cast<std::size_t>(targets[n])) < 0.0f);  // push the target's logit up
  }
}

TEST_CASE("cross_entropy_with_grad gives the same loss and gradient as the separate calls") {
  attn::Rng rng(2);
  const attn::Matrix logits = attn::randn(rng, 6, 10);
  const std::vector<int> targets = {0, 1, 2, 9, 8, 7};
  const attn::LossGrad both = attn::cross_entropy_with_grad(logits, targets);
  CHECK(both.loss == attn::cross_entropy(logits, targets));
  CHECK_TENSOR_NEAR(both.grad, attn::cross_entropy_grad(logits, targets), 0.0, 0.0);
}

TEST_CASE("bad shapes and targets are errors naming what was expected and what came") {
  const attn::Matrix logits = xt::zeros<float>({2, 3});
  const std::vector<int> three = {0, 1, 2};
  CHECK_THROWS_WITH_AS(attn::cross_entropy(logits, three),
                       "attn::cross_entropy: expected 2 targets for logits (2, 3), got 3 targets",
                       std::invalid_argument);
  const std::vector<int> out_of_range = {0, 3};
  CHECK_THROWS_WITH_AS(attn::cross_entropy_grad(logits, out_of_range),
                       "attn::cross_entropy_grad: expected targets in [0, 3), got 3 at index 1",
                       std::invalid_argument);
  const std::vector<int> negative = {-1, 0};
  CHECK_THROWS_AS(attn::cross_entropy_with_grad(logits, negative), std::invalid_argument);
  const attn::Matrix no_rows(attn::Matrix::shape_type{0, 3});
  CHECK_THROWS_WITH_AS(attn::cross_entropy(no_rows, std::vector<int>{}),
                       "attn::cross_entropy: expected logits (N, V) with N >= 1, got logits (0, 3)",
                       std::invalid_argument);
  const attn::Matrix no_vocab(attn::Matrix::shape_type{2, 0});
  CHECK_THROWS_WITH_AS(attn::cross_entropy(no_vocab, std::vector<int>{0, 0}),
                       "attn::cross_entropy: expected logits (N, V) with V >= 1, got logits (2, 0)",
                       std::invalid_argument);
}

}  // TEST_SUITE
