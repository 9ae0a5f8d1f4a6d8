// Tests for attn/ops/optim.hpp: AdamW against torch.optim.AdamW's numbers, gradient clipping
// against torch.nn.utils.clip_grad_norm_, and the learning-rate schedule; and attn/fast/optim.hpp,
// the AdamW training runs, equal to the reference bit for bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/core/threads.hpp"
#include "attn/fast/optim.hpp"
#include "attn/ops/optim.hpp"

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

// ---- attn::fast::adamw_update against the reference, bit for bit. Both compute the same float
// operations per element in the same order (the lanes only change which elements are in flight),
// with -ffp-contract=off: so no tolerance, every parameter and moment must be identical.

namespace {

struct AdamTensors {
  std::vector<float> p, g, m, v;
};

// n elements of every scale, signs mixed, some gradients exactly 0, moments already warm.
AdamTensors random_tensors(std::size_t n, std::uint64_t seed) {
  attn::Rng rng(seed);
  AdamTensors t;
  for (std::size_t i = 0; i < n; ++i) {
    const float scale = i % 3 == 0 ? 1e-3f : (i % 3 == 1 ? 1.0f : 50.0f);
    t.p.push_back(rng.normal());
    t.g.push_back(i % 7 == 3 ? 0.0f : scale * rng.normal());
    t.m.push_back(0.1f * rng.normal());
    t.v.push_back(rng.uniform(0.0f, 0.5f));
  }
  return t;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  // (memcmp must not see the null data() of an empty vector, even for 0 bytes: UBSan.)
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("fast AdamW equals the reference bit for bit at every length around the lane count") {
  const attn::AdamWConfig config{0.9f, 0.95f, 1e-8f, 0.1f};
  // 0, every length to two lane groups plus one (8 lanes), odd lengths and a large odd one.
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 17; ++n) lengths.push_back(n);
  for (std::size_t n : {31u, 33u, 1001u}) lengths.push_back(n);
  for (const std::size_t n : lengths) {
    CAPTURE(n);
    AdamTensors ref = random_tensors(n, 40 + n), fast = ref;
    for (std::size_t step = 1; step <= 3; ++step) {
      const float wd = step == 2 ? 0.0f : config.weight_decay;
      attn::adamw_update(ref.p, ref.g, ref.m, ref.v, 3e-3f, wd, step, config);
      attn::fast::adamw_update(fast.p, fast.g, fast.m, fast.v, 3e-3f, wd, step, config);
    }
    CHECK(same_bits(ref.p, fast.p));
    CHECK(same_bits(ref.m, fast.m));
    CHECK(same_bits(ref.v, fast.v));
  }
}

// A model's worth of tensor lengths: empty, tiny, odd and large ones, so that on 2 and 3 threads
// the equal runs of elements start and end inside tensors (and not on a lane boundary).
const std::size_t kModelLengths[] = {1, 6, 0, 5003, 64, 12289, 11, 8191, 3, 700};

TEST_CASE("fast AdamW over every tensor equals the reference on 1, 2 and 3 threads") {
  const attn::AdamWConfig config{};
  const std::size_t threads_before = attn::num_threads();
  for (const std::size_t threads : {1u, 2u, 3u}) {
    CAPTURE(threads);
    attn::set_num_threads(threads);
    std::vector<AdamTensors> ref, fast;
    for (const std::size_t n : kModelLengths) ref.push_back(random_tensors(n, 90 + n));
    fast = ref;
    std::vector<std::span<float>> p, g, m, v;
    std::vector<bool> decay;
    for (AdamTensors& t : fast) {
      p.push_back(t.p);
      g.push_back(t.g);
      m.push_back(t.m);
      v.push_back(t.v);
      decay.push_back(t.p.size() % 2 == 0);
    }
    attn::fast::zero_all(m);  // as if the moments were fresh: zero_all must clear every tensor
    for (AdamTensors& t : ref) std::fill(t.m.begin(), t.m.end(), 0.0f);
    for (std::size_t step = 1; step <= 2; ++step) {
      attn::fast::adamw_update_all(p, g, m, v, decay, 1e-2f, step, config);
      for (std::size_t i = 0; i < ref.size(); ++i) {
        AdamTensors& t = ref[i];
        const float wd = decay[i] ? config.weight_decay : 0.0f;
        attn::adamw_update(t.p, t.g, t.m, t.v, 1e-2f, wd, step, config);
      }
    }
    for (std::size_t i = 0; i < ref.size(); ++i) {
      CAPTURE(i);
      CHECK(same_bits(ref[i].p, fast[i].p));
      CHECK(same_bits(ref[i].m, fast[i].m));
      CHECK(same_bits(ref[i].v, fast[i].v));
    }
  }
  attn::set_num_threads(threads_before);
}

TEST_CASE("fast AdamW over every tensor checks every length before it updates any") {
  AdamTensors a = random_tensors(5000, 1), b = random_tensors(9000, 2);
  const AdamTensors a0 = a, b0 = b;
  b.v.pop_back();  // the second tensor's v is one short
  std::vector<std::span<float>> p = {a.p, b.p}, g = {a.g, b.g}, m = {a.m, b.m}, v = {a.v, b.v};
  CHECK_THROWS_WITH_AS(attn::fast::adamw_update_all(p, g, m, v, {true, true}, 1e-2f, 1, {}),
                       doctest::Contains("same length"), std::invalid_argument);
  CHECK(same_bits(a.p, a0.p));  // nothing was updated: not even the first tensor
  CHECK(same_bits(a.m, a0.m));
  CHECK(same_bits(b.p, b0.p));
  CHECK_THROWS_AS(attn::fast::adamw_update_all(p, g, m, v, {true}, 1e-2f, 1, {}),
                  std::invalid_argument);
}

// ---- The global norm: each tensor's sum of squares, then the tensors' sums in order.

std::vector<std::span<float>> spans_of(std::vector<std::vector<float>>& tensors) {
  std::vector<std::span<float>> s;
  for (std::vector<float>& t : tensors) s.emplace_back(t);
  return s;
}

TEST_CASE("the global norm sums each tensor on its own, then the tensors in order") {
  // 2^27 in one tensor and eight 1s in another: squares 2^54 and eight 1s. Tensor by tensor, the
  // eight add up to 8 exactly and 2^54 + 8 is a double, so the norm is 2^27 + 2^-25 (one step
  // above 2^27). One running sum over every element would add each 1 to 2^54, where a double's
  // spacing is 4, and lose it each time: 2^27 exactly.
  std::vector<std::vector<float>> g = {{134217728.0f}, std::vector<float>(8, 1.0f)};
  const double want = std::ldexp(1.0, 27) + std::ldexp(1.0, -25);
  CHECK(attn::global_norm(spans_of(g)) == want);
  CHECK(attn::fast::global_norm(spans_of(g)) == want);
  double running = 0.0;
  for (const auto& t : g)
    for (float x : t) running += static_cast<double>(x) * static_cast<double>(x);
  CHECK(std::sqrt(running) != want);  // the example tells the two orders apart
}

TEST_CASE("fast global norm and clipping equal the reference bit for bit on 1, 2 and 3 threads") {
  const std::size_t threads_before = attn::num_threads();
  std::vector<std::vector<float>> base;
  for (const std::size_t n : kModelLengths) base.push_back(random_tensors(n, 300 + n).g);
  for (const std::size_t threads : {1u, 2u, 3u}) {
    CAPTURE(threads);
    attn::set_num_threads(threads);
    std::vector<std::vector<float>> ref = base, fast = base;
    const double norm = attn::global_norm(spans_of(ref));
    CHECK(attn::fast::global_norm(spans_of(fast)) == norm);
    // Clipped to a tenth of the norm: every element scaled, the same bits.
    const auto max_norm = static_cast<float>(norm / 10.0);
    CHECK(attn::fast::clip_grad_norm(spans_of(fast), max_norm) ==
          attn::clip_grad_norm(spans_of(ref), max_norm));
    for (std::size_t i = 0; i < ref.size(); ++i) {
      CAPTURE(i);
      CHECK(same_bits(ref[i], fast[i]));
    }
    CHECK_FALSE(same_bits(fast[3], base[3]));  // it did scale
    // Above the norm, or 0 (off): nothing changes, and the norm comes back.
    for (const float off : {static_cast<float>(norm * 2.0), 0.0f}) {
      std::vector<std::vector<float>> kept = base;
      CHECK(attn::fast::clip_grad_norm(spans_of(kept), off) == norm);
      for (std::size_t i = 0; i < kept.size(); ++i) CHECK(same_bits(kept[i], base[i]));
    }
  }
  std::vector<std::vector<float>> none;
  CHECK(attn::fast::global_norm(spans_of(none)) == 0.0);
  attn::set_num_threads(threads_before);
}

TEST_CASE("a fast AdamW that decayed after the step would not be bit-identical") {
  // The comparison above is exact, so any change of order shows: decay applied after the Adam
  // step, on a parameter with a gradient, already differs from the reference.
  AdamTensors ref = random_tensors(9, 7), wrong = ref;
  const attn::AdamWConfig config{};
  attn::adamw_update(ref.p, ref.g, ref.m, ref.v, 1e-2f, 0.1f, 1, config);
  attn::fast::adamw_update(wrong.p, wrong.g, wrong.m, wrong.v, 1e-2f, 0.0f, 1, config);
  for (float& x : wrong.p) x *= static_cast<float>(1.0 - 1e-2 * 0.1);  // decay last
  CHECK_FALSE(same_bits(ref.p, wrong.p));
}

TEST_CASE("fast AdamW rejects what the reference rejects") {
  std::vector<float> p(3), g(2), m(3), v(3), g3(3);
  CHECK_THROWS_AS(attn::fast::adamw_update(p, g, m, v, 0.1f, 0.0f, 1, {}), std::invalid_argument);
  CHECK_THROWS_AS(attn::fast::adamw_update(p, g3, m, v, 0.1f, 0.0f, 0, {}), std::invalid_argument);
}

}  // TEST_SUITE
