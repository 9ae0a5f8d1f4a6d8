// Tests for attn/model/kvcache.hpp: generation with a KV cache (chapter 10).
// The cached logits are checked against lm_forward's last row (prefill and every step, B = 1 and
// 2); lm_generate_cached against lm_generate token for token (greedy, temperature, top-k, top-p,
// prompts shorter and longer than T_max, generation running past T_max, several seeds and
// models); the memory formula against the tensors; no allocation per generated token, counted
// by this binary's own operator new; and every bad input. The sampler's greedy and top-p are
// tested here too (TokenSampler, sample.hpp).

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/ops/attention.hpp"
#include "attn/model/block.hpp"
#include "attn/model/kvcache.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/model/model.hpp"
#include "attn/core/random.hpp"
#include "attn/model/sample.hpp"
#include "attn/core/threads.hpp"
#include "count_allocations.hpp"  // this binary counts every allocation
#include "test_fixtures.hpp"
#include "test_helpers.hpp"

namespace {

using attn::testing::random_model;

std::vector<int> random_ids(attn::Rng& rng, std::size_t n, std::size_t V) {
  std::vector<int> ids(n);
  for (int& id : ids) id = static_cast<int>(rng.below(V));
  return ids;
}

// lm_forward's logits at the last position of each of the B sequences (B, T) -> (B, V).
attn::Matrix forward_last(const std::vector<int>& tokens, std::size_t B, const attn::LmWeights& w,
                          const attn::ModelSpec& config) {
  const std::size_t T = tokens.size() / B, V = config.vocab_size;
  xt::xtensor<int, 2> t(std::array<std::size_t, 2>{B, T});
  std::copy(tokens.begin(), tokens.end(), t.data());
  const attn::Tensor<3> logits = attn::lm_forward(t, w, config);
  attn::Matrix last(std::array<std::size_t, 2>{B, V});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t v = 0; v < V; ++v) last(b, v) = logits(b, T - 1, v);
  return last;
}

}  // namespace

TEST_SUITE("kvcache") {

TEST_CASE("the cache holds 2 L B T_max C floats, by the formula and in its tensors") {
  for (const auto& [config, B] :
       {std::pair{attn::testing::lm_config(65, 64, 64, 4, 4), std::size_t{1}},
        std::pair{attn::testing::lm_config(11, 6, 8, 2, 2), std::size_t{3}},
        std::pair{attn::testing::lm_config(7, 5, 12, 3, 1), std::size_t{2}}}) {
    const attn::KvCache cache = attn::kv_cache_init(config, B);
    const std::size_t formula =
        2 * config.n_layers * B * config.block_size * config.n_embd;  // written out here
    CHECK(attn::kv_cache_floats(config, B) == formula);
    CHECK(attn::kv_cache_held_floats(cache) == formula);
    REQUIRE(cache.keys.size() == config.n_layers);
    CHECK(cache.keys[0].shape() == std::array<std::size_t, 4>{B, config.n_heads, config.block_size,
                                                              config.n_embd / config.n_heads});
    CHECK(cache.length == 0);
  }
  // The chapter-09 shapes: 2 * 4 * 64 * 64 = 32768 floats, 128 KiB.
  CHECK(attn::kv_cache_floats(attn::testing::lm_config(65, 64, 64, 4, 4), 1) * sizeof(float) ==
        131072);
}

TEST_CASE("prefill logits equal lm_forward's last row, for B = 1 and 2 and every prompt length") {
  attn::Rng init(3);
  const attn::ModelSpec config = attn::testing::lm_config(11, 6, 8, 2, 2);
  const attn::LmWeights w = random_model(init, config);
  for (const std::size_t B : {std::size_t{1}, std::size_t{2}}) {
    attn::KvCache cache = attn::kv_cache_init(config, B);
    for (std::size_t T = 1; T <= config.block_size; ++T) {
      CAPTURE(B);
      CAPTURE(T);
      const std::vector<int> tokens = random_ids(init, B * T, config.vocab_size);
      const attn::Matrix& got = attn::lm_prefill(cache, tokens, w, config);
      CHECK(cache.length == T);
      CHECK_TENSOR_NEAR(got, forward_last(tokens, B, w, config), 2e-5, 1e-5);
    }
  }
}

TEST_CASE("every step's logits equal lm_forward over the whole sequence so far") {
  for (const std::uint64_t seed : {5u, 6u, 7u}) {
    attn::Rng init(seed);
    const attn::ModelSpec config = seed == 7 ? attn::testing::lm_config(65, 64, 64, 4, 4)
                                             : attn::testing::lm_config(13, 9, 12, 3, 3);
    const attn::LmWeights w = random_model(init, config);
    const std::size_t B = seed == 6 ? 2 : 1;
    attn::KvCache cache = attn::kv_cache_init(config, B);
    // Sequences stored per step: seqs[b] grows by one token per step.
    std::vector<std::vector<int>> seqs(B);
    std::vector<int> first = random_ids(init, B * 2, config.vocab_size);
    for (std::size_t b = 0; b < B; ++b) seqs[b] = {first[2 * b], first[2 * b + 1]};
    attn::lm_prefill(cache, first, w, config);
    while (cache.length < config.block_size) {
      const std::vector<int> next = random_ids(init, B, config.vocab_size);
      std::vector<int> all;
      for (std::size_t b = 0; b < B; ++b) {
        seqs[b].push_back(next[b]);
        all.insert(all.end(), seqs[b].begin(), seqs[b].end());
      }
      const attn::Matrix& got = attn::lm_step(cache, next, w, config);
      CAPTURE(seed);
      CAPTURE(cache.length);
      CHECK_TENSOR_NEAR(got, forward_last(all, B, w, config), 2e-5, 1e-5);
    }
    CHECK(cache.length == config.block_size);
  }
}

TEST_CASE("keys and values in the cache are the projections of each layer's normalised input") {
  // Layer 0 by hand: k = ln1(wte[id] + wpe[t]) @ w_k, head hh in columns [hh*hs, (hh+1)*hs).
  attn::Rng init(8);
  const attn::ModelSpec config = attn::testing::lm_config(11, 6, 8, 2, 1);
  const attn::LmWeights w = random_model(init, config);
  attn::KvCache cache = attn::kv_cache_init(config, 1);
  const std::vector<int> tokens = {3, 1, 4, 1};
  attn::lm_prefill(cache, tokens, w, config);
  const attn::BlockWeights& b = w.blocks[0];
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    attn::Matrix x(std::array<std::size_t, 2>{1, 8});
    for (std::size_t c = 0; c < 8; ++c)
      x(0, c) = w.wte(static_cast<std::size_t>(tokens[t]), c) + w.wpe(t, c);
    const attn::Matrix h = attn::layer_norm<2>(x, b.ln1_gamma, b.ln1_beta, 1e-5f);
    for (std::size_t j = 0; j < 8; ++j) {
      double k = 0.0, v = 0.0;
      for (std::size_t c = 0; c < 8; ++c) {
        k += static_cast<double>(h(0, c)) * static_cast<double>(b.attn.w_k(c, j));
        v += static_cast<double>(h(0, c)) * static_cast<double>(b.attn.w_v(c, j));
      }
      CHECK(cache.keys[0](0, j / 4, t, j % 4) == doctest::Approx(k).epsilon(1e-5));
      CHECK(cache.values[0](0, j / 4, t, j % 4) == doctest::Approx(v).epsilon(1e-5));
    }
  }
}

TEST_CASE(
    "the model appends with kv_append's layout: its cache rebuilt by kv_append, bit for bit") {
  // One KV append serves the exercise's attn::kv_append and the model's prefill and steps. Read
  // each cached position back as rows (B, H*hs), append them to an empty cache: the same bits.
  attn::Rng init(12);
  const attn::ModelSpec config = attn::testing::lm_config(13, 7, 12, 3, 2);
  const attn::LmWeights w = random_model(init, config);
  attn::KvCache cache = attn::kv_cache_init(config, 2);
  attn::lm_prefill(cache, std::vector<int>{3, 1, 4, 1, 5, 9, 2, 6}, w, config);  // B 2, T 4
  const std::vector<int> next = {7, 0};
  attn::lm_step(cache, next, w, config);  // position 4, appended by a step
  const std::size_t B = 2, H = 3, hs = 4;
  for (std::size_t l = 0; l < config.n_layers; ++l) {
    for (const attn::Tensor<4>* kept : {&cache.keys[l], &cache.values[l]}) {
      attn::Tensor<4> rebuilt = xt::zeros<float>(kept->shape());
      for (std::size_t t = 0; t < cache.length; ++t) {
        attn::Matrix rows(std::array<std::size_t, 2>{B, H * hs});
        for (std::size_t b = 0; b < B; ++b)
          for (std::size_t h = 0; h < H; ++h)
            for (std::size_t j = 0; j < hs; ++j) rows(b, h * hs + j) = (*kept)(b, h, t, j);
        attn::kv_append(rebuilt, rows, t);
      }
      bool same = true;  // every cached position (the rest of the cache is never read)
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
          for (std::size_t t = 0; t < cache.length; ++t)
            for (std::size_t j = 0; j < hs; ++j)
              same = same && std::memcmp(&rebuilt(b, h, t, j), &(*kept)(b, h, t, j), 4) == 0;
      CAPTURE(l);
      CHECK(same);
    }
  }
}

TEST_CASE(
    "a KvCache counts its own work: one prefill, then a step per token, re-fills past T_max") {
  const attn::ModelSpec tiny = attn::testing::lm_config(11, 6, 8, 2, 2);  // T_max 6
  attn::Rng init(31);
  const attn::LmWeights w = attn::lm_init(init, tiny);
  attn::GenerateOptions g;
  g.max_new_tokens = 9;
  attn::Rng r1(4), r2(4);
  const std::vector<int> prompt{1, 2, 3};
  attn::KvCache cache = attn::kv_cache_init(tiny, 1);
  attn::KvCache other = attn::kv_cache_init(tiny, 1);
  CHECK(attn::lm_generate_cached(cache, w, tiny, prompt, g, r1) ==
        attn::lm_generate(w, tiny, prompt, g, r2));
  // 3 (the prompt's prefill) + 3 steps (positions 3, 4, 5) + 5 re-fills of 6 positions.
  CHECK(cache.work.prefills == 6);
  CHECK(cache.work.steps == 3);
  CHECK(cache.work.positions == 3 + 3 + 5 * 6);
  CHECK(other.work.positions == 0);  // another cache's work is its own
  // lm_prefill and lm_step count B positions per sequence.
  attn::KvCache two = attn::kv_cache_init(tiny, 2);
  const std::vector<int> tokens{1, 2, 3, 4};  // B = 2 sequences of 2
  (void)attn::lm_prefill(two, tokens, w, tiny);
  (void)attn::lm_step(two, std::span<const int>(tokens.data(), 2), w, tiny);
  CHECK(two.work.prefills == 1);
  CHECK(two.work.steps == 1);
  CHECK(two.work.positions == 4 + 2);
  CHECK_THROWS_AS(attn::lm_generate_cached(two, w, tiny, prompt, g, r1), std::invalid_argument);
}

TEST_CASE("lm_generate_cached gives lm_generate's tokens, token for token") {
  struct Case {
    const char* name;
    attn::ModelSpec config;
    std::size_t prompt_length;
    attn::GenerateOptions options;
  };
  const auto opts = [](std::size_t n, float temperature, std::size_t top_k, float top_p,
                       bool greedy) {
    attn::GenerateOptions o;
    o.max_new_tokens = n;
    o.temperature = temperature;
    o.top_k = top_k;
    o.top_p = top_p;
    o.greedy = greedy;
    return o;
  };
  const attn::ModelSpec tiny = attn::testing::lm_config(11, 6, 8, 2, 2);
  const attn::ModelSpec mid = attn::testing::lm_config(13, 9, 12, 3, 3);
  const attn::ModelSpec ch09 = attn::testing::lm_config(65, 64, 64, 4, 4);
  const std::vector<Case> cases = {
      {"greedy, short prompt, runs past T_max", tiny, 2, opts(30, 1.0f, 0, 1.0f, true)},
      {"greedy, prompt longer than T_max", mid, 15, opts(25, 1.0f, 0, 1.0f, true)},
      {"sampled at temperature 1", tiny, 1, opts(40, 1.0f, 0, 1.0f, false)},
      {"sampled at temperature 0.7, top-k 3", mid, 4, opts(40, 0.7f, 3, 1.0f, false)},
      {"sampled at temperature 1.3, top-p 0.9", mid, 12, opts(40, 1.3f, 0, 0.9f, false)},
      {"top-k 5 and top-p 0.6, prompt of exactly T_max", tiny, 6, opts(30, 0.9f, 5, 0.6f, false)},
      {"chapter-09 shapes, sampled past T_max", ch09, 1, opts(150, 1.0f, 0, 1.0f, false)},
      {"chapter-09 shapes, prompt of 80, top-k 10", ch09, 80, opts(40, 0.8f, 10, 0.95f, false)},
  };
  for (const Case& c : cases) {
    for (const std::uint64_t seed : {1u, 2u, 3u}) {
      CAPTURE(c.name);
      CAPTURE(seed);
      attn::Rng init(seed * 100 + c.prompt_length);
      const attn::LmWeights w = random_model(init, c.config);
      const std::vector<int> prompt = random_ids(init, c.prompt_length, c.config.vocab_size);
      attn::Rng a(seed), b(seed);
      const std::vector<int> uncached = attn::lm_generate(w, c.config, prompt, c.options, a);
      std::vector<int> streamed;
      const std::vector<int> cached = attn::lm_generate_cached(
          w, c.config, prompt, c.options, b, [&streamed](int t) { streamed.push_back(t); });
      REQUIRE(uncached.size() == c.options.max_new_tokens);
      CHECK(cached == uncached);
      CHECK(streamed == cached);
      // Both drew the same number of random numbers: the generators are still in step.
      CHECK(a.next_u32() == b.next_u32());
    }
  }
}

TEST_CASE("chapter 09's models: a separate output head, ReLU or tanh GELU, another FFN width") {
  // The variants a training run of chapter 09 saves by default (the lecture's head and ReLU),
  // checked like the default model: cached tokens equal lm_generate's, past T_max too.
  attn::ModelChoices relu_untied = attn::testing::lm_choices(11, 6, 8, 2, 2);
  relu_untied.ablations.tied_head = false;
  relu_untied.activation = attn::Activation::relu;
  attn::ModelChoices tanh_wide = attn::testing::lm_choices(13, 5, 12, 3, 1);
  tanh_wide.activation = attn::Activation::gelu_tanh;
  tanh_wide.ffn_hidden = 20;
  for (const attn::ModelSpec& config :
       {attn::resolve_spec(relu_untied), attn::resolve_spec(tanh_wide)}) {
    for (const std::uint64_t seed : {4u, 5u}) {
      CAPTURE(seed);
      attn::Rng init(seed);
      attn::LmWeights w = attn::lm_init(init, config);
      // Larger weights than lm_init's 0.02, so the head and the FFN shape the distribution.
      for (attn::NamedTensor& t : attn::lm_parameters(w)) {
        for (float& x : t.values) x += 0.3f * init.normal();
      }
      const std::vector<int> prompt = random_ids(init, 3, config.vocab_size);
      attn::GenerateOptions o;
      o.max_new_tokens = 20;
      attn::Rng a(seed), b(seed);
      const std::vector<int> uncached = attn::lm_generate(w, config, prompt, o, a);
      const std::vector<int> cached = attn::lm_generate_cached(w, config, prompt, o, b);
      CHECK(cached == uncached);
    }
  }
}

TEST_CASE("the ladder's reduced models (no LayerNorm, residual, FFN or projection) are refused") {
  const attn::ModelSpec reduced =
      attn::with_choices(attn::testing::lm_config(11, 6, 8, 2, 1),
                         [](attn::ModelChoices& m) { m.ablations.ffn = false; });
  attn::Rng init(1);
  const attn::LmWeights w = attn::lm_init(init, reduced);
  const std::vector<int> prompt = {1, 2};
  attn::GenerateOptions o;
  o.max_new_tokens = 3;
  attn::Rng rng(1);
  CHECK_THROWS_WITH_AS(attn::lm_generate_cached(w, reduced, prompt, o, rng),
                       doctest::Contains("reduced variants"), std::invalid_argument);
}

TEST_CASE("the tokens do not depend on the library's thread count") {
  attn::Rng init(31);
  const attn::ModelSpec config = attn::testing::lm_config(65, 64, 64, 4, 2);
  const attn::LmWeights w = random_model(init, config);
  attn::GenerateOptions o;
  o.max_new_tokens = 100;
  o.top_k = 12;
  const std::vector<int> prompt = random_ids(init, 70, 65);  // re-fills from the first token
  const std::size_t saved = attn::num_threads();
  std::vector<std::vector<int>> runs;
  for (const std::size_t threads : {std::size_t{1}, std::size_t{2}, std::size_t{3}}) {
    attn::set_num_threads(threads);
    attn::Rng rng(4);
    runs.push_back(attn::lm_generate_cached(w, config, prompt, o, rng));
  }
  attn::set_num_threads(saved);
  CHECK(runs[0] == runs[1]);
  CHECK(runs[0] == runs[2]);
}

TEST_CASE("no allocation per generated token: 10 or 300 new tokens allocate the same") {
  attn::Rng init(11);
  const attn::ModelSpec config = attn::testing::lm_config(65, 64, 64, 4, 4);
  const attn::LmWeights w = random_model(init, config);
  const std::vector<int> prompt = {7, 3};
  const auto allocations = [&](std::size_t n, bool top_p) {
    attn::GenerateOptions o;
    o.max_new_tokens = n;
    o.top_k = 20;
    o.top_p = top_p ? 0.9f : 1.0f;
    attn::Rng rng(1);
    const long before = attn_test::allocations();
    const std::vector<int> out = attn::lm_generate_cached(w, config, prompt, o, rng);
    const long after = attn_test::allocations();
    REQUIRE(out.size() == n);
    return after - before;
  };
  for (const bool top_p : {false, true}) {
    const long few = allocations(10, top_p);    // steps only
    const long many = allocations(300, top_p);  // 62 steps, then a re-fill per token
    CAPTURE(top_p);
    CHECK(few > 0);  // the counter works: the cache, the sampler, the output are allocated
    CHECK(many == few);
  }
  // The uncached loop allocates for every token (its forward returns new tensors).
  attn::GenerateOptions o;
  o.max_new_tokens = 10;
  attn::Rng rng(1);
  const long before = attn_test::allocations();
  (void)attn::lm_generate(w, config, prompt, o, rng);
  CHECK(attn_test::allocations() - before > 10);
}

TEST_CASE("steps write into the buffers allocated up front: data pointers never move") {
  attn::Rng init(12);
  const attn::ModelSpec config = attn::testing::lm_config(11, 6, 8, 2, 2);
  const attn::LmWeights w = random_model(init, config);
  attn::KvCache cache = attn::kv_cache_init(config, 1);
  const float* keys0 = cache.keys[0].data();
  const float* values1 = cache.values[1].data();
  const float* logits = cache.logits.data();
  const float* hidden = cache.hidden.data();
  const attn::Matrix* out = &attn::lm_prefill(cache, std::vector<int>{1}, w, config);
  for (int t = 0; t < 5; ++t) out = &attn::lm_step(cache, std::vector<int>{t}, w, config);
  attn::lm_prefill(cache, std::vector<int>{1, 2, 3, 4, 5, 6}, w, config);
  CHECK(out == &cache.logits);
  CHECK(cache.keys[0].data() == keys0);
  CHECK(cache.values[1].data() == values1);
  CHECK(cache.logits.data() == logits);
  CHECK(cache.hidden.data() == hidden);
}

TEST_CASE(
    "per-token FLOPs: the uncached formula is the blocks' plus the head, the cached is flat") {
  const attn::ModelSpec config = attn::testing::lm_config(65, 64, 64, 4, 4);
  for (const std::size_t T : {std::size_t{1}, std::size_t{10}, std::size_t{64}}) {
    const double blocks = 4.0 * attn::block_forward_flops(1, T, 64, 256, 4);
    CHECK(attn::lm_token_flops_uncached(config, T) ==
          doctest::Approx(blocks + 2.0 * static_cast<double>(T) * 64 * 65));
  }
  // A step at position n: 4 layers of one row (12 C^2 per row) plus 4 (n + 1) C, plus the head.
  CHECK(attn::lm_token_flops_cached(config, 0) ==
        doctest::Approx(4.0 * (2.0 * 12 * 64 * 64 + 4.0 * 64) + 2.0 * 64 * 65));
  CHECK(attn::lm_token_flops_cached(config, 63) - attn::lm_token_flops_cached(config, 0) ==
        doctest::Approx(4.0 * 4.0 * 63 * 64));
  // At a 64-token context the cache saves more than 40x the work.
  CHECK(attn::lm_token_flops_uncached(config, 64) / attn::lm_token_flops_cached(config, 63) > 40.0);
}

TEST_CASE("kv_append writes one position per head, attend_cache equals attention over the prefix") {
  attn::Rng rng(21);
  const std::size_t B = 2, H = 3, T_max = 5, hs = 4, C = H * hs;
  attn::Tensor<4> keys(std::array<std::size_t, 4>{B, H, T_max, hs});
  attn::Tensor<4> values(std::array<std::size_t, 4>{B, H, T_max, hs});
  keys.fill(std::numeric_limits<float>::quiet_NaN());  // never read past n
  values.fill(std::numeric_limits<float>::quiet_NaN());
  const std::size_t n = 4;
  std::vector<attn::Matrix> k_rows, v_rows;
  for (std::size_t t = 0; t < n; ++t) {
    k_rows.push_back(attn::randn(rng, B, C));
    v_rows.push_back(attn::randn(rng, B, C));
    attn::kv_append(keys, k_rows[t], t);
    attn::kv_append(values, v_rows[t], t);
  }
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t j = 0; j < hs; ++j) CHECK(keys(b, h, 2, j) == k_rows[2](b, h * hs + j));
  const attn::Matrix q = attn::randn(rng, B, C);
  const attn::Matrix got = attn::attend_cache(q, keys, values, n);
  // The same through scaled_dot_product_attention on (B, H, 1, hs) and (B, H, n, hs) copies.
  attn::Tensor<4> q4(std::array<std::size_t, 4>{B, H, 1, hs});
  attn::Tensor<4> k4(std::array<std::size_t, 4>{B, H, n, hs});
  attn::Tensor<4> v4(std::array<std::size_t, 4>{B, H, n, hs});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t j = 0; j < hs; ++j) {
        q4(b, h, 0, j) = q(b, h * hs + j);
        for (std::size_t t = 0; t < n; ++t) {
          k4(b, h, t, j) = k_rows[t](b, h * hs + j);
          v4(b, h, t, j) = v_rows[t](b, h * hs + j);
        }
      }
  const attn::AttentionResult want = attn::scaled_dot_product_attention(q4, k4, v4, false);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t j = 0; j < hs; ++j)
        CHECK(got(b, h * hs + j) == doctest::Approx(want.out(b, h, 0, j)).epsilon(1e-5));
  CHECK_THROWS_WITH_AS(attn::kv_append(keys, k_rows[0], T_max),
                       "attn::kv_append: position 5 is outside the cache (T_max = 5)",
                       std::invalid_argument);
  CHECK_THROWS_AS(attn::kv_append(keys, attn::randn(rng, B, C + 1), 0), std::invalid_argument);
  CHECK_THROWS_WITH_AS(attn::attend_cache(q, keys, values, 0),
                       "attn::attend_cache: n must be in [1, 5] (T_max), got 0",
                       std::invalid_argument);
  CHECK_THROWS_AS(attn::attend_cache(q, keys, values, 6), std::invalid_argument);
  CHECK_THROWS_AS(attn::attend_cache(attn::randn(rng, B, C - 1), keys, values, 2),
                  std::invalid_argument);
}

TEST_CASE("a re-fill costs L-1 whole layers on T_max-1 rows, the last layer's k and v, one step") {
  const attn::ModelSpec config = attn::testing::lm_config(65, 64, 64, 4, 4);
  const double C = 64, F = 256, rows = 63;
  const double want = 3.0 * (2.0 * rows * (4 * C * C + 2 * C * F) + 4.0 * rows * rows * C) +
                      2.0 * rows * 2 * C * C + attn::lm_token_flops_cached(config, 63);
  CHECK(attn::lm_token_flops_refill(config) == doctest::Approx(want));
  // Less than the forward it replaces, more than 3/4 of it (the last layer is the saving).
  const double full = attn::lm_token_flops_uncached(config, 64);
  CHECK(attn::lm_token_flops_refill(config) < full);
  CHECK(attn::lm_token_flops_refill(config) > 0.7 * full);
}

TEST_CASE("bad input: sizes, ids, a full cache, mismatched weights and options") {
  attn::Rng init(13);
  const attn::ModelSpec config = attn::testing::lm_config(11, 6, 8, 2, 2);
  const attn::LmWeights w = random_model(init, config);
  CHECK_THROWS_WITH_AS(attn::kv_cache_init(config, 0),
                       "attn::kv_cache_init: batch must be at least 1, got 0",
                       std::invalid_argument);
  // A model whose heads do not divide C has no spec to make a cache for: resolve_spec refuses it.
  attn::ModelChoices bad_heads = config.choices();
  bad_heads.n_heads = 3;
  CHECK_THROWS_WITH_AS(attn::resolve_spec(bad_heads),
                       "n_heads 3 does not divide n_embd 8 (every head gets n_embd / n_heads "
                       "channels)",
                       attn::SpecError);

  attn::KvCache cache = attn::kv_cache_init(config, 2);
  CHECK_THROWS_WITH_AS(
      attn::lm_prefill(cache, std::vector<int>{}, w, config),
      "attn::lm_prefill: expected B = 2 sequences of 1 to 6 tokens (T_max), got 0 ids",
      std::invalid_argument);
  CHECK_THROWS_AS(attn::lm_prefill(cache, std::vector<int>{1, 2, 3}, w, config),
                  std::invalid_argument);  // 3 ids for B = 2
  CHECK_THROWS_AS(attn::lm_prefill(cache, std::vector<int>(14, 1), w, config),
                  std::invalid_argument);  // 7 per sequence > T_max
  CHECK_THROWS_WITH_AS(attn::lm_prefill(cache, std::vector<int>{1, 11}, w, config),
                       "attn::lm_prefill: token id 11 at index 1 is outside [0, 11)",
                       std::invalid_argument);
  attn::lm_prefill(cache, std::vector<int>(12, 1), w, config);  // full: 6 positions
  CHECK_THROWS_WITH_AS(
      attn::lm_step(cache, std::vector<int>{1, 2}, w, config),
      "attn::lm_step: the cache is full (6 positions, block_size); crop and prefill again",
      std::invalid_argument);
  attn::lm_prefill(cache, std::vector<int>{1, 2}, w, config);
  CHECK_THROWS_WITH_AS(attn::lm_step(cache, std::vector<int>{1}, w, config),
                       "attn::lm_step: expected one token per sequence (B = 2), got 1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(attn::lm_step(cache, std::vector<int>{1, -1}, w, config),
                       "attn::lm_step: token id -1 at index 1 is outside [0, 11)",
                       std::invalid_argument);
  // A cache made for another model.
  attn::KvCache other = attn::kv_cache_init(attn::testing::lm_config(11, 6, 8, 2, 3), 1);
  CHECK_THROWS_WITH_AS(attn::lm_prefill(other, std::vector<int>{1}, w, config),
                       "attn::lm_prefill: the cache was not made by kv_cache_init for this config",
                       std::invalid_argument);
  // A cache made for a model of the same sizes but a narrower FFN (F = 16, this one's 32): its
  // keys, values and logits fit, its FFN workspace `hidden` does not and would be written past.
  const attn::ModelSpec narrow =
      attn::with_choices(config, [&](attn::ModelChoices& m) { m.ffn_hidden = 2 * config.n_embd; });
  attn::KvCache narrow_cache = attn::kv_cache_init(narrow, 1);
  for (attn::Tensor<4>& k : narrow_cache.keys) k.fill(7.0f);
  narrow_cache.hidden.fill(7.0f);
  narrow_cache.logits.fill(7.0f);
  const attn::KvCache narrow_before = narrow_cache;
  CHECK_THROWS_WITH_AS(attn::lm_prefill(narrow_cache, std::vector<int>{1, 2, 3}, w, config),
                       "attn::lm_prefill: the cache was not made by kv_cache_init for this config",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(attn::lm_step(narrow_cache, std::vector<int>{1}, w, config),
                       "attn::lm_step: the cache was not made by kv_cache_init for this config",
                       std::invalid_argument);
  // Nothing written.
  CHECK(narrow_cache.length == 0);
  CHECK_TENSOR_NEAR(narrow_cache.keys[0], narrow_before.keys[0], 0.0, 0.0);
  CHECK_TENSOR_NEAR(narrow_cache.hidden, narrow_before.hidden, 0.0, 0.0);
  CHECK_TENSOR_NEAR(narrow_cache.logits, narrow_before.logits, 0.0, 0.0);
  // Weights that do not match the config.
  attn::LmWeights broken = w;
  broken.blocks[1].ffn.w1 = attn::Matrix(std::array<std::size_t, 2>{8, 16});
  attn::KvCache one = attn::kv_cache_init(config, 1);
  CHECK_THROWS_AS(
      attn::lm_prefill(one, std::vector<int>{1}, w, attn::testing::lm_config(11, 6, 8, 2, 3)),
      std::invalid_argument);
  CHECK_THROWS_WITH_AS(attn::lm_prefill(one, std::vector<int>{1}, broken, config),
                       "attn::lm_prefill: h1.w1 is (8, 16), expected (8, 32)",
                       std::invalid_argument);
  // Attention biases the spec does not have, or a spec with biases the weights lack: refused
  // before anything is written (the step writes them row by row into the spec's widths).
  attn::LmWeights biased = w;
  biased.blocks[0].attn.b_q = attn::Vector(std::array<std::size_t, 1>{8});
  CHECK_THROWS_AS(attn::lm_prefill(one, std::vector<int>{1}, biased, config),
                  std::invalid_argument);
  const attn::ModelSpec with_bias =
      attn::with_choices(config, [](attn::ModelChoices& c) { c.attn_bias = true; });
  attn::KvCache biased_cache = attn::kv_cache_init(with_bias, 1);
  CHECK_THROWS_AS(attn::lm_prefill(biased_cache, std::vector<int>{1}, w, with_bias),
                  std::invalid_argument);
  CHECK(biased_cache.length == 0);

  // lm_generate_cached rejects what lm_generate rejects, in the same words.
  attn::Rng rng(1);
  attn::GenerateOptions o;
  o.max_new_tokens = 3;
  CHECK_THROWS_WITH_AS(attn::lm_generate_cached(w, config, std::vector<int>{}, o, rng),
                       "attn::lm_generate_cached: empty prompt (give at least one token)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(attn::lm_generate_cached(w, config, std::vector<int>{3, 11}, o, rng),
                       "attn::lm_generate_cached: prompt token 11 at position 1 is outside [0, 11)",
                       std::invalid_argument);
  for (const float p : {0.0f, -0.5f, 1.5f, std::numeric_limits<float>::quiet_NaN()}) {
    attn::GenerateOptions bad = o;
    bad.top_p = p;
    CHECK_THROWS_AS(attn::lm_generate_cached(w, config, std::vector<int>{1}, bad, rng),
                    std::invalid_argument);
    CHECK_THROWS_AS(attn::lm_generate(w, config, std::vector<int>{1}, bad, rng),
                    std::invalid_argument);
  }
  attn::GenerateOptions bad = o;
  bad.top_p = 0.0f;
  CHECK_THROWS_WITH_AS(attn::lm_generate(w, config, std::vector<int>{1}, bad, rng),
                       "attn::lm_generate: top_p must be in (0, 1], got 0", std::invalid_argument);
  bad = o;
  bad.top_k = 12;
  CHECK_THROWS_WITH_AS(
      attn::lm_generate_cached(w, config, std::vector<int>{1}, bad, rng),
      "attn::lm_generate_cached: top_k must be in [0, 11] (0 = all tokens), got 12",
      std::invalid_argument);
  bad = o;
  bad.temperature = 0.0f;
  CHECK_THROWS_WITH_AS(attn::lm_generate_cached(w, config, std::vector<int>{1}, bad, rng),
                       "attn::lm_generate_cached: temperature must be > 0, got 0",
                       std::invalid_argument);
  CHECK_THROWS_AS(attn::lm_generate_cached(broken, config, std::vector<int>{1}, o, rng),
                  std::invalid_argument);
}

// ---- The rolling cache (chapter 11's parts).

// A model with parts whose every weight matters: lm_init's shapes, values redrawn.
attn::LmWeights parts_model(attn::Rng& rng, const attn::ModelSpec& config) {
  attn::LmWeights w = attn::lm_init(rng, config);
  const float s = 1.0f / std::sqrt(static_cast<float>(config.n_embd));
  for (const attn::NamedTensor& t : attn::lm_parameters(w)) {
    const bool gamma = t.name.find("gamma") != std::string::npos;
    const float scale = t.name == "wte" || t.name == "wpe" ? 0.5f : t.rank == 2 ? 2.0f * s : 0.1f;
    for (float& x : t.values) x = gamma ? 1.0f + rng.normal(0.0f, 0.1f) : rng.normal(0.0f, scale);
  }
  return w;
}

// The Llama recipe with a window (Mistral's): rope, RMSNorm, SwiGLU, 2 K/V heads for 4, no bias.
// `positions` learned instead: a table, so T_max binds again.
attn::ModelSpec mistral_config(std::optional<std::size_t> window,
                               attn::Positions positions = attn::Positions::rope) {
  attn::ModelChoices c = attn::testing::lm_choices(11, 8, 16, 4, 2);
  c.positions = positions;
  c.normalization = attn::Normalization::rmsnorm;
  c.ffn = attn::FfnKind::swiglu;
  c.n_kv_heads = 2;
  c.bias = false;
  c.window = window;
  return attn::resolve_spec(c);
}

TEST_CASE("rolling cache: W positions of n_kv_heads per layer, the same after 10 W tokens") {
  const attn::ModelSpec c = mistral_config(4);
  attn::Rng rng(900);
  const attn::LmWeights w = parts_model(rng, c);
  attn::RollingKvCache cache = attn::rolling_cache_init(c, 2);
  // 2 (k, v) x L 2 x B 2 x W 4 x KV 2 x hs 4
  CHECK(attn::rolling_cache_floats(c, 2) == 2 * 2 * 2 * 4 * 2 * 4);
  const float* k0 = cache.keys[0].data();
  for (std::size_t i = 0; i < 40; ++i) {
    const std::array<int, 2> ids{static_cast<int>(i % 11), static_cast<int>((3 * i) % 11)};
    (void)attn::lm_step_rolling(cache, ids, w, c);
  }
  CHECK(cache.length == 40);  // 5 T_max: no position table, no limit
  CHECK(cache.keys[0].shape() == std::array<std::size_t, 4>{2, 2, 4, 4});
  CHECK(cache.keys[0].data() == k0);  // written round-robin in place
  // Multi-head attention (KV = H) holds twice as much, and no window holds T_max positions.
  const attn::ModelSpec mha =
      attn::with_choices(c, [](attn::ModelChoices& m) { m.n_kv_heads = std::nullopt; });
  CHECK(mha.n_kv_heads == 4);
  CHECK(attn::rolling_cache_floats(mha, 2) == 2 * attn::rolling_cache_floats(c, 2));
  const attn::ModelSpec whole =
      attn::with_choices(c, [](attn::ModelChoices& m) { m.window = std::nullopt; });
  CHECK(attn::rolling_cache_floats(whole, 2) == 2 * attn::rolling_cache_floats(c, 2));
}

TEST_CASE(
    "rolling cache: every step equals the full sliding-window forward, 10 W tokens past T_max") {
  for (std::size_t window : {1, 3, 4}) {
    const attn::ModelSpec c = mistral_config(window);
    attn::Rng rng(901 + window);
    const attn::LmWeights w = parts_model(rng, c);
    const std::vector<int> seq = random_ids(rng, 10 * 4, c.vocab_size);  // 40 > T_max = 8
    attn::RollingKvCache cache = attn::rolling_cache_init(c, 1);
    double worst = 0.0;
    std::size_t exact = 0;
    for (std::size_t t = 0; t < seq.size(); ++t) {
      const attn::Matrix& step =
          attn::lm_step_rolling(cache, std::span<const int>(&seq[t], 1), w, c);
      const std::vector<int> prefix(seq.begin(), seq.begin() + static_cast<std::ptrdiff_t>(t + 1));
      const attn::Matrix full = forward_last(prefix, 1, w, c);  // lm_forward over all t + 1
      const double d = xt::amax(xt::abs(step - full))();
      worst = std::max(worst, d);
      exact += d == 0.0 ? 1 : 0;
    }
    INFO("window " << window << ": largest difference " << worst << ", " << exact
                   << " of 40 steps bit for bit");
    CHECK(worst < 1e-5);
  }
}

TEST_CASE("rolling cache: lm_generate_cached gives lm_generate's tokens, greedy and sampled") {
  const attn::ModelSpec c = mistral_config(4);
  attn::Rng rng(910);
  const attn::LmWeights w = parts_model(rng, c);
  const std::vector<int> prompt{1, 5, 2};
  for (int mode = 0; mode < 3; ++mode) {
    attn::GenerateOptions g;
    g.max_new_tokens = 40;  // 10 W, five times T_max
    g.greedy = mode == 0;
    g.temperature = mode == 2 ? 0.7f : 1.0f;
    g.top_k = mode == 2 ? 5 : 0;
    attn::Rng r1(77), r2(77);
    const std::vector<int> full = attn::lm_generate(w, c, prompt, g, r1);
    const std::vector<int> cached = attn::lm_generate_cached(w, c, prompt, g, r2);
    INFO("mode " << mode);
    CHECK(cached == full);
  }
}

TEST_CASE("parts without the rolling window re-fill past T_max: lm_generate's tokens") {
  for (int variant = 0; variant < 3; ++variant) {
    // variant 0: rope, no window; 1 and 2: a table, so T_max still binds (2 with a window).
    const attn::ModelSpec c =
        mistral_config(variant == 2 ? std::optional<std::size_t>(3) : std::nullopt,
                       variant == 0 ? attn::Positions::rope : attn::Positions::learned);
    attn::Rng rng(920 + static_cast<std::uint64_t>(variant));
    const attn::LmWeights w = parts_model(rng, c);
    attn::GenerateOptions g;
    g.max_new_tokens = 20;
    attn::Rng r1(5), r2(5);
    const std::vector<int> prompt{3, 1};
    INFO("variant " << variant);
    CHECK(attn::lm_generate_cached(w, c, prompt, g, r2) == attn::lm_generate(w, c, prompt, g, r1));
  }
}

TEST_CASE(
    "rolling cache: its work counts each fill as one prefill and each token after as a step") {
  // No window, learned positions: the context is cropped to T_max = 8, so past it every token
  // re-fills the cache (one prefill of T_max positions) instead of stepping.
  const attn::ModelSpec c = mistral_config(std::nullopt, attn::Positions::learned);
  attn::Rng rng(940);
  const attn::LmWeights w = parts_model(rng, c);
  attn::GenerateOptions g;
  g.max_new_tokens = 10;
  attn::Rng r(3), r_plain(3);
  const std::vector<int> prompt{1, 2, 3};
  attn::RollingKvCache cache = attn::rolling_cache_init(c, 1);
  const std::vector<int> got = attn::lm_generate_cached(cache, w, c, prompt, g, r);
  CHECK(got == attn::lm_generate_cached(w, c, prompt, g, r_plain));
  // The prompt's fill (3 positions); tokens 2..6 step (context 4..8 <= T_max); tokens 7..10
  // each re-fill 8 positions.
  const attn::KvWork work = cache.work;
  CHECK(work.prefills == 1 + 4);
  CHECK(work.steps == 5);
  CHECK(work.positions == 3 + 5 + 4 * 8);
  // A rope model with a window never re-fills: one prefill, then a step per token. The work is
  // the cache's own: a second loop through the same cache adds to it, another cache's does not.
  const attn::ModelSpec m = mistral_config(4);
  const attn::LmWeights wm = parts_model(rng, m);
  attn::RollingKvCache cache_m = attn::rolling_cache_init(m, 1);
  (void)attn::lm_generate_cached(cache_m, wm, m, prompt, g, r);
  CHECK(cache_m.work.prefills == 1);
  CHECK(cache_m.work.steps == 9);
  CHECK(cache_m.work.positions == 3 + 9);
  const attn::KvWork first = cache_m.work;
  (void)attn::lm_generate_cached(cache_m, wm, m, prompt, g, r);
  const attn::KvWork second = cache_m.work - first;
  CHECK(second.prefills == 1);
  CHECK(second.steps == 9);
  CHECK(second.positions == 3 + 9);
  CHECK(cache.work.positions == work.positions);
  // A cache of the wrong kind, or of another model, is refused by name.
  attn::KvCache plain = attn::kv_cache_init(attn::testing::lm_config(11, 6, 8, 2, 2), 1);
  CHECK_THROWS_AS(attn::lm_generate_cached(plain, wm, m, prompt, g, r), std::invalid_argument);
  CHECK_THROWS_AS(attn::lm_generate_cached(cache, wm, m, prompt, g, r), std::invalid_argument);
}

TEST_CASE("a KvCache refuses chapter 11's parts by name, before anything runs") {
  // A KvCache step reads the position table and runs chapter 05's attention without a window:
  // a model with any other part would be read past its weights, or run wrong. The ladder's
  // reduced variants are refused by both caches.
  const attn::ModelSpec plain = attn::testing::lm_config(11, 6, 8, 2, 2);
  attn::Rng rng(950);
  const attn::LmWeights w = random_model(rng, plain);
  const attn::ModelSpec windowed =
      attn::with_choices(plain, [](attn::ModelChoices& m) { m.window = 4; });
  CHECK_THROWS_WITH_AS(attn::kv_cache_init(windowed, 1),
                       "attn::kv_cache_init: a KvCache runs chapter 07's parts only; this model "
                       "has window = 4: use a RollingKvCache (rolling_cache_init, lm_step_rolling)",
                       std::invalid_argument);
  // A cache of the same sizes, handed a windowed model: its weights have the same shapes, so
  // only the parts tell them apart. Nothing written.
  attn::KvCache cache = attn::kv_cache_init(plain, 1);
  CHECK_THROWS_WITH_AS(attn::lm_prefill(cache, std::vector<int>{1, 2}, w, windowed),
                       "attn::lm_prefill: a KvCache runs chapter 07's parts only; this model has "
                       "window = 4: use a RollingKvCache (rolling_cache_init, lm_step_rolling)",
                       std::invalid_argument);
  CHECK(cache.length == 0);
  (void)attn::lm_prefill(cache, std::vector<int>{1, 2}, w, plain);
  CHECK_THROWS_WITH_AS(attn::lm_step(cache, std::vector<int>{3}, w, windowed),
                       doctest::Contains("this model has window = 4"), std::invalid_argument);
  CHECK(cache.length == 2);
  // Every part is named, as model.txt names it.
  CHECK_THROWS_WITH_AS(attn::kv_cache_init(mistral_config(4), 1),
                       "attn::kv_cache_init: a KvCache runs chapter 07's parts only; this model "
                       "has positions = rope, n_kv_heads = 2, window = 4, normalization = rmsnorm, "
                       "ffn = swiglu, bias = false: use a RollingKvCache (rolling_cache_init, "
                       "lm_step_rolling)",
                       std::invalid_argument);
  const attn::ModelSpec alibi = attn::with_choices(
      plain, [](attn::ModelChoices& m) { m.positions = attn::Positions::alibi; });
  CHECK_THROWS_WITH_AS(attn::kv_cache_init(alibi, 1), doctest::Contains("has positions = alibi:"),
                       std::invalid_argument);
  // GPT-2's attention biases are chapter 07's model with four more tensors: a KvCache runs them.
  const attn::ModelSpec gpt2 =
      attn::with_choices(plain, [](attn::ModelChoices& m) { m.attn_bias = true; });
  CHECK(attn::kv_cache_init(gpt2, 1).keys.size() == 2);
}

TEST_CASE("both caches check every tensor against the parameter table, by name") {
  const attn::ModelSpec c = mistral_config(4);  // RMSNorm, SwiGLU, 2 K/V heads, no bias
  attn::Rng rng(951);
  const attn::LmWeights w = parts_model(rng, c);
  const int id = 1;
  const auto step_error = [&](const attn::LmWeights& weights) -> std::string {
    attn::RollingKvCache cache = attn::rolling_cache_init(c, 1);
    try {
      (void)attn::lm_step_rolling(cache, std::span<const int>(&id, 1), weights, c);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no exception";
  };
  REQUIRE(step_error(w) == "no exception");
  // A tensor the model does not have (RMSNorm has no beta), which the rolling step ignored.
  attn::LmWeights beta = w;
  beta.blocks[1].ln1_beta = xt::zeros<float>({16});
  CHECK(step_error(beta) ==
        "attn::lm_step_rolling: h1.ln1_beta is (16,), expected empty (this model has no ln1_beta)");
  // Multi-head w_k in a model of 2 K/V heads of 4: the step would write 16 columns into a
  // buffer of 8.
  attn::LmWeights mha = w;
  mha.blocks[0].attn.w_k = attn::Matrix(std::array<std::size_t, 2>{16, 16});
  CHECK(step_error(mha) == "attn::lm_step_rolling: h0.w_k is (16, 16), expected (16, 8)");
  // lm_generate_cached checks before it fills the cache.
  attn::GenerateOptions o;
  o.max_new_tokens = 2;
  attn::Rng r(1);
  CHECK_THROWS_WITH_AS(attn::lm_generate_cached(mha, c, std::vector<int>{1}, o, r),
                       "attn::lm_generate_cached: h0.w_k is (16, 16), expected (16, 8)",
                       std::invalid_argument);
  // A KvCache model with an FFN the spec does not have: SwiGLU's matrices beside the MLP's.
  const attn::ModelSpec plain = attn::testing::lm_config(11, 6, 8, 2, 2);
  attn::LmWeights extra = random_model(rng, plain);
  extra.blocks[0].swiglu.w_up = attn::Matrix(std::array<std::size_t, 2>{8, 32});
  attn::KvCache cache = attn::kv_cache_init(plain, 1);
  CHECK_THROWS_WITH_AS(attn::lm_prefill(cache, std::vector<int>{1}, extra, plain),
                       "attn::lm_prefill: h0.w_up is (8, 32), expected empty (this model has no "
                       "w_up)",
                       std::invalid_argument);
}

TEST_CASE("rolling cache: a full cache, a wrong cache and bad ids are refused") {
  const attn::ModelSpec c = mistral_config(std::nullopt);  // no window: T_max positions
  attn::Rng rng(930);
  const attn::LmWeights w = parts_model(rng, c);
  attn::RollingKvCache cache = attn::rolling_cache_init(c, 1);
  const int id = 1;
  for (std::size_t i = 0; i < c.block_size; ++i)
    (void)attn::lm_step_rolling(cache, std::span<const int>(&id, 1), w, c);
  CHECK_THROWS_WITH_AS(attn::lm_step_rolling(cache, std::span<const int>(&id, 1), w, c),
                       "attn::lm_step_rolling: the cache is full (8 positions, block_size); crop "
                       "and start again",
                       std::invalid_argument);
  attn::RollingKvCache fresh = attn::rolling_cache_init(c, 1);
  const int bad = 11;
  CHECK_THROWS_WITH_AS(attn::lm_step_rolling(fresh, std::span<const int>(&bad, 1), w, c),
                       "attn::lm_step_rolling: token id 11 at index 0 is outside [0, 11)",
                       std::invalid_argument);
  const attn::ModelSpec other = attn::with_choices(c, [](attn::ModelChoices& m) { m.window = 4; });
  CHECK_THROWS_WITH_AS(attn::lm_step_rolling(fresh, std::span<const int>(&id, 1), w, other),
                       "attn::lm_step_rolling: the cache was not made by rolling_cache_init for "
                       "this config",
                       std::invalid_argument);
  CHECK_THROWS_AS(attn::rolling_cache_init(c, 0), std::invalid_argument);
}

TEST_CASE(
    "no allocation per generated token through the rolling cache: ALiBi, chapter 11's parts") {
  // A rolling step keeps its activations in the cache (RollingKvCache::step) and computes
  // ALiBi's slopes per score row: 10 or 40 new tokens allocate the same. T_max = 8: past it, a
  // model without a window re-fills the cache for every token.
  const attn::ModelSpec alibi =
      attn::with_choices(attn::testing::lm_config(11, 8, 16, 4, 2),
                         [](attn::ModelChoices& m) { m.positions = attn::Positions::alibi; });
  const attn::ModelSpec alibi_window =
      attn::with_choices(alibi, [](attn::ModelChoices& m) { m.window = 3; });
  const attn::ModelSpec no_bias =
      attn::with_choices(alibi, [](attn::ModelChoices& m) { m.bias = false; });
  for (const attn::ModelSpec& config : {alibi, alibi_window, no_bias, mistral_config(4)}) {
    attn::Rng init(13);
    const attn::LmWeights w = parts_model(init, config);
    const auto allocations = [&](std::size_t n) {
      attn::GenerateOptions o;
      o.max_new_tokens = n;
      o.top_k = 5;
      attn::Rng rng(1);
      const long before = attn_test::allocations();
      const std::vector<int> out =
          attn::lm_generate_cached(w, config, std::vector<int>{7, 3}, o, rng);
      const long after = attn_test::allocations();
      REQUIRE(out.size() == n);
      return after - before;
    };
    const long few = allocations(10);
    const long many = allocations(40);
    CAPTURE(attn::positions_name(config.positions));
    CAPTURE(config.window.value_or(0));
    CAPTURE(config.bias);
    CHECK(few > 0);
    CHECK(many == few);
  }
}

}  // TEST_SUITE

TEST_SUITE("sampler") {

TEST_CASE("greedy picks the argmax, the first on ties, and draws no random number") {
  attn::TokenSampler sampler(5);
  attn::SamplingOptions o;
  o.greedy = true;
  attn::Rng rng(1), untouched(1);
  CHECK(sampler.next(std::vector<float>{0.1f, 2.0f, -1.0f, 2.0f, 1.9f}, o, rng) == 1);
  CHECK(sampler.next(std::vector<float>{-3.0f, -2.0f, -1.0f, -4.0f, -1.5f}, o, rng) == 2);
  CHECK(rng.next_u32() == untouched.next_u32());
}

TEST_CASE("without top-p the sampler draws what sample_logits and sample_top_k draw") {
  attn::TokenSampler sampler(6);
  const std::vector<float> logits = {0.3f, -1.0f, 2.0f, 0.5f, 0.5f, -0.2f};
  for (const std::size_t k : {std::size_t{0}, std::size_t{2}, std::size_t{4}, std::size_t{6}}) {
    attn::SamplingOptions o;
    o.temperature = 0.8f;
    o.top_k = k;
    attn::Rng a(7), b(7);
    for (int i = 0; i < 200; ++i) {
      const int want =
          k == 0 ? attn::sample_logits(logits, 0.8f, b) : attn::sample_top_k(logits, 0.8f, k, b);
      CHECK(sampler.next(logits, o, a) == want);
    }
  }
}

TEST_CASE("top-p keeps the fewest most likely ids whose mass reaches p") {
  // Probabilities 0.5, 0.25, 0.125, 0.0625, 0.0625 (as logits: their logs).
  const std::vector<float> probs = {0.0625f, 0.5f, 0.125f, 0.25f, 0.0625f};
  std::vector<float> logits;
  for (const float p : probs) logits.push_back(std::log(p));
  attn::TokenSampler sampler(5);
  const auto counts = [&](float top_p) {
    attn::SamplingOptions o;
    o.top_p = top_p;
    attn::Rng rng(3);
    std::map<int, int> seen;
    for (int i = 0; i < 4000; ++i) ++seen[sampler.next(logits, o, rng)];
    return seen;
  };
  // p = 0.5: the single most likely id (its mass alone reaches 0.5).
  CHECK(counts(0.5f) == std::map<int, int>{{1, 4000}});
  // p = 0.7: ids 1 and 3 (0.75), renormalised to 2/3 and 1/3.
  const std::map<int, int> two = counts(0.7f);
  CHECK(two.size() == 2);
  CHECK(two.at(1) / 4000.0 == doctest::Approx(2.0 / 3.0).epsilon(0.05));
  // p = 0.8: ids 1, 3 and 2 (0.875); never 0 or 4.
  const std::map<int, int> three = counts(0.8f);
  CHECK(three.size() == 3);
  CHECK(three.count(0) == 0);
  CHECK(three.count(4) == 0);
  // The probabilities of the last draw are zero outside the nucleus.
  const std::span<const float> last = sampler.last_probs();
  REQUIRE(last.size() == 5);
  CHECK(last[0] == 0.0f);
  CHECK(last[4] == 0.0f);
  CHECK(last[1] > 0.0f);
  // p = 1: every id can come out.
  CHECK(counts(1.0f).size() == 5);
}

TEST_CASE("the sampler rejects logits of the wrong length and bad options") {
  attn::TokenSampler sampler(3);
  attn::Rng rng(1);
  attn::SamplingOptions o;
  CHECK_THROWS_WITH_AS(sampler.next(std::vector<float>{1.0f, 2.0f}, o, rng),
                       "attn::TokenSampler::next: logits of length 2, expected V = 3",
                       std::invalid_argument);
  o.top_p = 1.01f;
  CHECK_THROWS_WITH_AS(sampler.next(std::vector<float>{1.0f, 2.0f, 3.0f}, o, rng),
                       "attn::TokenSampler::next: top_p must be in (0, 1], got 1.01",
                       std::invalid_argument);
  CHECK_THROWS_AS(attn::TokenSampler(0), std::invalid_argument);
}

}  // TEST_SUITE
