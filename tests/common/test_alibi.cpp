// ALiBi (chapter 11), the model part end to end: the slopes, the bias, the fast attention kernel
// against the reference attention, the model against the float64 reference, the rolling cache
// against the full forward, generation with and without the cache, and model.txt.
// (The golden `alibi` cases check the reference against PyTorch: tests/golden/cases/alibi_*.)
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/fast/attention.hpp"
#include "attn/fast/gqa.hpp"
#include "attn/model/kvcache.hpp"
#include "attn/model/lm_files.hpp"
#include "attn/model/model.hpp"
#include "attn/model/reference.hpp"
#include "attn/ops/attention_ref.hpp"
#include "attn/ops/gqa.hpp"

namespace {

using attn::Tensor;

// A model with ALiBi positions (and, when asked, a window and grouped K/V heads).
attn::ModelSpec alibi_spec(std::optional<std::size_t> window, std::size_t kv_heads,
                           std::size_t T_max = 8) {
  attn::ModelChoices c;
  c.vocab_size = 11;
  c.block_size = T_max;
  c.n_embd = 16;
  c.n_heads = 4;
  c.n_layers = 2;
  c.positions = attn::Positions::alibi;
  c.window = window;
  c.n_kv_heads = kv_heads;
  return attn::resolve_spec(c);
}

// lm_init's weights, redrawn larger so that attention is peaked and every head matters.
attn::LmWeights peaked_model(attn::Rng& rng, const attn::ModelSpec& spec) {
  attn::LmWeights w = attn::lm_init(rng, spec);
  const auto redraw = [&](auto& t, float std) {
    for (auto& x : t) x = static_cast<float>(rng.normal()) * std;
  };
  redraw(w.wte, 0.5f);
  for (attn::BlockWeights& b : w.blocks) {
    redraw(b.attn.w_q, 0.5f);
    redraw(b.attn.w_k, 0.5f);
    redraw(b.attn.w_v, 0.3f);
  }
  return w;
}

// The largest difference of float results from a float64 reference, relative to the reference's
// largest magnitude (float32 keeps about 7 digits).
template <class F, class D>
double relative_error(const F& got, const D& ref) {
  return xt::amax(xt::abs(xt::cast<double>(got) - ref))() / std::max(1.0, xt::amax(xt::abs(ref))());
}

xt::xtensor<int, 2> ids_of(const std::vector<int>& ids) {
  xt::xtensor<int, 2> t({1, ids.size()});
  std::copy(ids.begin(), ids.end(), t.begin());
  return t;
}

}  // namespace

TEST_CASE("ALiBi's slopes are the paper's: powers of two, and the interleaved rule otherwise") {
  const std::vector<double> h8 = attn::alibi_slopes(8);
  REQUIRE(h8.size() == 8);
  for (std::size_t h = 0; h < 8; ++h) CHECK(h8[h] == std::exp2(-static_cast<double>(h + 1)));
  // H = 6: the 4 slopes of H = 4 (1/4, 1/16, 1/64, 1/256), then slopes 0 and 2 of H = 8.
  const std::vector<double> h6 = attn::alibi_slopes(6);
  const std::vector<double> want6{0.25, 1.0 / 16, 1.0 / 64, 1.0 / 256, 0.5, 0.125};
  CHECK(h6 == want6);
  CHECK(attn::alibi_slopes(1) == std::vector<double>{1.0 / 256});
  // H = 12: the 8 slopes of H = 8, then the odd-numbered 2^(-(2k+1)/2) of H = 16.
  const std::vector<double> h12 = attn::alibi_slopes(12);
  REQUIRE(h12.size() == 12);
  CHECK(h12[8] == doctest::Approx(std::exp2(-0.5)));
  CHECK(h12[11] == doctest::Approx(std::exp2(-3.5)));
  CHECK_THROWS_WITH_AS(attn::alibi_slopes(0), doctest::Contains("n_heads must be at least 1"),
                       std::invalid_argument);
  // One slope alone, as the fast kernels compute it per row: the same bits; 0 without ALiBi.
  attn::ScoreParts alibi;
  alibi.alibi = true;
  for (const std::size_t H : {1, 3, 6, 8, 12, 32}) {
    const std::vector<double> all = attn::score_slopes(alibi, H);
    for (std::size_t h = 0; h < H; ++h) CHECK(attn::score_slope(alibi, h, H) == all[h]);
  }
  CHECK(attn::score_slope(alibi, 3, 6) == 1.0 / 256);
  CHECK(attn::score_slope(alibi, 5, 6) == 0.125);
  CHECK(attn::score_slope(attn::ScoreParts{}, 2, 8) == 0.0);
}

TEST_CASE("the bias is -m_h times the distance, from the query's absolute position") {
  const xt::xtensor<double, 3> b = attn::alibi_bias<double>(2, 3, 5, /*offset=*/2);
  // H = 2: slopes 1/16 and 1/256. Query row 1 stands at position 3.
  CHECK(b(0, 1, 3) == 0.0);
  CHECK(b(0, 1, 0) == -3.0 / 16);
  CHECK(b(1, 2, 1) == -3.0 / 256);
  CHECK(b(1, 0, 4) == 2.0 / 256);  // a key after the query: hidden by any causal mask
}

TEST_CASE(
    "the score part as an option equals the bias tensor bit for bit; the fast kernel's "
    "bias, computed in its score loop, equals it over a sequence and a ring of slots") {
  attn::Rng rng(4200);
  const std::size_t H = 4, T = 9, hs = 8, W = 5;
  const xt::xtensor<float, 4> q = attn::randn<4>(rng, {1, H, T, hs});
  const xt::xtensor<float, 4> k = attn::randn<4>(rng, {1, H, T, hs});
  const xt::xtensor<float, 4> v = attn::randn<4>(rng, {1, H, T, hs});
  const attn::fast::HeadStrides seq{H * T * hs, T * hs, hs};
  std::vector<float> scratch(attn::fast::attention_scratch_floats(T, T, hs));
  for (const bool causal : {true, false}) {
    attn::AttentionOptions with_tensor;
    with_tensor.causal = causal;
    attn::AttentionOptions with_part = with_tensor;
    with_part.score.alibi = true;
    const auto a = attn::attention_ref<float>(q, k, v, with_part);
    const auto b =
        attn::attention_ref<float>(q, k, v, with_tensor, attn::alibi_bias<float>(H, T, T));
    CHECK(a.out == b.out);
    CHECK(a.probs == b.probs);
    xt::xtensor<float, 4> out = xt::zeros<float>({std::size_t{1}, H, T, hs});
    attn::fast::ScoreBias bias;
    bias.parts.alibi = true;
    bias.n_heads = H;
    attn::fast::attention_strided(1, H, T, T, hs, q.data(), seq, k.data(), seq, v.data(), seq,
                                  out.data(), seq, causal, scratch.data(), bias);
    INFO("causal " << causal);
    CHECK(xt::amax(xt::abs(out - a.out))() < 1e-6);
  }
  // A ring of W slots (the rolling cache): the query at position p = 7 sits in slot p % W = 2;
  // slot j holds position p - ((2 - j) mod W), so slots 3 and 4 hold positions 3 and 4.
  const std::size_t p = 7, slot = p % W;
  xt::xtensor<float, 4> ring_k = xt::zeros<float>({std::size_t{1}, H, W, hs});
  xt::xtensor<float, 4> ring_v = ring_k;
  for (std::size_t j = 0; j < W; ++j) {
    const std::size_t pos = p - (slot + W - j) % W;
    xt::view(ring_k, 0, xt::all(), j) = xt::view(k, 0, xt::all(), pos);
    xt::view(ring_v, 0, xt::all(), j) = xt::view(v, 0, xt::all(), pos);
  }
  const xt::xtensor<float, 4> q1 = xt::view(q, xt::all(), xt::all(), xt::range(p, p + 1));
  attn::AttentionOptions o;
  o.causal = true;
  o.window = W;
  o.offset = p;
  o.score.alibi = true;
  const xt::xtensor<float, 4> k8 = xt::view(k, xt::all(), xt::all(), xt::range(0, p + 1));
  const xt::xtensor<float, 4> v8 = xt::view(v, xt::all(), xt::all(), xt::range(0, p + 1));
  const auto want = attn::attention_ref<float>(q1, k8, v8, o);
  xt::xtensor<float, 4> out = xt::zeros<float>({std::size_t{1}, H, std::size_t{1}, hs});
  attn::fast::ScoreBias bias;
  bias.parts.alibi = true;
  bias.n_heads = H;
  bias.query = slot;
  bias.step = 0;
  bias.ring = W;
  const attn::fast::HeadStrides one{H * hs, hs, hs}, ring{H * W * hs, W * hs, hs};
  attn::fast::attention_strided(1, H, 1, W, hs, q1.data(), one, ring_k.data(), ring, ring_v.data(),
                                ring, out.data(), one, /*causal=*/false, scratch.data(), bias);
  CHECK(xt::amax(xt::abs(out - want.out))() < 1e-6);
  // Without the ring the slots would read as positions 0..4: a different answer.
  bias.ring = 0;
  bias.query = p;
  xt::xtensor<float, 4> wrong = out;
  attn::fast::attention_strided(1, H, 1, W, hs, q1.data(), one, ring_k.data(), ring, ring_v.data(),
                                ring, wrong.data(), one, /*causal=*/false, scratch.data(), bias);
  CHECK(xt::amax(xt::abs(wrong - want.out))() > 1e-3);
}

TEST_CASE("the fast kernel with ALiBi equals the reference attention, forward and backward") {
  for (const std::size_t KV : {4, 2, 1})
    for (const std::optional<std::size_t> window : {std::optional<std::size_t>{}, {3}}) {
      attn::Rng rng(4100 + KV);
      const std::size_t B = 2, T = 13, C = 16, H = 4, hs = C / H;
      attn::GqaConfig config;
      config.n_heads = H;
      config.n_kv_heads = KV;
      config.window = window;
      config.score.alibi = true;
      const Tensor<3> x = attn::randn<3>(rng, {B, T, C});
      attn::MhaWeights w;
      w.w_q = attn::randn(rng, C, C, 0.6f);
      w.w_k = attn::randn(rng, C, KV * hs, 0.6f);
      w.w_v = attn::randn(rng, C, KV * hs, 0.5f);
      w.w_o = attn::randn(rng, C, C, 0.3f);
      // The reference: the same weights in double.
      const attn::GqaWeights<double> w64{xt::cast<double>(w.w_q), xt::cast<double>(w.w_k),
                                         xt::cast<double>(w.w_v), xt::cast<double>(w.w_o)};
      attn::GqaCache<double> ref_cache;
      const xt::xtensor<double, 3> x64 = xt::cast<double>(x);
      const xt::xtensor<double, 3> ref = attn::gqa_forward<double>(x64, w64, config, ref_cache);
      attn::fast::MhaCache cache;
      Tensor<3> out;
      attn::fast::gqa_forward(x, w, config, cache, out);
      INFO("KV " << KV << ", window " << window.value_or(0));
      CHECK(xt::amax(xt::abs(xt::cast<double>(out) - ref))() < 1e-5);
      CHECK(xt::amax(xt::abs(xt::cast<double>(cache.weights) - ref_cache.weights))() < 1e-6);
      // Without ALiBi the outputs differ: the bias is really applied.
      attn::GqaConfig plain = config;
      plain.score.alibi = false;
      CHECK(xt::amax(xt::abs(attn::fast::gqa_forward(x, w, plain).out - out))() > 1e-3);

      const Tensor<3> dout = attn::randn<3>(rng, {B, T, C});
      Tensor<3> dx;
      attn::MhaWeights g{xt::zeros_like(w.w_q), xt::zeros_like(w.w_k), xt::zeros_like(w.w_v),
                         xt::zeros_like(w.w_o)};
      attn::fast::gqa_backward(dout, cache, w, config, dx, g);
      xt::xtensor<double, 3> dx64;
      attn::GqaWeights<double> g64{xt::zeros_like(w64.w_q), xt::zeros_like(w64.w_k),
                                   xt::zeros_like(w64.w_v), xt::zeros_like(w64.w_o)};
      attn::gqa_backward<double>(xt::cast<double>(dout), ref_cache, w64, config, dx64, g64);
      CHECK(relative_error(dx, dx64) < 2e-6);
      CHECK(relative_error(g.w_q, g64.w_q) < 2e-6);
      CHECK(relative_error(g.w_k, g64.w_k) < 2e-6);
      CHECK(relative_error(g.w_v, g64.w_v) < 2e-6);
    }
}

TEST_CASE("an ALiBi model: lm_forward and its gradients equal the float64 reference's") {
  const attn::ModelSpec spec = alibi_spec(std::nullopt, 2);
  attn::Rng rng(4200);
  const attn::LmWeights w = peaked_model(rng, spec);
  CHECK(w.wpe.size() == 0);  // no position table
  const xt::xtensor<int, 2> tokens = ids_of({1, 4, 1, 5, 9, 2, 6, 5});
  const xt::xtensor<int, 2> targets = ids_of({4, 1, 5, 9, 2, 6, 5, 3});
  const attn::ref::LmWeights<double> w64 = attn::ref::cast<double>(w);
  const xt::xtensor<double, 3> ref = attn::ref::lm_forward<double>(tokens, w64, spec);
  const Tensor<3> got = attn::lm_forward(tokens, w, spec);
  CHECK(xt::amax(xt::abs(xt::cast<double>(got) - ref))() < 1e-4);

  attn::LmWeights grads = attn::lm_zeros_like(w);
  attn::LmCache cache;
  const double loss = attn::lm_forward_backward(tokens, targets, w, spec, grads, cache);
  attn::ref::LmWeights<double> g64 = attn::ref::zeros_like(w64);
  const double ref_loss = attn::ref::lm_forward_backward<double>(tokens, targets, w64, spec, g64);
  CHECK(loss == doctest::Approx(ref_loss).epsilon(1e-5));
  for (std::size_t l = 0; l < w.blocks.size(); ++l) {
    CHECK(xt::amax(xt::abs(xt::cast<double>(grads.blocks[l].attn.w_q) - g64.blocks[l].attn.w_q))() <
          1e-4);
    CHECK(xt::amax(xt::abs(xt::cast<double>(grads.blocks[l].attn.w_k) - g64.blocks[l].attn.w_k))() <
          1e-4);
  }
  CHECK(xt::amax(xt::abs(xt::cast<double>(grads.wte) - g64.wte))() < 1e-4);
}

TEST_CASE("an ALiBi model: every rolling-cache step equals the full forward, past T_max") {
  for (const std::optional<std::size_t> window : {std::optional<std::size_t>{}, {3}}) {
    const attn::ModelSpec spec = alibi_spec(window, 2);
    attn::Rng rng(4300);
    const attn::LmWeights w = peaked_model(rng, spec);
    // Without a window the cache holds T_max = 8 positions; with one, 3 slots go round 8 times.
    const std::size_t n = window ? 24 : 8;
    std::vector<int> seq;
    for (std::size_t i = 0; i < n; ++i) seq.push_back(static_cast<int>(rng.below(11)));
    attn::RollingKvCache cache = attn::rolling_cache_init(spec, 1);
    double worst = 0.0;
    for (std::size_t t = 0; t < n; ++t) {
      const attn::Matrix& step =
          attn::lm_step_rolling(cache, std::span<const int>(&seq[t], 1), w, spec);
      const std::vector<int> prefix(seq.begin(), seq.begin() + static_cast<std::ptrdiff_t>(t + 1));
      const Tensor<3> full = attn::lm_forward(ids_of(prefix), w, spec);  // (1, t + 1, V)
      for (std::size_t v = 0; v < spec.vocab_size; ++v)
        worst = std::max(worst, static_cast<double>(std::abs(step(0, v) - full(0, t, v))));
    }
    INFO("window " << window.value_or(0) << ": largest difference " << worst);
    CHECK(worst < 1e-4);
  }
}

TEST_CASE("an ALiBi model generates the same tokens with and without the cache") {
  const attn::ModelSpec spec = alibi_spec(4, 4);
  attn::Rng rng(4400);
  const attn::LmWeights w = peaked_model(rng, spec);
  attn::GenerateOptions g;
  g.max_new_tokens = 30;  // past T_max = 8: a window and no table, so never cropped
  const std::vector<int> prompt{1, 2, 3};
  attn::Rng r1(9), r2(9);
  CHECK(attn::lm_generate_cached(w, spec, prompt, g, r1) ==
        attn::lm_generate(w, spec, prompt, g, r2));
}

TEST_CASE("an ALiBi model folder: model.txt says alibi, no wpe.npy, the same logits loaded") {
  const attn::ModelSpec spec = alibi_spec(std::nullopt, 4);
  attn::Rng rng(4500);
  const attn::LmWeights w = peaked_model(rng, spec);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "attn_test_alibi_model";
  std::filesystem::remove_all(dir);
  attn::save_lm(dir, w, spec);
  CHECK(!std::filesystem::exists(dir / "wpe.npy"));
  CHECK(attn::model_txt(spec).find("positions alibi\n") != std::string::npos);
  attn::ModelSpec loaded;
  const attn::LmWeights back = attn::load_lm(dir, 2, 4, loaded);
  CHECK(loaded == spec);
  const xt::xtensor<int, 2> tokens = ids_of({3, 1, 4});
  CHECK(attn::lm_forward(tokens, back, loaded) == attn::lm_forward(tokens, w, spec));
  std::filesystem::remove_all(dir);
}

TEST_CASE("ALiBi is a change of attention: chapter 09's attn_proj = false cannot take it") {
  attn::ModelChoices c;
  c.positions = attn::Positions::alibi;
  c.ablations.attn_proj = false;
  CHECK_THROWS_WITH_AS(attn::resolve_spec(c), doctest::Contains("runs chapter 05's attention only"),
                       attn::SpecError);
  CHECK(attn::parse_positions("alibi") == attn::Positions::alibi);
  CHECK(attn::positions_name(attn::Positions::alibi) == "alibi");
}
