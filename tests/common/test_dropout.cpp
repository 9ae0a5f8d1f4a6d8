// Tests for attn/ops/dropout.hpp: inverted dropout (chapter 09), and where the model applies it:
// the block's attention and FFN outputs in the training forward only. The mask is checked against
// its definition (values, keep rate, determinism), the forward and backward against naive loops
// and central differences, the block and the language model against central differences with a
// fixed mask; a backward that forgets the mask must fail the same check.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/model/block.hpp"
#include "attn/model/model.hpp"
#include "attn/ops/dropout.hpp"
#include "attn/train/gradcheck.hpp"
#include "attn/train/train.hpp"
#include "gradcheck_helpers.hpp"
#include "test_fixtures.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Tensor;
using attn::with_choices;
using attn::testing::block_config;
using attn::testing::check_caught;
using attn::testing::check_gradients;
using attn::testing::cspan_of;
using attn::testing::random_ids;
using attn::testing::random_lm;
using attn::testing::rechoose;
using attn::testing::span_of;
using E = std::invalid_argument;

}  // namespace

TEST_SUITE("common.dropout") {
TEST_CASE("the mask holds only 0 and 1 / (1 - p), keeps about 1 - p, and averages 1") {
  for (const float p : {0.1f, 0.2f, 0.5f, 0.9f}) {
    attn::Rng rng(7);
    const std::size_t n = 200000;
    std::vector<float> mask(n);
    attn::dropout_mask(rng, p, mask);
    const float scale = 1.0f / (1.0f - p);
    std::size_t kept = 0;
    double sum = 0.0;
    for (const float m : mask) {
      CHECK((m == 0.0f || m == scale));
      kept += m != 0.0f ? 1 : 0;
      sum += static_cast<double>(m);
    }
    // The kept count is Binomial(n, 1 - p): within 5 standard deviations.
    const double q = static_cast<double>(p);
    const double want = static_cast<double>(n) * (1.0 - q);
    const double sd = std::sqrt(static_cast<double>(n) * q * (1.0 - q));
    INFO("p = " << p << ", kept " << kept << " of " << n);
    CHECK(std::abs(static_cast<double>(kept) - want) < 5.0 * sd);
    CHECK(std::abs(sum / static_cast<double>(n) - 1.0) <
          5.0 * sd * static_cast<double>(scale) / static_cast<double>(n));
  }
}

TEST_CASE("the mask is the generator's: one uniform draw per value, u >= p kept") {
  attn::Rng a(42), b(42);
  const float p = 0.3f;
  const Tensor<3> mask = attn::dropout_mask(a, p, {2, 3, 4});
  for (std::size_t i = 0; i < mask.size(); ++i) {
    const float u = b.uniform();
    CHECK(mask.data()[i] == (u >= p ? 1.0f / (1.0f - p) : 0.0f));
  }
  CHECK(a.next_u32() == b.next_u32());  // the same number of draws
  // p = 0: all ones, no draw at all.
  attn::Rng c(42), d(42);
  const Tensor<3> ones = attn::dropout_mask(c, 0.0f, {2, 3, 4});
  for (const float m : ones) CHECK(m == 1.0f);
  CHECK(c.next_u32() == d.next_u32());
}

TEST_CASE("p outside [0, 1) is refused by name") {
  attn::Rng rng(1);
  std::vector<float> mask(4);
  CHECK_THROWS_WITH_AS(attn::dropout_mask(rng, 1.0f, mask),
                       "attn::dropout_mask: p = 1 is outside [0, 1)", E);
  CHECK_THROWS_WITH_AS(attn::dropout_mask(rng, -0.1f, mask),
                       "attn::dropout_mask: p = -0.1 is outside [0, 1)", E);
  CHECK_THROWS_AS(attn::dropout_mask(rng, std::numeric_limits<float>::quiet_NaN(), mask), E);
  // A model's p is checked once, when its spec is resolved (lm_init takes a resolved spec).
  attn::ModelChoices config;
  config.dropout = 1.5f;
  CHECK_THROWS_WITH_AS(attn::resolve_spec(config),
                       "dropout must be in [0, 1), the probability of zeroing a value, got 1.5",
                       attn::SpecError);
  config.dropout = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_AS(attn::resolve_spec(config), attn::SpecError);
}

TEST_CASE("forward multiplies by the mask, backward passes dy through the same mask") {
  attn::Rng rng(3);
  Tensor<3> x = attn::randn<3>(rng, {2, 3, 5});
  const Tensor<3> mask = attn::dropout_mask(rng, 0.4f, {2, 3, 5});
  const Tensor<3> y = attn::dropout_forward(x, mask);
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(y.data()[i] == x.data()[i] * mask.data()[i]);
  const Tensor<3> r = attn::testing::upstream(y, 11);  // L = sum(y * r)
  const Tensor<3> dx = attn::dropout_backward(r, mask);
  check_gradients(
      "dropout",
      attn::grad_check(
          [&] { return attn::weighted_sum(cspan_of(attn::dropout_forward(x, mask)), cspan_of(r)); },
          {{"x", span_of(x), cspan_of(dx)}}));
  // A backward that forgets the mask (dx = dy) fails the same check.
  check_caught(
      "dropout (mask forgotten)",
      attn::grad_check(
          [&] { return attn::weighted_sum(cspan_of(attn::dropout_forward(x, mask)), cspan_of(r)); },
          {{"x", span_of(x), cspan_of(r)}}));
  const Tensor<3> wrong = attn::dropout_mask(rng, 0.4f, {2, 3, 4});
  CHECK_THROWS_AS(attn::dropout_forward(x, wrong), E);
}
}

namespace {

attn::BlockWeights random_block(attn::Rng& rng, std::size_t C, std::size_t F) {
  attn::BlockWeights w = attn::block_init(rng, C, F);
  for (auto* m : {&w.attn.w_q, &w.attn.w_k, &w.attn.w_v, &w.attn.w_o, &w.ffn.w1, &w.ffn.w2})
    for (float& v : *m) v = rng.normal(0.0f, 0.4f);
  for (auto* v : {&w.ln1_gamma, &w.ln2_gamma})
    for (float& x : *v) x = 1.0f + rng.normal(0.0f, 0.2f);
  for (auto* v : {&w.ln1_beta, &w.ln2_beta, &w.ffn.b1, &w.ffn.b2})
    for (float& x : *v) x = rng.normal(0.0f, 0.2f);
  return w;
}

std::vector<attn::GradTensor> block_tensors(attn::BlockWeights& w, const attn::BlockWeights& g) {
  return {{"w_q", span_of(w.attn.w_q), cspan_of(g.attn.w_q)},
          {"w_v", span_of(w.attn.w_v), cspan_of(g.attn.w_v)},
          {"w_o", span_of(w.attn.w_o), cspan_of(g.attn.w_o)},
          {"ln1_gamma", span_of(w.ln1_gamma), cspan_of(g.ln1_gamma)},
          {"ln2_beta", span_of(w.ln2_beta), cspan_of(g.ln2_beta)},
          {"w1", span_of(w.ffn.w1), cspan_of(g.ffn.w1)},
          {"w2", span_of(w.ffn.w2), cspan_of(g.ffn.w2)},
          {"b2", span_of(w.ffn.b2), cspan_of(g.ffn.b2)}};
}

}  // namespace

TEST_SUITE("common.dropout") {
TEST_CASE("the block with dropout matches central differences under a fixed mask") {
  for (const attn::NormPlacement norm : {attn::NormPlacement::pre, attn::NormPlacement::post}) {
    attn::Rng rng(norm == attn::NormPlacement::pre ? 20 : 21);
    const std::size_t C = 8, F = 16;
    attn::BlockConfig cfg = block_config(C, 2, [](attn::ModelChoices& m) { m.dropout = 0.3f; });
    cfg.norm = norm;
    attn::BlockWeights w = random_block(rng, C, F);
    Tensor<3> x = attn::randn<3>(rng, {2, 4, C});
    attn::BlockCache cache;
    attn::Rng masks(5);
    const Tensor<3> out = attn::block_forward(x, w, cfg, cache, &masks);  // draws the masks
    REQUIRE(cache.drop_attn.shape() == x.shape());
    REQUIRE(cache.drop_ffn.shape() == x.shape());
    // Both masks dropped something, so the check sees dropped and kept values.
    CHECK(xt::amin(cache.drop_attn)() == 0.0f);
    CHECK(xt::amin(cache.drop_ffn)() == 0.0f);
    // The training forward differs from the evaluation forward, which never drops.
    const Tensor<3> eval = attn::block_forward(x, w, cfg).out;
    CHECK(xt::amax(xt::abs(out - eval))() > 1e-3f);
    const Tensor<3> r = attn::testing::upstream(out, 9);
    Tensor<3> dx;
    attn::BlockWeights g = attn::block_zeros_like(w);
    attn::block_backward(r, cache, w, cfg, dx, g);
    // L(theta) = sum(block_forward(x; theta, the same masks) * r).
    const auto loss = [&] {
      attn::BlockCache fixed = cache;  // the masks travel with the cache; no generator
      return attn::weighted_sum(cspan_of(attn::block_forward(x, w, cfg, fixed)), cspan_of(r));
    };
    std::vector<attn::GradTensor> tensors = block_tensors(w, g);
    tensors.insert(tensors.begin(), {"x", span_of(x), cspan_of(dx)});
    const std::string name = std::string("block dropout ") + std::string(attn::norm_name(norm));
    check_gradients(name, attn::grad_check(loss, tensors));
    // The backward of a block without dropout (mask forgotten) must fail the same check.
    const attn::BlockConfig no_drop =
        rechoose(cfg, [](attn::ModelChoices& m) { m.dropout = 0.0f; });
    attn::BlockCache plain;
    (void)attn::block_forward(x, w, no_drop, plain);
    Tensor<3> dx_wrong;
    attn::BlockWeights g_wrong = attn::block_zeros_like(w);
    attn::block_backward(r, plain, w, no_drop, dx_wrong, g_wrong);
    std::vector<attn::GradTensor> wrong = block_tensors(w, g_wrong);
    wrong.insert(wrong.begin(), {"x", span_of(x), cspan_of(dx_wrong)});
    check_caught(name + " (mask forgotten)", attn::grad_check(loss, wrong));
  }
}

TEST_CASE("dropout 0 is the block without dropout, bit for bit, and keeps no mask") {
  attn::Rng rng(30);
  const attn::BlockWeights w = random_block(rng, 8, 32);
  const Tensor<3> x = attn::randn<3>(rng, {2, 5, 8});
  attn::BlockConfig cfg = block_config(8, 2);
  attn::BlockCache cache;
  attn::Rng masks(1), untouched(1);
  const Tensor<3> out = attn::block_forward(x, w, cfg, cache, &masks);
  CHECK_TENSOR_NEAR(out, attn::block_forward(x, w, cfg).out, 0.0, 0.0);
  CHECK(cache.drop_attn.size() + cache.drop_ffn.size() == 0);
  CHECK(masks.next_u32() == untouched.next_u32());  // nothing drawn
  CHECK(attn::activation_floats(cache) == attn::block_activation_floats(2, 5, 8, 32, 2, cfg));
  // With dropout the two masks are counted, by both.
  cfg = rechoose(cfg, [](attn::ModelChoices& m) { m.dropout = 0.2f; });
  (void)attn::block_forward(x, w, cfg, cache, &masks);
  CHECK(attn::activation_floats(cache) == attn::block_activation_floats(2, 5, 8, 32, 2, cfg));
}

TEST_CASE("a block asked to reuse masks it does not hold says so") {
  attn::Rng rng(31);
  const attn::BlockWeights w = random_block(rng, 8, 32);
  const Tensor<3> x = attn::randn<3>(rng, {1, 3, 8});
  const attn::BlockConfig cfg = block_config(8, 2, [](attn::ModelChoices& m) { m.dropout = 0.1f; });
  attn::BlockCache cache;
  CHECK_THROWS_WITH_AS(attn::block_forward(x, w, cfg, cache),
                       "attn::block_forward: expected a generator for dropout, or a fixed "
                       "drop_attn of shape (1, 3, 8), got drop_attn (0, 0, 0)",
                       E);
}
}

TEST_SUITE("common.dropout") {
TEST_CASE("the language model with dropout matches central differences under fixed masks") {
  attn::ModelChoices choices = attn::testing::lm_choices(7, 5, 4, 2, 2);
  choices.ablations.tied_head = false;
  choices.activation = attn::Activation::gelu;
  choices.dropout = 0.25f;
  const attn::ModelSpec config = attn::resolve_spec(choices);
  attn::Rng rng(40);
  attn::LmWeights w = random_lm(rng, config);
  const auto tokens = random_ids(rng, 2, 4, 7);
  const auto targets = random_ids(rng, 2, 4, 7);
  attn::LmWeights g = attn::lm_zeros_like(w);
  attn::LmCache cache;
  cache.dropout_rng = attn::Rng(8);
  const double loss = attn::lm_forward_backward(tokens, targets, w, config, g, cache);
  // The training loss is not the evaluation loss (lm_loss never drops)...
  CHECK(std::abs(loss - attn::lm_loss(tokens, targets, w, config)) > 1e-4);
  // ...and the evaluation loss does not depend on p at all.
  const attn::ModelSpec no_drop =
      attn::with_choices(config, [](attn::ModelChoices& m) { m.dropout = 0.0f; });
  CHECK(attn::lm_loss(tokens, targets, w, config) == attn::lm_loss(tokens, targets, w, no_drop));
  cache.fixed_dropout_masks = true;  // every evaluation below reuses the masks just drawn
  attn::LmCache eval_cache = cache;
  attn::LmWeights scratch = attn::lm_zeros_like(w);
  const auto fixed_loss = [&] {
    return attn::lm_forward_backward(tokens, targets, w, config, scratch, eval_cache);
  };
  CHECK(fixed_loss() == loss);
  attn::LmWeights g_view = g;
  const std::vector<attn::NamedTensor> params = attn::lm_parameters(w);
  const std::vector<attn::NamedTensor> grads = attn::lm_parameters(g_view);
  std::vector<attn::GradTensor> tensors;
  for (std::size_t i = 0; i < params.size(); ++i)
    tensors.push_back({params[i].name, params[i].values, grads[i].values});
  attn::GradCheckOptions options;
  options.h = 1e-3;
  check_gradients("lm dropout 0.25", attn::grad_check(fixed_loss, tensors, options));
}

TEST_CASE("a training step's masks depend on the seed and the step only") {
  attn::TrainConfig c;
  attn::ModelChoices m = attn::testing::lm_choices(7, 4, 8, 2, 1);
  m.dropout = 0.2f;
  c.model = attn::resolve_spec(m);
  c.batch_size = 2;
  c.steps = 3;
  attn::Rng rng(50);
  const auto x = random_ids(rng, 2, 4, 7);
  const auto y = random_ids(rng, 2, 4, 7);
  attn::TrainState a = attn::train_init(c);
  attn::TrainState b = attn::train_init(c);
  (void)attn::train_step_on(a, c, x, y);
  (void)attn::train_step_on(b, c, x, y);
  // Another generator left in b's cache changes nothing: each step reseeds it.
  b.cache.dropout_rng = attn::Rng(999);
  const double la = attn::train_step_on(a, c, x, y).loss;
  const double lb = attn::train_step_on(b, c, x, y).loss;
  CHECK(la == lb);
  CHECK_TENSOR_NEAR(a.cache.blocks[0].drop_attn, b.cache.blocks[0].drop_attn, 0.0, 0.0);
  // Step 2's attention mask is the first B*T*C draws of dropout_rng_for(seed, 2).
  attn::Rng want = attn::dropout_rng_for(c.seed, 2);
  const Tensor<3> mask = attn::dropout_mask(want, 0.2f, {2, 4, 8});
  CHECK_TENSOR_NEAR(a.cache.blocks[0].drop_attn, mask, 0.0, 0.0);
}

TEST_CASE("SGD moves every weight by lr times its gradient") {
  attn::TrainConfig c;
  c.model = attn::testing::lm_config(5, 3, 4, 1, 1);
  c.batch_size = 2;
  c.schedule.lr = 0.1f;
  c.optimizer = attn::Optimizer::sgd;
  attn::Rng rng(60);
  const auto x = random_ids(rng, 2, 3, 5);
  const auto y = random_ids(rng, 2, 3, 5);
  attn::TrainState s = attn::train_init(c);
  const attn::LmWeights before = s.weights;
  (void)attn::train_step_on(s, c, x, y);
  attn::LmWeights b = before, after = s.weights, g = s.grads;
  const auto pb = attn::lm_parameters(b), pa = attn::lm_parameters(after),
             pg = attn::lm_parameters(g);
  for (std::size_t i = 0; i < pb.size(); ++i)
    for (std::size_t j = 0; j < pb[i].values.size(); ++j)
      CHECK(pa[i].values[j] == pb[i].values[j] - 0.1f * pg[i].values[j]);
  CHECK(attn::parse_optimizer("sgd") == attn::Optimizer::sgd);
  CHECK_THROWS_WITH_AS(attn::parse_optimizer("adam"),
                       "unknown optimizer 'adam': expected adamw or sgd", E);
}

TEST_CASE("a checkpoint records dropout and the optimizer, and resume keeps them") {
  namespace fs = std::filesystem;
  attn::TrainConfig c;
  attn::ModelChoices m = attn::testing::lm_choices(4, 3, 4, 1, 1);
  m.dropout = 0.2f;
  c.model = attn::resolve_spec(m);
  c.optimizer = attn::Optimizer::sgd;
  c.batch_size = 2;
  c.steps = 2;
  attn::TrainState s = attn::train_init(c);
  const fs::path dir = fs::temp_directory_path() / "attn_test_dropout_ckpt";
  fs::remove_all(dir);
  attn::save_checkpoint(dir, s, c, attn::Vocab::from_text("abcd"));
  const attn::Checkpoint ck = attn::load_checkpoint(dir);
  CHECK(ck.config.model.dropout == 0.2f);
  CHECK(ck.config.optimizer == attn::Optimizer::sgd);
  fs::remove_all(dir);
}
}
