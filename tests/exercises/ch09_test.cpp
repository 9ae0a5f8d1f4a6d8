// Don't edit: these tests check your exercises.
// tests/exercises/ch09_test.cpp: chapter 09 (training the character GPT, docs/09-training.md).
// Expected values come from torch.optim.AdamW's own numbers, from windows read straight out of
// the data, or from the library's lower-level pieces (lm_loss, lm_forward_backward) composed by
// hand; never from the attn:: function the reference solution forwards to.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <span>
#include <stdexcept>
#include <vector>

#include "attn/model/model.hpp"
#include "attn/ops/optim.hpp"
#include "attn/core/random.hpp"
#include "attn/io/text.hpp"
#include "attn/train/train.hpp"
#include "exercises.hpp"

namespace {

using Tokens = xt::xtensor<int, 2>;

// A tiny model: V = 6, C = 8, H = 2, T = 5, two layers.
attn::TrainConfig tiny_config() {
  attn::ModelChoices model;
  model.vocab_size = 6;
  model.block_size = 5;
  model.n_embd = 8;
  model.n_heads = 2;
  model.n_layers = 2;
  attn::TrainConfig c;
  c.model = attn::resolve_spec(model);
  c.batch_size = 3;
  c.steps = 10;
  c.schedule.lr = 0.01f;
  c.adam.weight_decay = 0.1f;
  c.grad_clip = 0.5f;
  c.seed = 7;
  return c;
}

std::vector<int> counting_data(std::size_t n, int V) {
  std::vector<int> d(n);
  for (std::size_t i = 0; i < n; ++i)
    d[i] = static_cast<int>((i * 7 + i / 3) % static_cast<std::size_t>(V));
  return d;
}

Tokens tokens_of(std::initializer_list<std::initializer_list<int>> rows) {
  Tokens t({rows.size(), rows.begin()->size()});
  std::size_t r = 0;
  for (auto row : rows) {
    std::size_t c = 0;
    for (int v : row) t(r, c++) = v;
    ++r;
  }
  return t;
}

}  // namespace

TEST_SUITE("ex09.1 AdamW update") {

TEST_CASE("three steps match torch.optim.AdamW with and without weight decay" *
          doctest::description("hint 2")) {
  // torch.optim.AdamW(lr=0.01, betas=(0.9, 0.999), eps=1e-8), weight_decay 0.1 on p, 0 on b.
  std::vector<float> p = {0.5f, -1.0f, 2.0f, 0.25f}, b = {0.1f, -0.2f};
  std::vector<float> pm(4, 0.0f), pv(4, 0.0f), bm(2, 0.0f), bv(2, 0.0f);
  const std::vector<std::vector<float>> gp = {
      {0.3f, -0.1f, 0.0f, 2.0f}, {-0.2f, 0.4f, 1e-3f, -1.0f}, {0.1f, 0.1f, 0.1f, 0.1f}};
  const std::vector<std::vector<float>> gb = {{1.0f, -0.5f}, {0.0f, 0.25f}, {-3.0f, 3.0f}};
  const attn::AdamWConfig config{0.9f, 0.999f, 1e-8f, 0.1f};
  for (std::size_t t = 1; t <= 3; ++t) {
    ex09::adamw_update(p, gp[t - 1], pm, pv, 0.01f, 0.1f, t, config);
    ex09::adamw_update(b, gb[t - 1], bm, bv, 0.01f, 0.0f, t, config);
  }
  const std::vector<float> want_p = {0.484292656f, -0.99832195f, 1.98012698f, 0.234267652f};
  const std::vector<float> want_b = {0.0877238959f, -0.193240032f};
  for (std::size_t i = 0; i < 4; ++i) CHECK(p[i] == doctest::Approx(want_p[i]).epsilon(1e-6));
  for (std::size_t i = 0; i < 2; ++i) CHECK(b[i] == doctest::Approx(want_b[i]).epsilon(1e-6));
}

TEST_CASE("the moments hold the running means after one step" * doctest::description("hint 2")) {
  std::vector<float> p = {1.0f}, m = {0.0f}, v = {0.0f};
  const std::vector<float> g = {2.0f};
  ex09::adamw_update(p, g, m, v, 0.1f, 0.0f, 1, attn::AdamWConfig{0.8f, 0.9f, 1e-8f, 0.0f});
  CHECK(m[0] == doctest::Approx(0.4f));  // (1 - 0.8) * 2
  CHECK(v[0] == doctest::Approx(0.4f));  // (1 - 0.9) * 4
  // Bias-corrected: m_hat = 2, v_hat = 4, so the step is lr * 2 / 2 = 0.1.
  CHECK(p[0] == doctest::Approx(0.9f).epsilon(1e-6));
}

TEST_CASE("weight decay is applied to the parameter before the Adam step") {
  std::vector<float> p = {4.0f}, m = {0.0f}, v = {0.0f};
  const std::vector<float> g = {1.0f};
  ex09::adamw_update(p, g, m, v, 0.1f, 0.5f, 1, attn::AdamWConfig{});
  // 4 * (1 - 0.05) = 3.8, then the first Adam step moves it by lr = 0.1 (g / |g|).
  CHECK(p[0] == doctest::Approx(3.7f).epsilon(1e-6));
}

TEST_CASE("different lengths and step 0 are rejected" * doctest::description("hint 2")) {
  std::vector<float> p(3), g(2), m(3), v(3), g3(3);
  CHECK_THROWS_AS(ex09::adamw_update(p, g, m, v, 0.1f, 0.0f, 1, {}), std::invalid_argument);
  CHECK_THROWS_AS(ex09::adamw_update(p, g3, m, v, 0.1f, 0.0f, 0, {}), std::invalid_argument);
}

TEST_CASE("each of g, m and v shorter or longer than p is rejected" *
          doctest::description("hint 2")) {
  std::vector<float> p(3, 1.0f), ok(3, 0.5f), shorter(2, 0.5f), longer(4, 0.5f);
  for (std::vector<float>* odd : {&shorter, &longer}) {
    CAPTURE(odd->size());
    std::vector<float> m = ok, v = ok;
    CHECK_THROWS_AS(ex09::adamw_update(p, *odd, m, v, 0.1f, 0.0f, 1, {}), std::invalid_argument);
    std::vector<float> m_odd = *odd, v_odd = *odd;
    CHECK_THROWS_AS(ex09::adamw_update(p, ok, m_odd, v, 0.1f, 0.0f, 1, {}), std::invalid_argument);
    m = ok;
    CHECK_THROWS_AS(ex09::adamw_update(p, ok, m, v_odd, 0.1f, 0.0f, 1, {}), std::invalid_argument);
  }
}

}  // TEST_SUITE

TEST_SUITE("ex09.2 get_batch") {

TEST_CASE("every start 0 .. n - T - 1 is drawn, the window ending on the last token too" *
          doctest::description("hint 2")) {
  // n = 9 tokens, T = 6: the windows start at 0, 1 or 2 (start 2 ends on the last token, its
  // targets on token 8). 300 rows draw each start about 100 times.
  const std::vector<int> data = {0, 1, 2, 3, 4, 5, 6, 7, 8};  // token i is i: x(r, 0) is the start
  attn::Rng rng(5);
  const attn::Batch b = ex09::get_batch(data, 300, 6, rng);
  std::vector<int> seen(3, 0);
  for (std::size_t r = 0; r < 300; ++r)
    if (b.x(r, 0) >= 0 && b.x(r, 0) < 3) ++seen[static_cast<std::size_t>(b.x(r, 0))];
  for (std::size_t start = 0; start < 3; ++start) {
    INFO("start " << start << " of the 3 valid ones (n - T = 3) drawn " << seen[start]
                  << " times in 300 rows: draw the start from rng.below(n - T), every window "
                  << "whose targets fit, the last one included");
    CHECK(seen[start] > 0);
  }
}

TEST_CASE("each row is a window of the data and its targets are shifted by one") {
  const std::vector<int> data = counting_data(50, 9);
  attn::Rng rng(3);
  attn::Rng starts(3);  // the same stream: the starts the batch must use, in row order
  const attn::Batch b = ex09::get_batch(data, 4, 6, rng);
  REQUIRE(b.x.shape()[0] == 4);
  REQUIRE(b.x.shape()[1] == 6);
  REQUIRE(b.y.shape()[0] == 4);
  REQUIRE(b.y.shape()[1] == 6);
  for (std::size_t r = 0; r < 4; ++r) {
    const std::size_t i = starts.below(50 - 6);
    for (std::size_t t = 0; t < 6; ++t) {
      CHECK(b.x(r, t) == data[i + t]);
      CHECK(b.y(r, t) == data[i + t + 1]);
    }
  }
}

TEST_CASE("a window may end on the last token, never past it" * doctest::description("hint 2")) {
  const std::vector<int> data = {1, 2, 3};  // T = 2: the only window is [1, 2] -> [2, 3]
  attn::Rng rng(1);
  const attn::Batch b = ex09::get_batch(data, 5, 2, rng);
  for (std::size_t r = 0; r < 5; ++r) {
    CHECK(b.x(r, 0) == 1);
    CHECK(b.y(r, 1) == 3);
  }
}

TEST_CASE("zero sizes and data shorter than T + 1 are rejected" * doctest::description("hint 2")) {
  const std::vector<int> data = counting_data(10, 4);
  attn::Rng rng(1);
  CHECK_THROWS_AS(ex09::get_batch(data, 0, 3, rng), std::invalid_argument);
  CHECK_THROWS_AS(ex09::get_batch(data, 2, 0, rng), std::invalid_argument);
  CHECK_THROWS_AS(ex09::get_batch(data, 2, 10, rng), std::invalid_argument);
}

}  // TEST_SUITE

TEST_SUITE("ex09.3 estimate_loss") {

TEST_CASE("the estimate is the mean lm_loss over the batches of each split, train first" *
          doctest::description("hint 2")) {
  const attn::TrainConfig c = tiny_config();
  attn::Rng init(5);
  const attn::LmWeights w = attn::lm_init(init, c.model);
  attn::Split split;
  split.train = counting_data(40, 6);
  split.val = counting_data(23, 6);
  std::reverse(split.val.begin(), split.val.end());
  const attn::EvalRecord got = ex09::estimate_loss(w, c.model, split, 2, 3, 11, 4);
  attn::Rng rng(11 + 4, 202);
  double train = 0.0, val = 0.0;
  for (int i = 0; i < 3; ++i) {
    const attn::Batch b = attn::get_batch(split.train, 2, 5, rng);
    train += attn::lm_loss(b.x, b.y, w, c.model);
  }
  for (int i = 0; i < 3; ++i) {
    const attn::Batch b = attn::get_batch(split.val, 2, 5, rng);
    val += attn::lm_loss(b.x, b.y, w, c.model);
  }
  CHECK(got.step == 4);
  CHECK(got.train_loss == doctest::Approx(train / 3.0).epsilon(1e-9));
  CHECK(got.val_loss == doctest::Approx(val / 3.0).epsilon(1e-9));
  CHECK(got.train_loss != doctest::Approx(got.val_loss).epsilon(1e-9));
}

TEST_CASE("zero batches are rejected" * doctest::description("hint 2")) {
  const attn::TrainConfig c = tiny_config();
  attn::Rng init(5);
  const attn::LmWeights w = attn::lm_init(init, c.model);
  attn::Split split{counting_data(40, 6), counting_data(20, 6)};
  CHECK_THROWS_AS(ex09::estimate_loss(w, c.model, split, 2, 0, 1, 0), std::invalid_argument);
}

}  // TEST_SUITE

TEST_SUITE("ex09.4 the training step") {

// The learning rate at step t (1-based), worked out from the schedule's definition: a linear
// warmup lr * t / warmup, then a half cosine from lr down to min_lr at `total`, min_lr after.
double lr_by_hand(const attn::LrSchedule& s, std::size_t t) {
  const double lr = s.lr, min_lr = s.min_lr;
  if (s.shape == attn::LrShape::constant) return lr;
  if (t <= s.warmup) return lr * static_cast<double>(t) / static_cast<double>(s.warmup);
  if (t >= s.total) return min_lr;
  const double pi = std::acos(-1.0);
  const double progress =
      static_cast<double>(t - s.warmup) / static_cast<double>(s.total - s.warmup);
  return min_lr + (lr - min_lr) * 0.5 * (1.0 + std::cos(pi * progress));
}

// The step composed from the pieces: forward/backward, clip, AdamW, on copies of the state.
// `norm` is the gradient's global norm before clipping, `lr` the learning rate used.
attn::TrainState expected_after_step(const attn::TrainState& before, const attn::TrainConfig& c,
                                     const Tokens& x, const Tokens& y, double& loss, double& norm,
                                     double& lr) {
  attn::TrainState s;
  s.weights = before.weights;
  s.adam_m = before.adam_m;
  s.adam_v = before.adam_v;
  s.grads = attn::lm_zeros_like(s.weights);
  attn::LmCache cache;
  // With dropout on, step t draws its masks from dropout_rng_for(seed, t) (train.hpp).
  cache.dropout_rng = attn::dropout_rng_for(c.seed, before.step + 1);
  loss = attn::lm_forward_backward(x, y, s.weights, c.model, s.grads, cache);
  std::vector<attn::NamedTensor> p = attn::lm_parameters(s.weights),
                                 g = attn::lm_parameters(s.grads),
                                 m = attn::lm_parameters(s.adam_m),
                                 v = attn::lm_parameters(s.adam_v);
  double norm2 = 0.0;
  for (const attn::NamedTensor& t : g)
    for (float e : t.values) norm2 += static_cast<double>(e) * static_cast<double>(e);
  norm = std::sqrt(norm2);
  lr = lr_by_hand(c.schedule, before.step + 1);
  const double scale = norm > static_cast<double>(c.grad_clip) && c.grad_clip > 0.0f
                           ? static_cast<double>(c.grad_clip) / (norm + 1e-6)
                           : 1.0;
  for (attn::NamedTensor& t : g)
    for (float& e : t.values) e = static_cast<float>(static_cast<double>(e) * scale);
  for (std::size_t i = 0; i < p.size(); ++i) {
    const float wd = p[i].rank >= 2 ? c.adam.weight_decay : 0.0f;
    attn::adamw_update(p[i].values, g[i].values, m[i].values, v[i].values, static_cast<float>(lr),
                       wd, before.step + 1, c.adam);
  }
  s.step = before.step + 1;
  return s;
}

void check_same_weights(attn::LmWeights& a, attn::LmWeights& b) {
  std::vector<attn::NamedTensor> x = attn::lm_parameters(a), y = attn::lm_parameters(b);
  REQUIRE(x.size() == y.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    INFO("tensor " << x[i].name);
    REQUIRE(x[i].values.size() == y[i].values.size());
    for (std::size_t j = 0; j < x[i].values.size(); ++j) {
      // Relative 1e-5, or 1e-7 absolute for weights near 0. A step moves a weight by about lr
      // (1e-3 to 2e-2 here), so a wrong step is off by 1e4 times more; a right one differs by
      // float rounding: the two sides sum in other orders (which order depends on OpenBLAS's
      // kernels: Haswell's and SkylakeX's differ), and a weight that the step brings near 0
      // keeps the rounding of the step, about lr * 1e-7, not of its own size.
      CHECK(x[i].values[j] == doctest::Approx(y[i].values[j]).epsilon(1e-5).scale(1e-2));
    }
  }
}

TEST_CASE("two steps equal the pieces composed by hand, with clipping and two decay groups" *
          doctest::description("hint 2")) {
  const attn::TrainConfig c = tiny_config();
  attn::TrainState s = attn::train_init(c);
  const Tokens x = tokens_of({{0, 1, 2, 3, 4}, {5, 4, 3, 2, 1}, {1, 1, 2, 2, 3}});
  const Tokens y = tokens_of({{1, 2, 3, 4, 5}, {4, 3, 2, 1, 0}, {1, 2, 2, 3, 3}});
  for (int step = 0; step < 2; ++step) {
    double want_loss = 0.0, want_norm = 0.0, want_lr = 0.0;
    attn::TrainState want = expected_after_step(s, c, x, y, want_loss, want_norm, want_lr);
    const attn::StepResult r = ex09::train_step_on(s, c, x, y);
    CHECK(r.loss == doctest::Approx(want_loss).epsilon(1e-6));
    CHECK(r.lr == doctest::Approx(want_lr));
    CHECK(r.grad_norm == doctest::Approx(want_norm).epsilon(1e-5));
    CHECK(s.step == want.step);
    REQUIRE(s.losses.size() == static_cast<std::size_t>(step + 1));
    CHECK(s.losses.back() == doctest::Approx(want_loss).epsilon(1e-6));
    check_same_weights(s.weights, want.weights);
    check_same_weights(s.adam_m, want.adam_m);
    check_same_weights(s.adam_v, want.adam_v);
  }
}

TEST_CASE("with dropout, step t draws its masks from attn::dropout_rng_for(seed, t)" *
          doctest::description("hint 3")) {
  attn::TrainConfig c = tiny_config();
  c.model.dropout = 0.3f;
  attn::TrainState s = attn::train_init(c);
  const Tokens x = tokens_of({{0, 1, 2, 3, 4}, {5, 4, 3, 2, 1}, {1, 1, 2, 2, 3}});
  const Tokens y = tokens_of({{1, 2, 3, 4, 5}, {4, 3, 2, 1, 0}, {1, 2, 2, 3, 3}});
  for (int step = 0; step < 2; ++step) {
    double want_loss = 0.0, want_norm = 0.0, want_lr = 0.0;
    attn::TrainState want = expected_after_step(s, c, x, y, want_loss, want_norm, want_lr);
    const attn::StepResult r = ex09::train_step_on(s, c, x, y);
    INFO("step " << step + 1 << " with dropout 0.3: before the forward, set state.cache's "
                 << "dropout_rng to attn::dropout_rng_for(config.seed, " << step + 1
                 << ") so that the masks are this step's (the same in a resumed run)");
    CHECK(r.loss == doctest::Approx(want_loss).epsilon(1e-6));
    check_same_weights(s.weights, want.weights);
  }
}

// Garbage in every gradient, as a previous step (or anything else) may have left them.
void fill_stale_gradients(attn::LmWeights& grads) {
  std::size_t k = 0;
  for (attn::NamedTensor& t : attn::lm_parameters(grads))
    for (float& e : t.values) e = 3.0f + 2.0f * std::sin(0.37f * static_cast<float>(k++));
}

TEST_CASE(
    "warmup + cosine schedule, stale gradients: every step takes lr(step + 1) and reports "
    "the norm before clipping" *
    doctest::description("hint 2")) {
  attn::TrainConfig c = tiny_config();
  c.schedule.lr = 0.02f;
  c.schedule.shape = attn::LrShape::cosine;
  c.schedule.warmup = 3;
  c.schedule.total = 7;
  c.schedule.min_lr = 0.002f;
  c.grad_clip = 0.05f;  // below every norm here: clipping acts on each step
  attn::TrainState s = attn::train_init(c);
  const Tokens x = tokens_of({{0, 1, 2, 3, 4}, {5, 4, 3, 2, 1}, {1, 1, 2, 2, 3}});
  const Tokens y = tokens_of({{1, 2, 3, 4, 5}, {4, 3, 2, 1, 0}, {1, 2, 2, 3, 3}});
  // Steps 1..8: warmup (1-3), cosine (4-6), min_lr (7, 8).
  for (std::size_t step = 0; step < 8; ++step) {
    double want_loss = 0.0, want_norm = 0.0, want_lr = 0.0;
    attn::TrainState want = expected_after_step(s, c, x, y, want_loss, want_norm, want_lr);
    fill_stale_gradients(s.grads);
    const attn::StepResult r = ex09::train_step_on(s, c, x, y);
    INFO("step " << step + 1
                 << " of a schedule with lr 0.02, warmup 3, cosine to 0.002 at step 7 "
                    "(state.step was "
                 << step
                 << "), gradients holding garbage before the step, "
                    "clipping at 0.05");
    CHECK_MESSAGE(
        r.lr == doctest::Approx(want_lr),
        "the lr used and returned is the schedule's at step " << step + 1 << ": " << want_lr);
    CHECK_MESSAGE(r.grad_norm == doctest::Approx(want_norm).epsilon(1e-5),
                  "the returned norm is the one before clipping: " << want_norm);
    CHECK(r.loss == doctest::Approx(want_loss).epsilon(1e-6));
    CHECK(s.step == step + 1);
    check_same_weights(s.weights, want.weights);
    check_same_weights(s.adam_m, want.adam_m);
    check_same_weights(s.adam_v, want.adam_v);
  }
}

TEST_CASE("the loss on a repeated batch falls: the step moves downhill") {
  attn::TrainConfig c = tiny_config();
  c.grad_clip = 0.0f;
  attn::TrainState s = attn::train_init(c);
  const Tokens x = tokens_of({{0, 1, 2, 3, 4}});
  const Tokens y = tokens_of({{1, 2, 3, 4, 5}});
  const double first = ex09::train_step_on(s, c, x, y).loss;
  double last = first;
  for (int i = 0; i < 30; ++i) last = ex09::train_step_on(s, c, x, y).loss;
  CHECK(last < first - 0.5);
}

}  // TEST_SUITE

TEST_SUITE("ex09.5 The learning-rate schedule") {

attn::LrSchedule cosine(float lr, std::size_t warmup, std::size_t total, float min_lr) {
  attn::LrSchedule s;
  s.lr = lr;
  s.shape = attn::LrShape::cosine;
  s.warmup = warmup;
  s.total = total;
  s.min_lr = min_lr;
  return s;
}

TEST_CASE("a constant schedule gives lr at every step" * doctest::description("hint 1")) {
  attn::LrSchedule s;
  s.lr = 3e-4f;
  s.warmup = 5;  // ignored: only the cosine shape warms up
  s.total = 10;
  for (const std::size_t t : {1u, 2u, 5u, 10u, 11u, 1000u}) {
    CAPTURE(t);
    CHECK(ex09::learning_rate(s, t) == 3e-4f);
  }
}

TEST_CASE("the warmup climbs in equal steps from lr/warmup at step 1 to lr at step warmup" *
          doctest::description("hint 2")) {
  const attn::LrSchedule s = cosine(0.01f, 4, 20, 0.001f);
  const double want[] = {0.0025, 0.005, 0.0075, 0.01};  // lr * t / 4
  for (std::size_t t = 1; t <= 4; ++t) {
    INFO("step " << t << " of a 4-step warmup to lr 0.01: expected " << want[t - 1]);
    CHECK(ex09::learning_rate(s, t) == doctest::Approx(want[t - 1]).epsilon(1e-6));
  }
}

TEST_CASE("after the warmup: half a cosine from lr down to min_lr at total, then min_lr" *
          doctest::description("hint 2")) {
  // warmup 2, total 10: steps 2..10 are 8 steps of the half cosine; step 6 is its middle.
  const attn::LrSchedule s = cosine(0.02f, 2, 10, 0.004f);
  const double pi = std::acos(-1.0);
  for (std::size_t t = 3; t <= 12; ++t) {
    const double progress = std::min(1.0, static_cast<double>(t - 2) / 8.0);
    const double want = 0.004 + (0.02 - 0.004) * 0.5 * (1.0 + std::cos(pi * progress));
    INFO("step " << t << " (lr 0.02, warmup 2, min_lr 0.004 at step 10): expected " << want);
    CHECK(ex09::learning_rate(s, t) == doctest::Approx(want).epsilon(1e-5));
  }
  CHECK(ex09::learning_rate(s, 6) == doctest::Approx(0.012).epsilon(1e-5));  // the middle
  CHECK(ex09::learning_rate(s, 10) == doctest::Approx(0.004).epsilon(1e-6));
  CHECK(ex09::learning_rate(s, 500) == doctest::Approx(0.004).epsilon(1e-6));
}

TEST_CASE("without warmup the cosine starts at step 1, just below lr" *
          doctest::description("hint 2")) {
  const attn::LrSchedule s = cosine(1.0f, 0, 4, 0.0f);
  // progress t / 4: 0.5 (1 + cos(pi t / 4)) for t = 1, 2, 3, then 0.
  const double want[] = {0.8535533906, 0.5, 0.1464466094, 0.0};
  for (std::size_t t = 1; t <= 4; ++t) {
    INFO("step " << t << " of a 4-step cosine from 1 to 0 without warmup: expected "
                 << want[t - 1]);
    CHECK(ex09::learning_rate(s, t) == doctest::Approx(want[t - 1]).epsilon(1e-6).scale(1e-9));
  }
}

}  // TEST_SUITE

TEST_SUITE("ex09.6 Clipping by the global norm") {

std::vector<std::span<float>> spans_of(std::vector<std::vector<float>>& tensors) {
  std::vector<std::span<float>> s;
  for (std::vector<float>& t : tensors) s.emplace_back(t);
  return s;
}

TEST_CASE("one norm for all the tensors: 3, 4 and 12 in three tensors give 13" *
          doctest::description("hint 1")) {
  std::vector<std::vector<float>> g = {{3.0f}, {0.0f, 4.0f}, {-12.0f}};
  const std::vector<std::span<float>> s = spans_of(g);
  const double norm = ex09::clip_grad_norm(s, 6.5f);
  CHECK(norm == doctest::Approx(13.0).epsilon(1e-12));
  // Scaled by 6.5 / (13 + 1e-6), every tensor by the same factor: the direction is kept.
  const double f = 6.5 / (13.0 + 1e-6);
  INFO("every gradient scaled by max_norm / (norm + 1e-6) = " << f);
  CHECK(g[0][0] == doctest::Approx(3.0 * f).epsilon(1e-6));
  CHECK(g[1][0] == 0.0f);
  CHECK(g[1][1] == doctest::Approx(4.0 * f).epsilon(1e-6));
  CHECK(g[2][0] == doctest::Approx(-12.0 * f).epsilon(1e-6));
}

TEST_CASE("a norm below max_norm, or max_norm 0, changes nothing and still returns the norm" *
          doctest::description("hint 2")) {
  for (const float max_norm : {0.0f, 5.001f, 100.0f}) {
    CAPTURE(max_norm);
    std::vector<std::vector<float>> g = {{3.0f, 0.0f}, {-4.0f}};
    const std::vector<std::span<float>> s = spans_of(g);
    CHECK(ex09::clip_grad_norm(s, max_norm) == doctest::Approx(5.0).epsilon(1e-12));
    INFO("gradient (3, 0), (-4): norm 5, not above max_norm " << max_norm
                                                              << " (or clipping off): unchanged");
    CHECK(g[0][0] == 3.0f);
    CHECK(g[0][1] == 0.0f);
    CHECK(g[1][0] == -4.0f);
  }
}

TEST_CASE("the returned norm is the one before clipping" * doctest::description("hint 2")) {
  std::vector<std::vector<float>> g = {{30.0f, 40.0f}};
  const std::vector<std::span<float>> s = spans_of(g);
  const double norm = ex09::clip_grad_norm(s, 1.0f);
  INFO(
      "gradient (30, 40) clipped to norm 1: the function returns 50, the gradient ends (0.6, 0.8)");
  CHECK(norm == doctest::Approx(50.0).epsilon(1e-12));
  CHECK(g[0][0] == doctest::Approx(0.6).epsilon(1e-6));
  CHECK(g[0][1] == doctest::Approx(0.8).epsilon(1e-6));
}

TEST_CASE("gradients of 1e20 give a finite norm (their squares overflow a float)" *
          doctest::description("hint 3")) {
  std::vector<std::vector<float>> g = {{3e20f}, {4e20f}};
  const std::vector<std::span<float>> s = spans_of(g);
  const double norm = ex09::clip_grad_norm(s, 1.0f);
  INFO("3e20 and 4e20: norm 5e20, the gradients end (0.6, 0.8)");
  CHECK(norm == doctest::Approx(5e20).epsilon(1e-6));
  CHECK(g[0][0] == doctest::Approx(0.6).epsilon(1e-5));
  CHECK(g[1][0] == doctest::Approx(0.8).epsilon(1e-5));
}

TEST_CASE("no tensors, or empty ones, give norm 0" * doctest::description("hint 1")) {
  std::vector<std::vector<float>> none;
  CHECK(ex09::clip_grad_norm(spans_of(none), 1.0f) == 0.0);
  std::vector<std::vector<float>> empty = {{}, {}};
  CHECK(ex09::clip_grad_norm(spans_of(empty), 1.0f) == 0.0);
}

}  // TEST_SUITE
