// Tests for attn/optim.hpp: AdamW against torch.optim.AdamW's numbers, gradient clipping against
// torch.nn.utils.clip_grad_norm_, and the learning-rate schedule.
#include <doctest/doctest.h>

#include <cmath>
#include <span>
#include <stdexcept>
#include <vector>

#include "attn/train/optim.hpp"

TEST_SUITE("optim") {

TEST_CASE("three AdamW steps match torch.optim.AdamW with a decayed and a non-decayed group") {
  // torch.optim.AdamW([{'params': [p], 'weight_decay': 0.1}, {'params': [b], 'weight_decay': 0}],
  //                   lr=0.01, betas=(0.9, 0.999), eps=1e-8), three steps with these gradients.
  std::vector<float> p = {0.5f, -1.0f, 2.0f, 0.25f}, b = {0.1f, -0.2f};
  std::vector<float> pm(4, 0.0f), pv(4, 0.0f), bm(2, 0.0f), bv(2, 0.0f);
  const std::vector<std::vector<float>> gp = {
      {0.3f, -0.1f, 0.0f, 2.0f}, {-0.2f, 0.4f, 1e-3f, -1.0f}, {0.1f, 0.1f, 0.1f, 0.1f}};
  const std::vector<std::vector<float>> gb = {{1.0f, -0.5f}, {0.0f, 0.25f}, {-3.0f, 3.0f}};
  const attn::AdamWConfig config{0.9f, 0.999f, 1e-8f, 0.1f};
  for (std::size_t t = 1; t <= 3; ++t) {
    attn::adamw_update(p, gp[t - 1], pm, pv, 0.01f, config.weight_decay, t, config);
    attn::adamw_update(b, gb[t - 1], bm, bv, 0.01f, 0.0f, t, config);
  }
  const std::vector<float> want_p = {0.484292656f, -0.99832195f, 1.98012698f, 0.234267652f};
  const std::vector<float> want_b = {0.0877238959f, -0.193240032f};
  for (std::size_t i = 0; i < 4; ++i) CHECK(p[i] == doctest::Approx(want_p[i]).epsilon(1e-6));
  for (std::size_t i = 0; i < 2; ++i) CHECK(b[i] == doctest::Approx(want_b[i]).epsilon(1e-6));
}

TEST_CASE("the first AdamW step moves every parameter by about lr, whatever its gradient's scale") {
  // After one step m / sqrt(v) = g / |g| exactly (the bias corrections cancel the (1 - beta)s).
  std::vector<float> p = {0.0f, 0.0f, 0.0f}, m(3, 0.0f), v(3, 0.0f);
  const std::vector<float> g = {1e-4f, -3.0f, 1e3f};
  attn::adamw_update(p, g, m, v, 0.5f, 0.0f, 1, attn::AdamWConfig{});
  CHECK(p[0] == doctest::Approx(-0.5f).epsilon(1e-3));
  CHECK(p[1] == doctest::Approx(0.5f).epsilon(1e-6));
  CHECK(p[2] == doctest::Approx(-0.5f).epsilon(1e-6));
}

TEST_CASE("weight decay shrinks a parameter whose gradient is zero, before the Adam step") {
  std::vector<float> p = {2.0f}, m = {0.0f}, v = {0.0f};
  const std::vector<float> g = {0.0f};
  attn::adamw_update(p, g, m, v, 0.1f, 0.5f, 1, attn::AdamWConfig{});
  CHECK(p[0] == doctest::Approx(2.0f * (1.0f - 0.1f * 0.5f)).epsilon(1e-7));
}

TEST_CASE("adamw_update rejects tensors of different lengths and step 0") {
  std::vector<float> p(3), g(2), m(3), v(3);
  CHECK_THROWS_AS(attn::adamw_update(p, g, m, v, 0.1f, 0.0f, 1, {}), std::invalid_argument);
  std::vector<float> g3(3);
  CHECK_THROWS_AS(attn::adamw_update(p, g3, m, v, 0.1f, 0.0f, 0, {}), std::invalid_argument);
}

TEST_CASE("only matrices and embeddings are decayed") {
  CHECK_FALSE(attn::decays(1));
  CHECK(attn::decays(2));
}

TEST_CASE("clipping by the global norm matches torch.nn.utils.clip_grad_norm_") {
  std::vector<float> a = {3.0f, 4.0f}, b = {12.0f};
  std::vector<std::span<float>> grads = {a, b};
  // norm = sqrt(9 + 16 + 144) = 13; scaled by 1 / (13 + 1e-6).
  CHECK(attn::clip_grad_norm(grads, 1.0f) == doctest::Approx(13.0));
  CHECK(a[0] == doctest::Approx(0.230769217f).epsilon(1e-6));
  CHECK(a[1] == doctest::Approx(0.307692289f).epsilon(1e-6));
  CHECK(b[0] == doctest::Approx(0.923076868f).epsilon(1e-6));
  CHECK(attn::global_norm(grads) == doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE("clipping leaves a small gradient alone, and 0 turns it off") {
  std::vector<float> a = {0.3f, 0.4f};
  std::vector<std::span<float>> grads = {a};
  CHECK(attn::clip_grad_norm(grads, 1.0f) == doctest::Approx(0.5));
  CHECK(a[0] == 0.3f);
  std::vector<float> big = {30.0f, 40.0f};
  std::vector<std::span<float>> big_grads = {big};
  CHECK(attn::clip_grad_norm(big_grads, 0.0f) == doctest::Approx(50.0));
  CHECK(big[0] == 30.0f);
}

TEST_CASE("the cosine schedule warms up linearly, then falls to min_lr") {
  const attn::LrSchedule s{1.0f, attn::LrShape::cosine, 10, 110, 0.1f};
  CHECK(attn::learning_rate(s, 1) == doctest::Approx(0.1f));
  CHECK(attn::learning_rate(s, 10) == doctest::Approx(1.0f));
  CHECK(attn::learning_rate(s, 60) == doctest::Approx(0.55f));  // half way: (1 + 0.1) / 2
  CHECK(attn::learning_rate(s, 110) == doctest::Approx(0.1f));
  CHECK(attn::learning_rate(s, 500) == doctest::Approx(0.1f));
  const attn::LrSchedule constant{0.25f};
  CHECK(attn::learning_rate(constant, 1) == 0.25f);
  CHECK(attn::learning_rate(constant, 100000) == 0.25f);
  CHECK(attn::parse_lr_shape("cosine") == attn::LrShape::cosine);
  CHECK_THROWS_AS(attn::parse_lr_shape("linear"), std::invalid_argument);
}

}  // TEST_SUITE
