// tests/exercises/ch01_test.cpp: the tests of chapter 01's exercises (the bigram model).
// Don't edit: these tests check your exercises.
// Every expected value is computed here independently: by hand, with a naive loop, by finite
// differences, or as a frequency over many draws from a fixed seed.

#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/io/text.hpp"
#include "attn/core/xt.hpp"
#include "exercises.hpp"
#include "test_helpers.hpp"

namespace {

// Fraction of `n` draws from ex01::sample_logits that gave each id.
std::vector<double> frequencies(const std::vector<float>& logits, float temperature, std::size_t n,
                                std::uint64_t seed) {
  attn::Rng rng(seed);
  std::vector<double> freq(logits.size(), 0.0);
  std::size_t out_of_range = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const int id = ex01::sample_logits(logits, temperature, rng);
    if (id < 0 || static_cast<std::size_t>(id) >= logits.size()) {
      ++out_of_range;
      continue;
    }
    freq[static_cast<std::size_t>(id)] += 1.0 / static_cast<double>(n);
  }
  CHECK_MESSAGE(out_of_range == 0, "ids outside [0, V): " << out_of_range);
  return freq;
}

}  // namespace

TEST_SUITE("ex01.1 Encode and decode") {
// The vocabulary of "hello world", sorted: ' ' d e h l o r w -> ids 0 1 2 3 4 5 6 7.
TEST_CASE("encode gives each character its position in the sorted vocabulary") {
  const attn::Vocab vocab = attn::Vocab::from_text("hello world");
  CHECK(ex01::encode(vocab, "hello world") == std::vector<int>{3, 2, 4, 4, 5, 0, 7, 5, 6, 4, 1});
  CHECK(ex01::encode(vocab, "d") == std::vector<int>{1});
}

TEST_CASE("decode turns ids back into the characters they stand for") {
  const attn::Vocab vocab = attn::Vocab::from_text("hello world");
  CHECK(ex01::decode(vocab, std::vector<int>{7, 5, 6, 4, 1}) == "world");
  CHECK(ex01::decode(vocab, std::vector<int>{0}) == " ");
}

TEST_CASE("a character of two UTF-8 bytes is one token") {
  // "café au lait": ' ' a c f i l t u é, and é (U+00E9) sorts after every ASCII letter.
  const attn::Vocab vocab = attn::Vocab::from_text("caf\xC3\xA9 au lait");
  CHECK(ex01::encode(vocab, "caf\xC3\xA9") == std::vector<int>{2, 1, 3, 8});
  CHECK(ex01::decode(vocab, std::vector<int>{8}) == "\xC3\xA9");
}

TEST_CASE("decoding an encoding gives the text back") {
  const std::string text = "na\xC3\xAFve\ncaf\xC3\xA9, to be or not to be?\n";
  const attn::Vocab vocab = attn::Vocab::from_text(text);
  const std::vector<int> ids = ex01::encode(vocab, text);
  CHECK(ids.size() == 32);  // characters, not the 34 bytes
  CHECK(ex01::decode(vocab, ids) == text);
}

TEST_CASE("empty text encodes to no ids and back") {
  const attn::Vocab vocab = attn::Vocab::from_text("ab");
  CHECK(ex01::encode(vocab, "").empty());
  CHECK(ex01::decode(vocab, std::vector<int>{}).empty());
}

TEST_CASE("a character outside the vocabulary is an error, not a silent id") {
  const attn::Vocab vocab = attn::Vocab::from_text("hello world");
  CHECK_THROWS_AS(ex01::encode(vocab, "help"), std::invalid_argument);  // no 'p'
}
}

TEST_SUITE("ex01.2 Bigram counts") {
TEST_CASE("each neighbouring pair is counted in its row and column") {
  // pairs of 0 1 1 0 2: (0,1) (1,1) (1,0) (0,2)
  const std::vector<int> tokens{0, 1, 1, 0, 2};
  const attn::Matrix want{{0, 1, 1}, {1, 1, 0}, {0, 0, 0}};
  CHECK_TENSOR_NEAR(ex01::bigram_counts(tokens, 3), want, 0.0, 0.0);
}

TEST_CASE("the table is V by V even for characters that never occur") {
  const std::vector<int> tokens{1, 1, 1};
  attn::Matrix want = xt::zeros<float>({4, 4});
  want(1, 1) = 2;
  CHECK_TENSOR_NEAR(ex01::bigram_counts(tokens, 4), want, 0.0, 0.0);
}

TEST_CASE("rows count what follows and columns count what precedes") {
  // 50 tokens from a fixed pattern; row a must sum to the occurrences of a in tokens[0..48],
  // column b to the occurrences of b in tokens[1..49], and everything to 49 pairs.
  const std::size_t V = 5;
  std::vector<int> tokens;
  for (int i = 0; i < 50; ++i) tokens.push_back((i * i + 3 * i) % 7 % 5);
  const attn::Matrix counts = ex01::bigram_counts(tokens, V);
  REQUIRE(counts.shape()[0] == V);
  REQUIRE(counts.shape()[1] == V);
  double total = 0.0;
  for (std::size_t a = 0; a < V; ++a) {
    double row = 0.0, col = 0.0, as_first = 0.0, as_second = 0.0;
    for (std::size_t b = 0; b < V; ++b) {
      row += static_cast<double>(counts(a, b));
      col += static_cast<double>(counts(b, a));
    }
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
      as_first += tokens[i] == static_cast<int>(a) ? 1.0 : 0.0;
      as_second += tokens[i + 1] == static_cast<int>(a) ? 1.0 : 0.0;
    }
    CHECK(row == as_first);
    CHECK(col == as_second);
    total += row;
  }
  CHECK(total == 49.0);
}

TEST_CASE("a single token has no pairs") {
  const std::vector<int> tokens{2};
  const attn::Matrix want = xt::zeros<float>({3, 3});
  CHECK_TENSOR_NEAR(ex01::bigram_counts(tokens, 3), want, 0.0, 0.0);
}
}

TEST_SUITE("ex01.3 Cross-entropy and its gradient") {
TEST_CASE("uniform logits cost log V") {
  const attn::Matrix logits = xt::zeros<float>({2, 4});
  const std::vector<int> targets{0, 3};
  CHECK(ex01::cross_entropy(logits, targets) == doctest::Approx(std::log(4.0)).epsilon(1e-6));
}

TEST_CASE("a hand-computed loss: -log softmax at the target, averaged over rows") {
  // softmax([1, 2, 3]) = [0.0900, 0.2447, 0.6652]; -log 0.0900 = 2.4076, -log 0.6652 = 0.4076
  const attn::Matrix logits{{1, 2, 3}, {1, 2, 3}};
  CHECK(ex01::cross_entropy(logits, std::vector<int>{0, 0}) ==
        doctest::Approx(2.4076059644).epsilon(1e-5));
  CHECK(ex01::cross_entropy(logits, std::vector<int>{0, 2}) ==
        doctest::Approx(1.4076059644).epsilon(1e-5));
}

TEST_CASE("large logits do not overflow") {
  // -log softmax([1000, 1001])[1] = log(1 + e^-1); -log softmax([-1000, 0])[0] = about 1000
  const attn::Matrix big{{1000, 1001}};
  CHECK(ex01::cross_entropy(big, std::vector<int>{1}) ==
        doctest::Approx(0.3132616875).epsilon(1e-5));
  const attn::Matrix far{{-1000, 0}};
  CHECK(ex01::cross_entropy(far, std::vector<int>{0}) == doctest::Approx(1000.0).epsilon(1e-6));
  const attn::Matrix grad = ex01::cross_entropy_grad(big, std::vector<int>{1});
  const attn::Matrix want{{0.2689414214f, -0.2689414214f}};
  CHECK_TENSOR_NEAR(grad, want, 1e-6, 0.0);
}

TEST_CASE("the gradient is softmax minus one-hot, divided by N") {
  const attn::Matrix one = xt::zeros<float>({1, 4});
  const attn::Matrix want_one{{0.25f, 0.25f, -0.75f, 0.25f}};
  CHECK_TENSOR_NEAR(ex01::cross_entropy_grad(one, std::vector<int>{2}), want_one, 1e-7, 0.0);
  const attn::Matrix two = xt::zeros<float>({2, 4});
  const attn::Matrix want_two{{0.125f, 0.125f, -0.375f, 0.125f}, {-0.375f, 0.125f, 0.125f, 0.125f}};
  CHECK_TENSOR_NEAR(ex01::cross_entropy_grad(two, std::vector<int>{2, 0}), want_two, 1e-7, 0.0);
}

TEST_CASE("the gradient matches finite differences of the loss") {
  attn::Rng rng(7);
  const attn::Matrix logits = attn::randn(rng, 3, 5);
  const std::vector<int> targets{4, 0, 2};
  const attn::Matrix grad = ex01::cross_entropy_grad(logits, targets);
  REQUIRE(grad.shape() == logits.shape());
  const float h = 1e-2f;
  for (std::size_t n = 0; n < 3; ++n) {
    for (std::size_t j = 0; j < 5; ++j) {
      attn::Matrix plus = logits, minus = logits;
      plus(n, j) += h;
      minus(n, j) -= h;
      const double numeric =
          (ex01::cross_entropy(plus, targets) - ex01::cross_entropy(minus, targets)) /
          (2.0 * static_cast<double>(h));
      CAPTURE(n);
      CAPTURE(j);
      CHECK(std::abs(static_cast<double>(grad(n, j)) - numeric) < 2e-3);
    }
  }
}

TEST_CASE("each row of the gradient sums to zero") {
  attn::Rng rng(11);
  const attn::Matrix logits = attn::randn(rng, 4, 6, 3.0f);
  const attn::Matrix grad = ex01::cross_entropy_grad(logits, std::vector<int>{5, 1, 1, 0});
  REQUIRE(grad.shape() == logits.shape());
  for (std::size_t n = 0; n < 4; ++n) {
    double sum = 0.0;
    for (std::size_t j = 0; j < 6; ++j) sum += static_cast<double>(grad(n, j));
    CHECK(std::abs(sum) < 1e-6);
  }
}
}

TEST_SUITE("ex01.4 Sampling with temperature") {
// logits log(1..4): softmax at temperature 1 is [0.1, 0.2, 0.3, 0.4]. With 20000 draws the
// standard error of a frequency is below 0.0035, so a tolerance of 0.015 never flakes.
const std::vector<float> logits{std::log(1.0f), std::log(2.0f), std::log(3.0f), std::log(4.0f)};

TEST_CASE("at temperature 1 the draws follow softmax of the logits") {
  const std::vector<double> freq = frequencies(logits, 1.0f, 20000, 1234);
  const std::vector<double> want{0.1, 0.2, 0.3, 0.4};
  for (std::size_t j = 0; j < 4; ++j) {
    CAPTURE(j);
    CHECK(std::abs(freq[j] - want[j]) < 0.015);
  }
}

TEST_CASE("temperature one half squares the probabilities and renormalises them") {
  // softmax(2 * log p) is p^2 / sum p^2 = [1, 4, 9, 16] / 30
  const std::vector<double> freq = frequencies(logits, 0.5f, 20000, 99);
  const std::vector<double> want{1.0 / 30, 4.0 / 30, 9.0 / 30, 16.0 / 30};
  for (std::size_t j = 0; j < 4; ++j) {
    CAPTURE(j);
    CHECK(std::abs(freq[j] - want[j]) < 0.015);
  }
}

TEST_CASE("a high temperature flattens the draws toward uniform") {
  // at temperature 100, p_j is proportional to j^(1/100): all four within 0.002 of 0.25
  std::vector<double> want;
  for (double j = 1; j <= 4; ++j) want.push_back(std::pow(j, 0.01));
  const double sum = std::accumulate(want.begin(), want.end(), 0.0);
  const std::vector<double> freq = frequencies(logits, 100.0f, 20000, 5);
  for (std::size_t j = 0; j < 4; ++j) {
    CAPTURE(j);
    CHECK(std::abs(freq[j] - want[j] / sum) < 0.015);
  }
}

TEST_CASE("a tiny temperature always picks the largest logit, without overflow") {
  // 2.0 / 0.001 = 2000: exp(2000) overflows unless the maximum is subtracted first
  const std::vector<float> close{0.5f, 2.0f, 1.9f, -1.0f};
  const std::vector<double> freq = frequencies(close, 1e-3f, 1000, 3);
  CHECK(freq[1] == doctest::Approx(1.0));
}

TEST_CASE("the same seed gives the same draws") {
  attn::Rng first(42), second(42);
  std::vector<int> a, b;
  for (int i = 0; i < 200; ++i) {
    a.push_back(ex01::sample_logits(logits, 1.0f, first));
    b.push_back(ex01::sample_logits(logits, 1.0f, second));
  }
  CHECK(a == b);
}
}
