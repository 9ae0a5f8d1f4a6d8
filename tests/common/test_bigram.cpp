// Tests for attn/model/bigram.hpp: the bigram model, counted and learned (chapter 01).
// Counting is checked on a sequence small enough to count by hand; learning on a synthetic
// first-order Markov chain, where the counting table is the best any bigram table can do, so
// gradient descent must come close to it.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attn/model/bigram.hpp"
#include "attn/ops/loss.hpp"
#include "attn/core/random.hpp"
#include "test_helpers.hpp"

namespace {

// n tokens from the Markov chain with transition probabilities `P` (V, V), starting at 0.
std::vector<int> markov_chain(const attn::Matrix& P, std::size_t n, attn::Rng& rng) {
  const std::size_t V = P.shape()[0];
  std::vector<int> tokens = {0};
  while (tokens.size() < n) {
    const auto a = static_cast<std::size_t>(tokens.back());
    tokens.push_back(static_cast<int>(rng.categorical({P.data() + a * V, V})));
  }
  return tokens;
}

// A 5-token chain with a mix of sharp and flat rows.
attn::Matrix chain_transitions() {
  return {{0.05f, 0.80f, 0.05f, 0.05f, 0.05f},
          {0.30f, 0.10f, 0.30f, 0.20f, 0.10f},
          {0.20f, 0.20f, 0.20f, 0.20f, 0.20f},
          {0.60f, 0.00f, 0.00f, 0.00f, 0.40f},
          {0.10f, 0.10f, 0.60f, 0.10f, 0.10f}};
}

}  // namespace

TEST_SUITE("bigram") {

TEST_CASE("counts of a tiny sequence, by hand") {
  // pairs: (0,1) (1,1) (1,2) (2,0) (0,1)
  const std::vector<int> tokens = {0, 1, 1, 2, 0, 1};
  const attn::Matrix want = {{0.0f, 2.0f, 0.0f}, {0.0f, 1.0f, 1.0f}, {1.0f, 0.0f, 0.0f}};
  CHECK_TENSOR_NEAR(attn::bigram_counts(tokens, 3), want, 0.0, 0.0);
  CHECK(xt::sum(attn::bigram_counts(tokens, 4))() == 5.0f);  // a larger V only adds zeros
  CHECK(xt::sum(attn::bigram_counts(std::vector<int>{2}, 3))() == 0.0f);  // one token, no pair
}

TEST_CASE("logits from counts are log-probabilities with add-alpha smoothing") {
  const attn::Matrix counts = {{0.0f, 2.0f, 0.0f}, {0.0f, 1.0f, 1.0f}, {1.0f, 0.0f, 0.0f}};
  const attn::Matrix logits = attn::bigram_logits_from_counts(counts, 1.0f);
  // row 0: (0+1, 2+1, 0+1) / 5
  CHECK(logits(0, 0) == doctest::Approx(std::log(0.2)));
  CHECK(logits(0, 1) == doctest::Approx(std::log(0.6)));
  CHECK(logits(2, 0) == doctest::Approx(std::log(0.5)));
  for (std::size_t a = 0; a < 3; ++a) {
    double sum = 0.0;
    for (std::size_t b = 0; b < 3; ++b) {
      CHECK(logits(a, b) < 0.0f);
      sum += std::exp(static_cast<double>(logits(a, b)));
    }
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
  }
  // a row never seen becomes uniform
  const attn::Matrix unseen = attn::bigram_logits_from_counts(xt::zeros<float>({4, 4}), 0.5f);
  for (const float l : unseen) CHECK(l == doctest::Approx(std::log(0.25)));
}

TEST_CASE("the counting table scores better than the uniform table, which scores log V") {
  attn::Rng rng(7);
  const std::vector<int> tokens = markov_chain(chain_transitions(), 5000, rng);
  const attn::Matrix zeros = xt::zeros<float>({5, 5});
  CHECK(attn::bigram_loss(zeros, tokens) == doctest::Approx(std::log(5.0)).epsilon(1e-9));
  const attn::Matrix counted =
      attn::bigram_logits_from_counts(attn::bigram_counts(tokens, 5), 1.0f);
  CHECK(attn::bigram_loss(counted, tokens) < attn::bigram_loss(zeros, tokens) - 0.2);
}

TEST_CASE("bigram_loss equals the cross-entropy of every prediction, one by one") {
  attn::Rng rng(8);
  const std::vector<int> tokens = markov_chain(chain_transitions(), 300, rng);
  const attn::Matrix table = attn::randn(rng, 5, 5, 2.0f);
  // The slow way: gather the table row of every input token, (n - 1, V), then cross_entropy.
  attn::Matrix rows(attn::Matrix::shape_type{tokens.size() - 1, 5});
  std::vector<int> targets;
  for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
    for (std::size_t b = 0; b < 5; ++b) rows(i, b) = table(static_cast<std::size_t>(tokens[i]), b);
    targets.push_back(tokens[i + 1]);
  }
  CHECK(attn::bigram_loss(table, tokens) ==
        doctest::Approx(attn::cross_entropy(rows, targets)).epsilon(1e-6));
}

TEST_CASE("counting with a tiny alpha reaches the empirical conditional entropy") {
  attn::Rng rng(9);
  const std::vector<int> tokens = markov_chain(chain_transitions(), 4000, rng);
  const attn::Matrix counts = attn::bigram_counts(tokens, 5);
  // H = -(1/N) sum_ab n_ab log(n_ab / n_a), the lowest loss any table can reach on this stream
  double h = 0.0;
  for (std::size_t a = 0; a < 5; ++a) {
    double n_a = 0.0;
    for (std::size_t b = 0; b < 5; ++b) n_a += static_cast<double>(counts(a, b));
    for (std::size_t b = 0; b < 5; ++b) {
      const double n_ab = static_cast<double>(counts(a, b));
      if (n_ab > 0.0) h -= n_ab * std::log(n_ab / n_a);
    }
  }
  h /= static_cast<double>(tokens.size() - 1);
  const attn::Matrix counted = attn::bigram_logits_from_counts(counts, 1e-6f);
  CHECK(attn::bigram_loss(counted, tokens) == doctest::Approx(h).epsilon(1e-5));
}

TEST_CASE("gradient descent from zeros approaches the counting optimum of a Markov chain") {
  attn::Rng data_rng(10);
  const attn::Matrix P = chain_transitions();
  attn::Split split;
  split.train = markov_chain(P, 40000, data_rng);
  split.val = markov_chain(P, 5000, data_rng);
  const attn::Matrix optimum =
      attn::bigram_logits_from_counts(attn::bigram_counts(split.train, 5), 1.0f);
  const double optimum_val = attn::bigram_loss(optimum, split.val);

  attn::Matrix table = xt::zeros<float>({5, 5});
  attn::Rng rng(1337);
  const attn::BigramTrainConfig config;  // the defaults the chapter uses
  std::vector<attn::BigramReport> reports;
  attn::train_bigram(table, split, config, rng,
                     [&](const attn::BigramReport& r) { reports.push_back(r); });

  REQUIRE(reports.size() == 1 + config.steps / config.eval_interval);
  CHECK(reports.front().step == 0);
  CHECK(reports.front().val_loss == doctest::Approx(std::log(5.0)));  // zeros: uniform
  CHECK(reports.back().step == config.steps);
  CHECK(reports.back().train_loss == doctest::Approx(attn::bigram_loss(table, split.train)));
  CHECK(reports.back().val_loss == doctest::Approx(attn::bigram_loss(table, split.val)));
  CHECK(reports.back().val_loss < optimum_val + 0.01);
  CHECK(reports.back().val_loss < reports.front().val_loss - 0.3);
}

TEST_CASE("reports come at step 0, every eval_interval steps and after the last step") {
  attn::Rng data_rng(11);
  attn::Split split;
  split.train = markov_chain(chain_transitions(), 200, data_rng);
  split.val = markov_chain(chain_transitions(), 50, data_rng);
  attn::Matrix table = xt::zeros<float>({5, 5});
  attn::BigramTrainConfig config;
  config.steps = 10;
  config.eval_interval = 4;
  std::vector<std::size_t> steps;
  attn::Rng rng(1);
  attn::train_bigram(table, split, config, rng,
                     [&](const attn::BigramReport& r) { steps.push_back(r.step); });
  CHECK(steps == std::vector<std::size_t>{0, 4, 8, 10});
  attn::train_bigram(table, split, config, rng);  // no callback is fine too
}

TEST_CASE("training is reproducible with a seed") {
  attn::Rng data_rng(12);
  attn::Split split;
  split.train = markov_chain(chain_transitions(), 500, data_rng);
  split.val = markov_chain(chain_transitions(), 100, data_rng);
  attn::BigramTrainConfig config;
  config.steps = 50;
  attn::Matrix a = xt::zeros<float>({5, 5});
  attn::Matrix b = xt::zeros<float>({5, 5});
  attn::Rng rng_a(5);
  attn::Rng rng_b(5);
  attn::train_bigram(a, split, config, rng_a);
  attn::train_bigram(b, split, config, rng_b);
  CHECK_TENSOR_NEAR(a, b, 0.0, 0.0);
}

TEST_CASE("generation is reproducible with a seed and only emits valid ids") {
  attn::Rng rng(13);
  const attn::Matrix table = attn::randn(rng, 7, 7, 1.5f);
  attn::Rng a(42);
  attn::Rng b(42);
  const std::vector<int> first = attn::bigram_generate(table, 3, 200, 1.0f, a);
  const std::vector<int> second = attn::bigram_generate(table, 3, 200, 1.0f, b);
  CHECK(first.size() == 200);
  CHECK(first == second);
  for (const int id : first) CHECK((id >= 0 && id < 7));
  CHECK(attn::bigram_generate(table, 0, 0, 1.0f, a).empty());
}

TEST_CASE("generation follows the table: a deterministic cycle comes out exactly") {
  // Row a allows only a + 1 (mod 4): every other next token has logit -inf.
  const float inf = std::numeric_limits<float>::infinity();
  attn::Matrix table = xt::zeros<float>({4, 4});
  for (std::size_t a = 0; a < 4; ++a)
    for (std::size_t b = 0; b < 4; ++b)
      if (b != (a + 1) % 4) table(a, b) = -inf;
  attn::Rng rng(1);
  CHECK(attn::bigram_generate(table, 2, 6, 1.0f, rng) == std::vector<int>{3, 0, 1, 2, 3, 0});
}

TEST_CASE("bad inputs are errors that say what is wrong") {
  const std::vector<int> tokens = {0, 1, 2};
  CHECK_THROWS_WITH_AS(attn::bigram_counts(tokens, 2),
                       "attn::bigram_counts: expected token ids in [0, 2), got 2 at index 2",
                       std::invalid_argument);
  CHECK_THROWS_AS(attn::bigram_counts(std::vector<int>{-1, 0}, 2), std::invalid_argument);
  CHECK_THROWS_AS(attn::bigram_counts(tokens, 0), std::invalid_argument);

  const attn::Matrix counts = xt::zeros<float>({3, 3});
  CHECK_THROWS_AS(attn::bigram_logits_from_counts(counts, 0.0f), std::invalid_argument);
  CHECK_THROWS_AS(attn::bigram_logits_from_counts(counts, -1.0f), std::invalid_argument);
  CHECK_THROWS_WITH_AS(attn::bigram_logits_from_counts(xt::zeros<float>({3, 4}), 1.0f),
                       "attn::bigram_logits_from_counts: expected counts of shape (V, V) with "
                       "V >= 1, got (3, 4)",
                       std::invalid_argument);

  CHECK_THROWS_AS(attn::bigram_loss(counts, std::vector<int>{1}), std::invalid_argument);
  CHECK_THROWS_AS(attn::bigram_loss(counts, std::vector<int>{1, 3}), std::invalid_argument);

  attn::Split split;
  split.train.assign(100, 1);
  split.val = {0, 1, 2, 0, 1};
  attn::Matrix table = xt::zeros<float>({3, 3});
  attn::Rng rng(1);
  attn::BigramTrainConfig config;
  CHECK_THROWS_WITH_AS(attn::train_bigram(table, split, config, rng),
                       "attn::train_bigram: the validation split has 5 tokens, but block_size + 1 "
                       "= 9 are needed",
                       std::invalid_argument);
  split.val.assign(20, 2);
  const auto fails_with_zero = [&](std::size_t attn::BigramTrainConfig::*field) {
    attn::BigramTrainConfig bad = config;
    bad.*field = 0;
    CHECK_THROWS_AS(attn::train_bigram(table, split, bad, rng), std::invalid_argument);
  };
  fails_with_zero(&attn::BigramTrainConfig::steps);
  fails_with_zero(&attn::BigramTrainConfig::batch_size);
  fails_with_zero(&attn::BigramTrainConfig::block_size);
  fails_with_zero(&attn::BigramTrainConfig::eval_interval);
  attn::BigramTrainConfig bad_lr = config;
  bad_lr.learning_rate = 0.0f;
  CHECK_THROWS_AS(attn::train_bigram(table, split, bad_lr, rng), std::invalid_argument);
  split.val.push_back(7);  // a token outside [0, 3)
  CHECK_THROWS_AS(attn::train_bigram(table, split, config, rng), std::invalid_argument);
  attn::Matrix not_square = xt::zeros<float>({3, 4});
  CHECK_THROWS_AS(attn::train_bigram(not_square, split, config, rng), std::invalid_argument);

  CHECK_THROWS_WITH_AS(attn::bigram_generate(table, 0, 5, 0.0f, rng),
                       "attn::bigram_generate: temperature must be > 0, got 0",
                       std::invalid_argument);
  CHECK_THROWS_AS(attn::bigram_generate(table, 3, 5, 1.0f, rng), std::invalid_argument);
  CHECK_THROWS_AS(attn::bigram_generate(table, -1, 5, 1.0f, rng), std::invalid_argument);
  // A sampler that returns V (one past the last token, a learner's off-by-one) is named, not
  // followed into a row past the table.
  const attn::SampleFn one_past = [](std::span<const float> row, float, attn::Rng&) {
    return static_cast<int>(row.size());
  };
  CHECK_THROWS_WITH_AS(attn::bigram_generate(table, 0, 5, 1.0f, rng, one_past),
                       "attn::bigram_generate: the sampler returned token 3, outside [0, 3) (the "
                       "table's rows)",
                       std::invalid_argument);
}

}  // TEST_SUITE
