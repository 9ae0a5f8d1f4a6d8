// test_reference: the reference block, language model and KV-cache step (attn/model/
// reference.hpp). In double, each backward passes the central-difference check and the step equals
// the full forward; in float, the fast block, model and cache equal it, part by part, within the
// golden tolerance |fast - ref| <= 1e-5 + 1e-4 |ref|.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/model/block.hpp"
#include "attn/model/kvcache.hpp"
#include "attn/model/model.hpp"
#include "attn/model/reference.hpp"
#include "attn/train/gradcheck.hpp"
#include "gradcheck_helpers.hpp"
#include "test_fixtures.hpp"
#include "test_helpers.hpp"

namespace {

using attn::BlockConfig;
using attn::ModelChoices;
using attn::ModelSpec;
using attn::Tensor;
using attn::Tensor64;
using attn::testing::check_caught;
using attn::testing::check_gradients;
using attn::testing::cspan_of;
using attn::testing::random_ids;
using attn::testing::random_lm;
using attn::testing::rechoose;
using attn::testing::span_of;

constexpr double kAtol = 1e-5, kRtol = 1e-4;  // the golden tolerance

// A span's numbers as a (n,) tensor, for CHECK_TENSOR_NEAR.
template <class S>
xt::xtensor<S, 1> flat(std::span<const S> s) {
  xt::xtensor<S, 1> t = xt::zeros<S>({s.size()});
  std::copy(s.begin(), s.end(), t.begin());
  return t;
}

// ---- The configurations: every part of BlockConfig, alone and together ----------------------

std::string describe(const BlockConfig& c) {
  const ModelSpec& p = c.spec;
  std::string s = std::string(attn::norm_name(c.norm)) + " " +
                  std::string(attn::normalization_name(p.normalization)) + " " +
                  std::string(attn::ffn_kind_name(p.ffn)) + " " +
                  std::string(attn::activation_name(p.activation)) +
                  " KV=" + std::to_string(p.n_kv_heads);
  if (!c.causal) s += " non-causal";
  if (!p.ablations.layer_norm) s += " noLN";
  if (!p.ablations.residual) s += " noRes";
  if (!p.ablations.ffn) s += " noFFN";
  if (p.rope()) s += " rope";
  if (p.window) s += " window=" + std::to_string(*p.window);
  if (!p.bias) s += " no-bias";
  if (p.attn_bias) s += " attn-bias";
  return s;
}

void llama(ModelChoices& c) {
  c.positions = attn::Positions::rope;
  c.normalization = attn::Normalization::rmsnorm;
  c.ffn = attn::FfnKind::swiglu;
  c.n_kv_heads = 2;
  c.bias = false;
}

// A block of width 8 with 4 heads (hs = 2, even for RoPE), its choices changed by `change`.
template <class Change>
BlockConfig block8(Change&& change) {
  return attn::testing::block_config(8, 4, change);
}
BlockConfig block8() { return attn::testing::block_config(8, 4); }

std::vector<BlockConfig> block_variants() {
  std::vector<BlockConfig> v;
  const auto with = [&](auto change) { v.push_back(block8(change)); };
  const auto with_block = [&](auto change) {
    BlockConfig c = block8();
    change(c);
    v.push_back(c);
  };
  with([](ModelChoices&) {});
  with_block([](BlockConfig& c) { c.norm = attn::NormPlacement::post; });
  with([](ModelChoices& c) { c.activation = attn::Activation::relu; });
  with([](ModelChoices& c) { c.activation = attn::Activation::gelu_tanh; });
  with_block([](BlockConfig& c) { c.causal = false; });
  with([](ModelChoices& c) { c.ablations.layer_norm = false; });
  with([](ModelChoices& c) { c.ablations.residual = false; });
  with([](ModelChoices& c) { c.ablations.ffn = false; });
  with([](ModelChoices& c) { c.normalization = attn::Normalization::rmsnorm; });
  with([](ModelChoices& c) { c.ffn = attn::FfnKind::swiglu; });
  with([](ModelChoices& c) { c.n_kv_heads = 2; });
  with([](ModelChoices& c) { c.n_kv_heads = 1; });
  with([](ModelChoices& c) { c.positions = attn::Positions::rope; });
  with([](ModelChoices& c) { c.window = 2; });
  with([](ModelChoices& c) { c.bias = false; });
  with(llama);
  with([](ModelChoices& c) {
    llama(c);
    c.window = 3;
  });
  BlockConfig post = block8([](ModelChoices& c) {
    llama(c);
    c.window = 2;
  });
  post.norm = attn::NormPlacement::post;
  v.push_back(post);
  // Attention biases (GPT-2's), last so that the variants above keep their seeds: alone, with
  // gelu_tanh as GPT-2, post-norm, and with RoPE and shared K/V heads (b_k added before the
  // rotation, its gradient summed over a group).
  with([](ModelChoices& c) {
    c.attn_bias = true;
    c.activation = attn::Activation::gelu_tanh;
  });
  BlockConfig post_bias = block8([](ModelChoices& c) { c.attn_bias = true; });
  post_bias.norm = attn::NormPlacement::post;
  v.push_back(post_bias);
  with([](ModelChoices& c) {
    llama(c);
    c.attn_bias = true;
  });
  return v;
}

// block_init's weights for the parts, every value redrawn so that each matters (gamma near 1).
attn::BlockWeights random_block(attn::Rng& rng, std::size_t C, std::size_t F,
                                const BlockConfig& cfg) {
  REQUIRE(cfg.spec.n_embd == C);
  // The shapes of the spec's tensors, from lm_init (its own generator: every value is redrawn
  // from `rng` below, after as many draws as block_init used to make first).
  attn::Rng shapes(0);
  const attn::ModelSpec spec = attn::with_choices(cfg.spec, [&](ModelChoices& m) {
    m.ffn_hidden = F;
    m.n_layers = 1;
  });
  attn::BlockWeights w = attn::lm_init(shapes, spec).blocks[0];
  const bool gated = spec.ffn == attn::FfnKind::swiglu;
  (void)attn::block_init(rng, C, gated ? 4 * C : F);
  if (gated) (void)attn::randn(rng, 3 * C, F, 0.02f);
  for (Tensor<2>* m : {&w.attn.w_q, &w.attn.w_k, &w.attn.w_v, &w.attn.w_o, &w.ffn.w1, &w.ffn.w2,
                       &w.swiglu.w_gate, &w.swiglu.w_up, &w.swiglu.w_down})
    for (float& x : *m) x = rng.normal(0.0f, 0.5f);
  for (Tensor<1>* g : {&w.ln1_gamma, &w.ln2_gamma})
    for (float& x : *g) x = 1.0f + rng.normal(0.0f, 0.2f);
  for (Tensor<1>* b : {&w.ln1_beta, &w.ln2_beta, &w.ffn.b1, &w.ffn.b2, &w.attn.b_q, &w.attn.b_k,
                       &w.attn.b_v, &w.attn.b_o})
    for (float& x : *b) x = rng.normal(0.0f, 0.5f);
  if (!cfg.spec.ablations.ffn) w.ffn = {};  // a block without an FFN has no FFN weights
  return w;
}

// V 11, T_max 6, C 8, H 2 (hs = 4), L 2.
ModelSpec small_lm() { return attn::testing::lm_config(11, 6, 8, 2, 2); }

std::vector<ModelSpec> lm_variants() {
  std::vector<ModelSpec> v;
  const auto with = [&](auto change) { v.push_back(attn::with_choices(small_lm(), change)); };
  const auto llama_lm = [](ModelChoices& c) {
    c.positions = attn::Positions::rope;
    c.normalization = attn::Normalization::rmsnorm;
    c.ffn = attn::FfnKind::swiglu;
    c.n_kv_heads = 1;
    c.bias = false;
  };
  with([](ModelChoices&) {});
  with([](ModelChoices& c) { c.ablations.tied_head = false; });
  with([](ModelChoices& c) { c.ablations.layer_norm = false; });
  with([](ModelChoices& c) { c.ablations.residual = false; });
  with([](ModelChoices& c) { c.ablations.ffn = false; });
  with([](ModelChoices& c) { c.activation = attn::Activation::relu; });
  with([](ModelChoices& c) { c.positions = attn::Positions::rope; });
  with([](ModelChoices& c) { c.normalization = attn::Normalization::rmsnorm; });
  with([](ModelChoices& c) { c.ffn = attn::FfnKind::swiglu; });
  with([](ModelChoices& c) { c.n_kv_heads = 1; });
  with([](ModelChoices& c) { c.window = 2; });
  with([](ModelChoices& c) {
    c.bias = false;
    c.ablations.tied_head = false;
  });
  with(llama_lm);
  with([&](ModelChoices& c) {
    llama_lm(c);
    c.window = 2;
  });
  // Attention biases: GPT-2 (chapter 10's cache), and with Llama's parts (the rolling cache).
  with([](ModelChoices& c) {
    c.attn_bias = true;
    c.activation = attn::Activation::gelu_tanh;
  });
  with([&](ModelChoices& c) {
    llama_lm(c);
    c.attn_bias = true;
  });
  return v;
}

std::string describe(const ModelSpec& c) {
  return describe(attn::lm_block_config(c)) + (c.ablations.tied_head ? "" : " untied") +
         (c.positions == attn::Positions::rope ? " rope-positions" : "");
}

// Every named tensor of `got` equals `want`'s within the golden tolerance, same names in order.
// A gradient sums B*T rows of products: its absolute part is taken relative to the tensor's
// largest |element| (at least 1), as the gradient checks judge near-zero elements.
template <class A, class B>
void check_same_tensors(const std::vector<A>& got, const std::vector<B>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(want[i].name);
    CHECK(got[i].name == want[i].name);
    double scale = 1.0;
    for (const float v : want[i].values) scale = std::max(scale, std::abs(static_cast<double>(v)));
    CHECK_TENSOR_NEAR(flat<float>(got[i].values), flat<float>(want[i].values), kAtol * scale,
                      kRtol);
  }
}

}  // namespace

TEST_SUITE("reference") {

TEST_CASE(
    "double: the reference block's backward passes the check for every part; 0.1% off "
    "fails") {
  std::uint64_t seed = 900;
  for (const BlockConfig& cfg : block_variants()) {
    INFO(describe(cfg));
    attn::Rng rng(seed++);
    attn::ref::BlockWeights<double> w = attn::ref::cast<double>(random_block(rng, 8, 12, cfg));
    Tensor64<3> x = xt::cast<double>(attn::randn<3>(rng, {1, 4, 8}));
    const Tensor64<3> R = xt::cast<double>(attn::randn<3>(rng, {1, 4, 8}));
    attn::ref::BlockWeights<double> g = attn::ref::zeros_like(w);
    Tensor64<3> dx;
    attn::ref::block_backward(R, x, w, cfg, dx, g);
    std::vector<attn::GradTensor64> tensors{{"x", span_of(x), cspan_of(dx)}};
    const auto ws = attn::ref::parameters(w), gs = attn::ref::parameters(g);
    for (std::size_t i = 0; i < ws.size(); ++i)
      tensors.push_back({ws[i].name, ws[i].values, gs[i].values});
    const auto loss = [&] {
      return attn::weighted_sum(cspan_of(attn::ref::block_forward(x, w, cfg)), cspan_of(R));
    };
    check_gradients("ref block " + describe(cfg), attn::check_gradients(loss, tensors));
    Tensor64<3> wrong = dx * 1.001;
    check_caught("ref block " + describe(cfg),
                 attn::check_gradients(loss, {{"x x 1.001", span_of(x), cspan_of(wrong)}}));
  }
}

TEST_CASE("double: the reference model's backward passes the check with every part") {
  std::uint64_t seed = 940;
  for (const ModelSpec& config : lm_variants()) {
    INFO(describe(config));
    attn::Rng rng(seed++);
    attn::ref::LmWeights<double> w = attn::ref::cast<double>(random_lm(rng, config));
    const auto tokens = random_ids(rng, 1, 4, config.vocab_size);
    const auto targets = random_ids(rng, 1, 4, config.vocab_size);
    attn::ref::LmWeights<double> g = attn::ref::zeros_like(w);
    const double loss = attn::ref::lm_forward_backward(tokens, targets, w, config, g);
    CHECK(loss == attn::ref::lm_loss(tokens, targets, w, config));
    std::vector<attn::GradTensor64> tensors;
    const auto ws = attn::ref::parameters(w), gs = attn::ref::parameters(g);
    for (std::size_t i = 0; i < ws.size(); ++i)
      tensors.push_back({ws[i].name, ws[i].values, gs[i].values});
    check_gradients("ref lm " + describe(config),
                    attn::check_gradients(
                        [&] { return attn::ref::lm_loss(tokens, targets, w, config); }, tensors));
  }
}

TEST_CASE("float: the fast block equals the reference for every part, forward and backward") {
  std::uint64_t seed = 960;
  for (const BlockConfig& cfg : block_variants()) {
    INFO(describe(cfg));
    attn::Rng rng(seed++);
    const attn::BlockWeights w = random_block(rng, 8, 12, cfg);
    const Tensor<3> x = attn::randn<3>(rng, {2, 5, 8});
    const Tensor<3> dout = attn::randn<3>(rng, {2, 5, 8});
    const attn::ref::BlockWeights<float> rw = attn::ref::cast<float>(w);
    const Tensor<3> want = attn::ref::block_forward(x, rw, cfg);
    CHECK_TENSOR_NEAR(attn::block_forward(x, w, cfg).out, want, kAtol, kRtol);
    // The backward: the fast training forward and backward against the reference's.
    attn::BlockCache cache;
    CHECK_TENSOR_NEAR(attn::block_forward(x, w, cfg, cache), want, kAtol, kRtol);
    attn::BlockWeights g = attn::block_zeros_like(w);
    Tensor<3> dx;
    attn::block_backward(dout, cache, w, cfg, dx, g);
    attn::ref::BlockWeights<float> rg = attn::ref::zeros_like(rw);
    Tensor<3> rdx;
    attn::ref::block_backward(dout, x, rw, cfg, rdx, rg);
    CHECK_TENSOR_NEAR(dx, rdx, kAtol, kRtol);
    attn::ref::BlockWeights<float> fg = attn::ref::cast<float>(g);
    check_same_tensors(attn::ref::parameters(fg), attn::ref::parameters(rg));
  }
}

TEST_CASE("float: the fast model equals the reference for every part: logits, loss, gradients") {
  std::uint64_t seed = 980;
  for (const ModelSpec& config : lm_variants()) {
    INFO(describe(config));
    attn::Rng rng(seed++);
    attn::LmWeights w = random_lm(rng, config);
    const auto tokens = random_ids(rng, 2, 5, config.vocab_size);
    const auto targets = random_ids(rng, 2, 5, config.vocab_size);
    attn::ref::LmWeights<float> rw = attn::ref::cast<float>(w);
    CHECK_TENSOR_NEAR(attn::lm_forward(tokens, w, config),
                      attn::ref::lm_forward(tokens, rw, config), kAtol, kRtol);
    attn::LmWeights g = attn::lm_zeros_like(w);
    attn::LmCache cache;
    const double loss = attn::lm_forward_backward(tokens, targets, w, config, g, cache);
    attn::ref::LmWeights<float> rg = attn::ref::zeros_like(rw);
    const double rloss = attn::ref::lm_forward_backward(tokens, targets, rw, config, rg);
    CHECK(std::abs(loss - rloss) <= kAtol + kRtol * std::abs(rloss));
    check_same_tensors(attn::lm_parameters(g), attn::ref::parameters(rg));
  }
}

TEST_CASE(
    "double: the reference step equals the last row of the full forward, position by "
    "position") {
  std::uint64_t seed = 1000;
  for (const ModelSpec& config : lm_variants()) {
    INFO(describe(config));
    attn::Rng rng(seed++);
    const attn::ref::LmWeights<double> w = attn::ref::cast<double>(random_lm(rng, config));
    const auto tokens = random_ids(rng, 1, config.block_size, config.vocab_size);
    attn::ref::KvCache<double> cache;
    for (std::size_t n = 0; n < config.block_size; ++n) {
      INFO("position " << n);
      const Tensor64<1> step = attn::ref::lm_step(cache, tokens(0, n), w, config);
      const xt::xtensor<int, 2> prefix = xt::view(tokens, xt::all(), xt::range(0, n + 1));
      const Tensor64<3> full = attn::ref::lm_forward(prefix, w, config);
      const Tensor64<1> last = xt::view(full, 0, n, xt::all());
      CHECK_TENSOR_NEAR(step, last, 1e-12, 1e-10);
    }
    CHECK(cache.length == config.block_size);
  }
}

TEST_CASE(
    "float: the fast KV cache (lm_prefill/lm_step, or the rolling cache) equals the "
    "reference step") {
  std::uint64_t seed = 1020;
  for (const ModelSpec& config : lm_variants()) {
    const attn::Ablations& a = config.ablations;
    if (!a.layer_norm || !a.residual || !a.ffn) continue;  // no cache
    INFO(describe(config));
    attn::Rng rng(seed++);
    const attn::LmWeights w = random_lm(rng, config);
    const attn::ref::LmWeights<float> rw = attn::ref::cast<float>(w);
    // A rope model with a window goes on past T_max (block_size) without a refill.
    const bool unbounded = config.positions == attn::Positions::rope && config.window.has_value();
    const std::size_t n_tokens = config.block_size + (unbounded ? 3 : 0);
    const auto tokens = random_ids(rng, 1, n_tokens, config.vocab_size);
    attn::ref::KvCache<float> ref_cache;
    const bool rolling = attn::uses_rolling_cache(config);
    attn::RollingKvCache rc =
        rolling ? attn::rolling_cache_init(config, 1) : attn::RollingKvCache{};
    attn::KvCache kc = rolling ? attn::KvCache{} : attn::kv_cache_init(config, 1);
    for (std::size_t n = 0; n < n_tokens; ++n) {
      INFO("position " << n << (rolling ? " (rolling cache)" : ""));
      const int id = tokens(0, n);
      const std::span<const int> one(&id, 1);
      const attn::Matrix& fast = rolling  ? attn::lm_step_rolling(rc, one, w, config)
                                 : n == 0 ? attn::lm_prefill(kc, one, w, config)
                                          : attn::lm_step(kc, one, w, config);
      const Tensor<1> want = attn::ref::lm_step(ref_cache, id, rw, config);
      CHECK_TENSOR_NEAR(flat<float>({fast.data(), fast.size()}), want, kAtol, kRtol);
    }
  }
}

TEST_CASE("the reference names what it does not cover") {
  attn::Rng rng(3);
  BlockConfig cfg = block8();
  const attn::ref::BlockWeights<float> w = attn::ref::cast<float>(random_block(rng, 8, 12, cfg));
  const Tensor<3> x = attn::randn<3>(rng, {1, 3, 8});
  cfg = rechoose(cfg, [](ModelChoices& m) { m.ablations.attn_proj = false; });
  CHECK_THROWS_WITH_AS(attn::ref::block_forward(x, w, cfg), doctest::Contains("attn_proj"),
                       std::invalid_argument);
  ModelSpec lc = small_lm();
  const attn::ref::LmWeights<float> lw = attn::ref::cast<float>(random_lm(rng, lc));
  attn::ref::KvCache<float> cache;
  CHECK_THROWS_WITH_AS(attn::ref::lm_step(cache, 11, lw, lc), doctest::Contains("outside [0, V)"),
                       std::invalid_argument);
}

// Every gradient of g still 0: nothing was added.
template <class Weights>
void check_all_zero(Weights& g) {
  for (const auto& t : attn::ref::parameters(g)) {
    INFO(t.name);
    CHECK(std::all_of(t.values.begin(), t.values.end(), [](double v) { return v == 0.0; }));
  }
}

TEST_CASE("the reference backwards refuse another model's gradients, before adding anything") {
  attn::Rng rng(5);
  const std::string shaped =
      "grads must be shaped like the weights, tensor for tensor (make them with zeros_like)";
  const std::string block_msg = "attn::ref::block_backward: " + shaped;
  const std::string lm_msg = "attn::ref::lm_forward_backward: " + shaped;
  // The block: gradients of a block with 2 K/V heads for one with 4 (w_k (8, 4), not (8, 8)).
  // The backward reaches the attention last: the FFN's and ln2's gradients were added into
  // before attn::gqa_backward refused them.
  const BlockConfig cfg = block8();
  const BlockConfig fewer_kv = block8([](ModelChoices& m) { m.n_kv_heads = 2; });
  const attn::ref::BlockWeights<double> w = attn::ref::cast<double>(random_block(rng, 8, 12, cfg));
  attn::ref::BlockWeights<double> g =
      attn::ref::zeros_like(attn::ref::cast<double>(random_block(rng, 8, 12, fewer_kv)));
  const Tensor64<3> x = xt::cast<double>(attn::randn<3>(rng, {1, 4, 8}));
  Tensor64<3> dx;
  CHECK_THROWS_WITH_AS(attn::ref::block_backward(x, x, w, cfg, dx, g), block_msg.c_str(),
                       std::invalid_argument);
  check_all_zero(g);
  CHECK(dx.size() == 0);
  // The model: the gradients of one with a smaller vocabulary (wte (7, 8), rows up to 10 would be
  // written past) and of one with a narrower FFN (ffn_hidden 16, not 32).
  const ModelSpec lc = small_lm();
  const attn::ref::LmWeights<double> lw = attn::ref::cast<double>(random_lm(rng, lc));
  const ModelSpec fewer_ids = attn::with_choices(lc, [](ModelChoices& m) { m.vocab_size = 7; });
  const ModelSpec narrow =
      attn::with_choices(lc, [&](ModelChoices& m) { m.ffn_hidden = 2 * lc.n_embd; });
  const auto tokens = random_ids(rng, 1, 4, lc.vocab_size);
  for (const ModelSpec& other : {fewer_ids, narrow}) {
    INFO("grads of a model with V = " << other.vocab_size << ", ffn_hidden " << other.ffn_hidden);
    attn::ref::LmWeights<double> lg =
        attn::ref::zeros_like(attn::ref::cast<double>(random_lm(rng, other)));
    CHECK_THROWS_WITH_AS(attn::ref::lm_forward_backward(tokens, tokens, lw, lc, lg), lm_msg.c_str(),
                         std::invalid_argument);
    check_all_zero(lg);
  }
}

TEST_CASE("the reference step refuses another model's cache, before growing it") {
  attn::Rng rng(6);
  // A cache of one step of a 1-layer model, for a 2-layer one: its layer 1 would be indexed past
  // the cache's keys.
  const ModelSpec lc = small_lm();
  const ModelSpec one_layer = attn::with_choices(lc, [](ModelChoices& m) { m.n_layers = 1; });
  const attn::ref::LmWeights<double> w = attn::ref::cast<double>(random_lm(rng, lc));
  const attn::ref::LmWeights<double> w1 = attn::ref::cast<double>(random_lm(rng, one_layer));
  attn::ref::KvCache<double> cache;
  (void)attn::ref::lm_step(cache, 3, w1, one_layer);
  const attn::ref::KvCache<double> before = cache;
  CHECK_THROWS_WITH_AS(
      attn::ref::lm_step(cache, 4, w, lc),
      "attn::ref::lm_step: the cache must be empty (a new sequence) or hold L = 2 layers of keys "
      "and values of shape (KV, length, hs) = (2, 1, 4) from this model's earlier steps",
      std::invalid_argument);
  CHECK(cache.length == 1);
  REQUIRE(cache.keys.size() == 1);
  CHECK_TENSOR_NEAR(cache.keys[0], before.keys[0], 0.0, 0.0);
  CHECK_TENSOR_NEAR(cache.values[0], before.values[0], 0.0, 0.0);
  // A length that its keys do not have (a cache reset by hand, keys kept).
  attn::ref::KvCache<double> stale = before;
  stale.length = 0;
  CHECK_THROWS_AS(attn::ref::lm_step(stale, 4, w1, one_layer), std::invalid_argument);
  CHECK(stale.keys[0].shape()[1] == 1);
}

}  // TEST_SUITE
