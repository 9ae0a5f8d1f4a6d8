// Don't edit: these tests check your exercises.
// tests/exercises/ch05_test.cpp: chapter 05 (multi-head attention). Splitting and merging are
// checked on hand-built tensors whose every entry says where it came from; the forward pass is
// checked against a plain double-precision loop in this file, never against attn::mha_forward.
// Run them with build/default/bin/attn-check 05.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attn/ops/attention.hpp"
#include "attn/core/xt.hpp"
#include "exercises.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Matrix;
using attn::MhaWeights;
using attn::Tensor;

// x(b, t, c) = 10000 b + 100 t + c: every entry names its own position, so a misplaced number
// shows up in the failure message as the wrong (b, t, c). Exact in float for these sizes.
Tensor<3> labelled_input(std::size_t B, std::size_t T, std::size_t C) {
  Tensor<3> x({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t c = 0; c < C; ++c) x(b, t, c) = static_cast<float>(10000 * b + 100 * t + c);
  return x;
}

// heads(b, h, t, i) = 10000 b + 1000 h + 100 t + i, the same idea for (B, H, T, hs).
Tensor<4> labelled_heads(std::size_t B, std::size_t H, std::size_t T, std::size_t hs) {
  Tensor<4> x({B, H, T, hs});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t i = 0; i < hs; ++i)
          x(b, h, t, i) = static_cast<float>(10000 * b + 1000 * h + 100 * t + i);
  return x;
}

// Smooth numbers with no visible pattern: amplitude * sin(a i + b j + c k + phase).
double wiggle(double amplitude, double a, double b, double c, double phase, std::size_t i,
              std::size_t j, std::size_t k) {
  return amplitude * std::sin(a * static_cast<double>(i) + b * static_cast<double>(j) +
                              c * static_cast<double>(k) + phase);
}

Tensor<3> wiggly_input(std::size_t B, std::size_t T, std::size_t C) {
  Tensor<3> x({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t c = 0; c < C; ++c)
        x(b, t, c) = static_cast<float>(wiggle(1.5, 2.1, 0.7, 1.3, 0.4, b, t, c));
  return x;
}

// A (C, C) matrix with entries of size about 1 / sqrt(C), so the scores are of order 1 and the
// softmax is far from uniform: a wrong mask or a wrong head shows in the output.
Matrix wiggly_matrix(std::size_t C, double phase) {
  Matrix w({C, C});
  const double amplitude = 1.7 / std::sqrt(static_cast<double>(C));
  for (std::size_t i = 0; i < C; ++i)
    for (std::size_t j = 0; j < C; ++j)
      w(i, j) = static_cast<float>(wiggle(amplitude, 1.9, 3.3, 0.0, phase, i, j, 0));
  return w;
}

MhaWeights wiggly_weights(std::size_t C) {
  return {wiggly_matrix(C, 0.1), wiggly_matrix(C, 1.2), wiggly_matrix(C, 2.3),
          wiggly_matrix(C, 3.4)};
}

Matrix identity(std::size_t C) {
  Matrix m = xt::zeros<float>({C, C});
  for (std::size_t i = 0; i < C; ++i) m(i, i) = 1.0f;
  return m;
}

// (B, T, C) @ (C, C) in double.
std::vector<double> project(const Tensor<3>& x, const Matrix& w) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  std::vector<double> out(B * T * C, 0.0);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t j = 0; j < C; ++j) {
        double sum = 0.0;
        for (std::size_t c = 0; c < C; ++c)
          sum += static_cast<double>(x(b, t, c)) * static_cast<double>(w(c, j));
        out[(b * T + t) * C + j] = sum;
      }
  return out;
}

// Multi-head self-attention straight from the definition, in double: head h uses columns
// [h hs, (h + 1) hs) of q, k and v and writes the same columns of the concatenation, which is
// then multiplied by w_o. No splitting into a (B, H, T, hs) tensor at all.
Tensor<3> mha_by_hand(const Tensor<3>& x, const MhaWeights& w, std::size_t H, bool causal) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  const std::size_t hs = C / H;
  const std::vector<double> q = project(x, w.w_q), k = project(x, w.w_k), v = project(x, w.w_v);
  std::vector<double> concat(B * T * C, 0.0);
  std::vector<double> p(T);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t) {
        const std::size_t last = causal ? t : T - 1;  // the last key query t may see
        double m = -std::numeric_limits<double>::infinity();
        for (std::size_t s = 0; s <= last; ++s) {
          double dot = 0.0;
          for (std::size_t i = 0; i < hs; ++i)
            dot += q[(b * T + t) * C + h * hs + i] * k[(b * T + s) * C + h * hs + i];
          p[s] = dot / std::sqrt(static_cast<double>(hs));
          m = std::max(m, p[s]);
        }
        double sum = 0.0;
        for (std::size_t s = 0; s <= last; ++s) {
          p[s] = std::exp(p[s] - m);
          sum += p[s];
        }
        for (std::size_t i = 0; i < hs; ++i) {
          double acc = 0.0;
          for (std::size_t s = 0; s <= last; ++s)
            acc += p[s] / sum * v[(b * T + s) * C + h * hs + i];
          concat[(b * T + t) * C + h * hs + i] = acc;
        }
      }
  Tensor<3> out({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t j = 0; j < C; ++j) {
        double sum = 0.0;
        for (std::size_t c = 0; c < C; ++c)
          sum += concat[(b * T + t) * C + c] * static_cast<double>(w.w_o(c, j));
        out(b, t, j) = static_cast<float>(sum);
      }
  return out;
}

// Float results against double references: the float products of C terms carry a few ulps.
constexpr double kAtol = 2e-5;
constexpr double kRtol = 2e-4;

}  // namespace

TEST_SUITE("ex05.1 Split heads") {
TEST_CASE("a (B, T, C) input becomes (B, H, T, C / H)") {
  struct Case {
    std::size_t B, T, C, H;
  };
  for (const Case c : {Case{2, 10, 64, 4}, Case{1, 3, 6, 2}, Case{3, 1, 8, 8}, Case{2, 5, 12, 1}}) {
    CAPTURE(c.B);
    CAPTURE(c.T);
    CAPTURE(c.C);
    CAPTURE(c.H);
    const Tensor<4> heads = ex05::split_heads(labelled_input(c.B, c.T, c.C), c.H);
    CHECK(heads.shape()[0] == c.B);
    CHECK(heads.shape()[1] == c.H);
    CHECK(heads.shape()[2] == c.T);
    CHECK(heads.shape()[3] == c.C / c.H);
  }
}

TEST_CASE("two heads of a 1 x 2 x 4 input, worked out by hand") {
  const Tensor<3> x = {{{1.0f, 2.0f, 3.0f, 4.0f}, {5.0f, 6.0f, 7.0f, 8.0f}}};  // (1, 2, 4)
  const Tensor<4> want = {{{{1.0f, 2.0f}, {5.0f, 6.0f}},    // head 0: columns 0, 1
                           {{3.0f, 4.0f}, {7.0f, 8.0f}}}};  // head 1: columns 2, 3
  CHECK_TENSOR_NEAR(ex05::split_heads(x, 2), want, 0.0, 0.0);
}

TEST_CASE("head h holds column block h of every position") {
  const std::size_t B = 2, T = 3, C = 12, H = 3, hs = 4;
  const Tensor<4> heads = ex05::split_heads(labelled_input(B, T, C), H);
  REQUIRE(heads.shape()[3] == hs);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t i = 0; i < hs; ++i) {
          CAPTURE(b);
          CAPTURE(h);
          CAPTURE(t);
          CAPTURE(i);
          CHECK(heads(b, h, t, i) == static_cast<float>(10000 * b + 100 * t + h * hs + i));
        }
}

TEST_CASE("one head is the input with a head axis of length 1") {
  const Tensor<3> x = labelled_input(2, 3, 5);
  const Tensor<4> heads = ex05::split_heads(x, 1);
  REQUIRE(heads.shape()[1] == 1);
  const Tensor<3> squeezed = xt::view(heads, xt::all(), 0, xt::all(), xt::all());
  CHECK_TENSOR_NEAR(squeezed, x, 0.0, 0.0);
}

TEST_CASE("C heads of size 1: channel c becomes head c") {
  const std::size_t B = 1, T = 4, C = 6;
  const Tensor<3> x = labelled_input(B, T, C);
  const Tensor<4> heads = ex05::split_heads(x, C);
  REQUIRE(heads.shape()[3] == 1);
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t t = 0; t < T; ++t) {
      CAPTURE(c);
      CAPTURE(t);
      CHECK(heads(0, c, t, 0) == x(0, t, c));
    }
}

TEST_CASE("a head count that does not divide C is rejected") {
  const Tensor<3> x = labelled_input(1, 2, 64);
  CHECK_THROWS_AS(ex05::split_heads(x, 5), std::invalid_argument);
  CHECK_THROWS_AS(ex05::split_heads(x, 128), std::invalid_argument);
}

TEST_CASE("zero heads is rejected, not a division by zero") {
  // C % 0 and C / 0 are undefined behaviour for integers: the program dies of SIGFPE.
  const Tensor<3> x = labelled_input(1, 2, 64);
  CHECK_THROWS_AS(ex05::split_heads(x, 0), std::invalid_argument);
}
}

TEST_SUITE("ex05.2 Merge heads") {
TEST_CASE("a (B, H, T, hs) input becomes (B, T, H * hs)") {
  struct Case {
    std::size_t B, H, T, hs;
  };
  for (const Case c : {Case{2, 4, 10, 16}, Case{1, 1, 3, 5}, Case{3, 8, 2, 1}}) {
    CAPTURE(c.B);
    CAPTURE(c.H);
    CAPTURE(c.T);
    CAPTURE(c.hs);
    const Tensor<3> merged = ex05::merge_heads(labelled_heads(c.B, c.H, c.T, c.hs));
    CHECK(merged.shape()[0] == c.B);
    CHECK(merged.shape()[1] == c.T);
    CHECK(merged.shape()[2] == c.H * c.hs);
  }
}

TEST_CASE("two heads of size 2, worked out by hand") {
  const Tensor<4> heads = {{{{1.0f, 2.0f}, {3.0f, 4.0f}},    // head 0, positions 0 and 1
                            {{5.0f, 6.0f}, {7.0f, 8.0f}}}};  // head 1
  const Tensor<3> want = {{{1.0f, 2.0f, 5.0f, 6.0f}, {3.0f, 4.0f, 7.0f, 8.0f}}};  // (1, 2, 4)
  CHECK_TENSOR_NEAR(ex05::merge_heads(heads), want, 0.0, 0.0);
}

TEST_CASE("column block h of position t comes from head h at position t") {
  const std::size_t B = 2, H = 3, T = 4, hs = 5;
  const Tensor<3> merged = ex05::merge_heads(labelled_heads(B, H, T, hs));
  REQUIRE(merged.shape()[2] == H * hs);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t i = 0; i < hs; ++i) {
          CAPTURE(b);
          CAPTURE(t);
          CAPTURE(h);
          CAPTURE(i);
          CHECK(merged(b, t, h * hs + i) == static_cast<float>(10000 * b + 1000 * h + 100 * t + i));
        }
}

TEST_CASE("one head merges to the same numbers without the head axis") {
  const Tensor<4> heads = labelled_heads(2, 1, 3, 4);
  const Tensor<3> want = xt::view(heads, xt::all(), 0, xt::all(), xt::all());
  CHECK_TENSOR_NEAR(ex05::merge_heads(heads), want, 0.0, 0.0);
}
}

TEST_SUITE("ex05.3 Multi-head forward") {
TEST_CASE("the output has the shape of the input") {
  const std::size_t B = 2, T = 5, C = 8;
  const Tensor<3> x = wiggly_input(B, T, C);
  const MhaWeights w = wiggly_weights(C);
  for (const std::size_t H : {1u, 2u, 4u, 8u}) {
    CAPTURE(H);
    const Tensor<3> out = ex05::mha_forward(x, w, H, true);
    CHECK(out.shape()[0] == B);
    CHECK(out.shape()[1] == T);
    CHECK(out.shape()[2] == C);
  }
}

TEST_CASE("one head matches single-head attention computed by hand") {
  const Tensor<3> x = wiggly_input(2, 4, 6);
  const MhaWeights w = wiggly_weights(6);
  CHECK_TENSOR_NEAR(ex05::mha_forward(x, w, 1, true), mha_by_hand(x, w, 1, true), kAtol, kRtol);
}

TEST_CASE("causal attention with 2, 3 and 6 heads matches a loop over heads in double") {
  const Tensor<3> x = wiggly_input(2, 5, 6);
  const MhaWeights w = wiggly_weights(6);
  for (const std::size_t H : {2u, 3u, 6u}) {
    CAPTURE(H);
    CHECK_TENSOR_NEAR(ex05::mha_forward(x, w, H, true), mha_by_hand(x, w, H, true), kAtol, kRtol);
  }
}

TEST_CASE("without the causal mask every query sees every key") {
  const Tensor<3> x = wiggly_input(1, 4, 8);
  const MhaWeights w = wiggly_weights(8);
  const Tensor<3> want = mha_by_hand(x, w, 4, false);
  CHECK_TENSOR_NEAR(ex05::mha_forward(x, w, 4, false), want, kAtol, kRtol);
  // Query 0 sees the future now, so its output is not the causal one.
  const Tensor<3> causal = mha_by_hand(x, w, 4, true);
  CHECK(std::abs(want(0, 0, 0) - causal(0, 0, 0)) > 1e-3f);
}

TEST_CASE("the first position of a causal layer outputs its own value through w_o") {
  // Query 0 may only attend to key 0, so every head's weight there is 1 and the output is
  // x[0] @ w_v @ w_o, whatever w_q and w_k are. Here w_v = 2 I and w_o = I.
  const std::size_t C = 4;
  const Tensor<3> x = wiggly_input(2, 3, C);
  MhaWeights w = wiggly_weights(C);
  w.w_v = 2.0f * identity(C);
  w.w_o = identity(C);
  const Tensor<3> out = ex05::mha_forward(x, w, 2, true);
  REQUIRE(out.shape()[2] == C);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t c = 0; c < C; ++c) {
      CAPTURE(b);
      CAPTURE(c);
      CHECK(out(b, 0, c) == doctest::Approx(2.0 * static_cast<double>(x(b, 0, c))));
    }
}

TEST_CASE("head 1's queries and keys do not change head 0's columns") {
  // With w_o = I the output keeps the concatenation's columns: head 0 writes columns 0..1,
  // head 1 columns 2..3. Changing head 1's block of w_q and w_k (columns 2..3) must leave
  // columns 0..1 of the output alone and change columns 2..3.
  const std::size_t C = 4, T = 4;
  const Tensor<3> x = wiggly_input(1, T, C);
  MhaWeights w = wiggly_weights(C);
  w.w_o = identity(C);
  const Tensor<3> before = ex05::mha_forward(x, w, 2, true);
  for (std::size_t r = 0; r < C; ++r)
    for (std::size_t c = 2; c < C; ++c) {
      w.w_q(r, c) *= -3.0f;
      w.w_k(r, c) += 0.5f;
    }
  const Tensor<3> after = ex05::mha_forward(x, w, 2, true);
  const Tensor<3> head0_before = xt::view(before, xt::all(), xt::all(), xt::range(0, 2));
  const Tensor<3> head0_after = xt::view(after, xt::all(), xt::all(), xt::range(0, 2));
  CHECK_TENSOR_NEAR(head0_after, head0_before, 1e-6, 1e-6);
  double change = 0.0;
  for (std::size_t t = 1; t < T; ++t)  // t = 0 attends to itself only, whatever the scores
    for (std::size_t c = 2; c < C; ++c)
      change = std::max(change, std::abs(static_cast<double>(after(0, t, c) - before(0, t, c))));
  CHECK(change > 1e-3);
  CHECK_TENSOR_NEAR(after, mha_by_hand(x, w, 2, true), kAtol, kRtol);
}
}
