// Tests for attn/model/block.hpp: the transformer block (chapter 06).
// The block is compared with a naive composition written here from attn::matmul and plain
// double-precision loops (LayerNorm, per-head attention with softmax, GELU); then causality,
// the trace, the parameter and FLOP formulas, and the error messages.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attn/model/block.hpp"
#include "attn/model/params.hpp"
#include "attn/model/reference.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/matmul.hpp"
#include "attn/train/gradcheck.hpp"
#include "attn/core/random.hpp"
#include "attn/core/threads.hpp"
#include "gradcheck_helpers.hpp"
#include "test_fixtures.hpp"
#include "test_helpers.hpp"

namespace {

using attn::Tensor;
using attn::testing::block_config;
using attn::testing::rechoose;

// ---- A naive block, from attn::matmul and loops ------------------------------------------------

// (B, T, in) @ (in, out) [+ bias] through attn::matmul on the (B*T, in) matrix of rows.
Tensor<3> naive_linear(const Tensor<3>& x, const attn::Matrix& w,
                       const attn::Vector* bias = nullptr) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], in = x.shape()[2], out = w.shape()[1];
  attn::Matrix rows(attn::Matrix::shape_type{B * T, in});
  std::copy(x.data(), x.data() + x.size(), rows.data());
  const attn::Matrix y = attn::matmul(rows, w);  // (B*T, in) @ (in, out) -> (B*T, out)
  Tensor<3> result(Tensor<3>::shape_type{B, T, out});
  for (std::size_t r = 0; r < B * T; ++r)
    for (std::size_t j = 0; j < out; ++j)
      result.data()[r * out + j] = y(r, j) + (bias != nullptr ? (*bias)(j) : 0.0f);
  return result;
}

Tensor<3> naive_layer_norm(const Tensor<3>& x, const attn::Vector& gamma, const attn::Vector& beta,
                           double eps) {
  Tensor<3> y(x.shape());
  const std::size_t C = x.shape()[2];
  for (std::size_t r = 0; r < x.size() / C; ++r) {
    double mean = 0.0, var = 0.0;
    for (std::size_t j = 0; j < C; ++j) mean += static_cast<double>(x.data()[r * C + j]);
    mean /= static_cast<double>(C);
    for (std::size_t j = 0; j < C; ++j) {
      const double d = static_cast<double>(x.data()[r * C + j]) - mean;
      var += d * d;
    }
    var /= static_cast<double>(C);
    for (std::size_t j = 0; j < C; ++j) {
      const double n = (static_cast<double>(x.data()[r * C + j]) - mean) / std::sqrt(var + eps);
      y.data()[r * C + j] =
          static_cast<float>(n * static_cast<double>(gamma(j)) + static_cast<double>(beta(j)));
    }
  }
  return y;
}

Tensor<3> naive_add(const Tensor<3>& a, const Tensor<3>& b) {
  Tensor<3> y(a.shape());
  for (std::size_t i = 0; i < a.size(); ++i) y.data()[i] = a.data()[i] + b.data()[i];
  return y;
}

// Multi-head attention, head by head, token by token; the softmax in double.
std::pair<Tensor<3>, Tensor<4>> naive_attention(const Tensor<3>& x, const attn::MhaWeights& w,
                                                std::size_t H, bool causal) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2], hs = C / H;
  const Tensor<3> q = naive_linear(x, w.w_q), k = naive_linear(x, w.w_k),
                  v = naive_linear(x, w.w_v);
  Tensor<3> merged(x.shape());
  Tensor<4> weights = xt::zeros<float>({B, H, T, T});
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t t = 0; t < T; ++t) {
        const std::size_t last = causal ? t : T - 1;  // keys 0..last are visible
        std::vector<double> p(last + 1);
        double max_score = -1e300;
        for (std::size_t u = 0; u <= last; ++u) {
          double s = 0.0;
          for (std::size_t d = 0; d < hs; ++d)
            s +=
                static_cast<double>(q(b, t, h * hs + d)) * static_cast<double>(k(b, u, h * hs + d));
          p[u] = s / std::sqrt(static_cast<double>(hs));
          max_score = std::max(max_score, p[u]);
        }
        double sum = 0.0;
        for (double& e : p) sum += (e = std::exp(e - max_score));
        for (std::size_t u = 0; u <= last; ++u)
          weights(b, h, t, u) = static_cast<float>(p[u] / sum);
        for (std::size_t d = 0; d < hs; ++d) {
          double o = 0.0;
          for (std::size_t u = 0; u <= last; ++u)
            o += p[u] / sum * static_cast<double>(v(b, u, h * hs + d));
          merged(b, t, h * hs + d) = static_cast<float>(o);
        }
      }
    }
  }
  return {naive_linear(merged, w.w_o), weights};
}

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }

Tensor<3> naive_ffn(const Tensor<3>& x, const attn::FfnWeights& w) {
  Tensor<3> h = naive_linear(x, w.w1, &w.b1);
  for (float& e : h) e = static_cast<float>(gelu(static_cast<double>(e)));
  return naive_linear(h, w.w2, &w.b2);
}

// The block, composed step by step exactly as block.hpp states it.
std::pair<Tensor<3>, Tensor<4>> naive_block(const Tensor<3>& x, const attn::BlockWeights& w,
                                            const attn::BlockConfig& cfg) {
  auto ln = [&](const Tensor<3>& t, const attn::Vector& g, const attn::Vector& b) {
    return cfg.spec.ablations.layer_norm ? naive_layer_norm(t, g, b, static_cast<double>(cfg.eps))
                                         : t;
  };
  if (cfg.norm == attn::NormPlacement::pre) {
    auto [a, weights] =
        naive_attention(ln(x, w.ln1_gamma, w.ln1_beta), w.attn, cfg.spec.n_heads, cfg.causal);
    const Tensor<3> x1 = naive_add(x, a);  // x + attn(ln1(x))
    return {naive_add(x1, naive_ffn(ln(x1, w.ln2_gamma, w.ln2_beta), w.ffn)),
            weights};  // + ffn(ln2)
  }
  auto [a, weights] = naive_attention(x, w.attn, cfg.spec.n_heads, cfg.causal);
  const Tensor<3> x1 = ln(naive_add(x, a), w.ln1_gamma, w.ln1_beta);  // ln1(x + attn(x))
  return {ln(naive_add(x1, naive_ffn(x1, w.ffn)), w.ln2_gamma, w.ln2_beta),
          weights};  // ln2(x + ffn(x))
}

// Weights large enough that attention is far from uniform and every parameter matters
// (block_init's 0.02 would make the sub-layers' outputs tiny next to the residual).
attn::BlockWeights random_weights(attn::Rng& rng, std::size_t C, std::size_t F) {
  attn::BlockWeights w = attn::block_init(rng, C, F);
  for (attn::Matrix* m : {&w.attn.w_q, &w.attn.w_k, &w.attn.w_v, &w.attn.w_o})
    *m = attn::randn(rng, C, C, 0.4f);
  w.ffn.w1 = attn::randn(rng, C, F, 0.4f);
  w.ffn.w2 = attn::randn(rng, F, C, 0.4f);
  w.ffn.b1 = attn::randn<1>(rng, {F}, 0.5f);
  w.ffn.b2 = attn::randn<1>(rng, {C}, 0.5f);
  w.ln1_gamma = attn::randn<1>(rng, {C}, 0.5f) + 1.0f;
  w.ln1_beta = attn::randn<1>(rng, {C}, 0.5f);
  w.ln2_gamma = attn::randn<1>(rng, {C}, 0.5f) + 1.0f;
  w.ln2_beta = attn::randn<1>(rng, {C}, 0.5f);
  return w;
}

// x[:, :n, :]
Tensor<3> first_tokens(const Tensor<3>& x, std::size_t n) {
  const std::size_t B = x.shape()[0], C = x.shape()[2];
  Tensor<3> y(Tensor<3>::shape_type{B, n, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < n; ++t)
      for (std::size_t c = 0; c < C; ++c) y(b, t, c) = x(b, t, c);
  return y;
}

std::string error_of(const Tensor<3>& x, const attn::BlockWeights& w,
                     const attn::BlockConfig& cfg) {
  try {
    (void)attn::block_forward(x, w, cfg);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no exception";
}

void check_against_naive(const attn::BlockConfig& cfg) {
  attn::Rng rng(101);
  const std::size_t B = 2, T = 7, C = 12, F = 20;
  const attn::BlockWeights w = random_weights(rng, C, F);
  const Tensor<3> x = attn::randn<3>(rng, {B, T, C});
  const attn::BlockResult got = attn::block_forward(x, w, cfg);
  const auto [out, weights] = naive_block(x, w, cfg);
  CHECK_TENSOR_NEAR(got.out, out, 1e-5, 1e-4);
  CHECK_TENSOR_NEAR(got.weights, weights, 1e-6, 1e-4);
}

}  // namespace

TEST_SUITE("block") {

TEST_CASE("norm placement names parse and print") {
  CHECK(attn::parse_norm("pre") == attn::NormPlacement::pre);
  CHECK(attn::parse_norm("post") == attn::NormPlacement::post);
  CHECK(attn::norm_name(attn::NormPlacement::post) == "post");
  CHECK_THROWS_WITH_AS(attn::parse_norm("middle"),
                       "unknown norm placement 'middle': expected pre or post",
                       std::invalid_argument);
}

TEST_CASE("the block equals the naive composition of its parts") {
  attn::BlockConfig cfg = block_config(12, 3);  // C = 12 (check_against_naive's x)
  SUBCASE("pre-norm, causal, exact GELU (the defaults)") { check_against_naive(cfg); }
  SUBCASE("post-norm") {
    cfg.norm = attn::NormPlacement::post;
    check_against_naive(cfg);
  }
  SUBCASE("not causal (an encoder block)") {
    cfg.causal = false;
    check_against_naive(cfg);
  }
  SUBCASE("a larger eps") {
    cfg.eps = 0.5f;  // large enough to change the result visibly
    check_against_naive(cfg);
  }
  SUBCASE("use_layer_norm = false: both LayerNorms become the identity, pre-norm") {
    cfg = rechoose(cfg, [](attn::ModelChoices& m) { m.ablations.layer_norm = false; });
    check_against_naive(cfg);
  }
  SUBCASE("use_layer_norm = false, post-norm") {
    cfg = rechoose(cfg, [](attn::ModelChoices& m) { m.ablations.layer_norm = false; });
    cfg.norm = attn::NormPlacement::post;
    check_against_naive(cfg);
  }
}

TEST_CASE("keep_weights = false: the same output, bit for bit, and no weights") {
  attn::Rng rng(6);
  const attn::BlockWeights w = random_weights(rng, 12, 24);
  const Tensor<3> x = attn::randn<3>(rng, {2, 9, 12});
  for (const attn::NormPlacement norm : {attn::NormPlacement::pre, attn::NormPlacement::post}) {
    CAPTURE(attn::norm_name(norm));
    attn::BlockConfig cfg = block_config(12, 3);
    cfg.norm = norm;
    const attn::BlockResult kept = attn::block_forward(x, w, cfg);
    cfg.keep_weights = false;
    const attn::BlockResult lean = attn::block_forward(x, w, cfg);
    CHECK(kept.weights.shape() == std::array<std::size_t, 4>{2, 3, 9, 9});
    CHECK(lean.weights.size() == 0);
    CHECK_TENSOR_NEAR(lean.out, kept.out, 0.0, 0.0);
  }
}

TEST_CASE("the activation option reaches the FFN") {
  attn::Rng rng(5);
  const attn::BlockWeights w = random_weights(rng, 8, 16);
  const Tensor<3> x = attn::randn<3>(rng, {1, 5, 8});
  attn::BlockConfig cfg = block_config(8, 2);
  const Tensor<3> gelu_out = attn::block_forward(x, w, cfg).out;
  cfg = rechoose(cfg, [](attn::ModelChoices& m) { m.activation = attn::Activation::relu; });
  const Tensor<3> relu_out = attn::block_forward(x, w, cfg).out;
  // With ReLU, step 5 is relu(ln2(x1) @ w1 + b1) @ w2 + b2: rebuild it from the traced ln2.
  Tensor<3> ln2;
  Tensor<3> residual1;
  (void)attn::block_forward(x, w, cfg, [&](std::string_view step, const Tensor<3>& v) {
    if (step == "ln2") ln2 = v;
    if (step == "residual1") residual1 = v;
  });
  Tensor<3> h = naive_linear(ln2, w.ffn.w1, &w.ffn.b1);
  for (float& e : h) e = std::max(e, 0.0f);
  CHECK_TENSOR_NEAR(relu_out, naive_add(residual1, naive_linear(h, w.ffn.w2, &w.ffn.b2)), 1e-5,
                    1e-5);
  CHECK(xt::amax(xt::abs(gelu_out - relu_out))() > 1e-3f);
}

TEST_CASE("with zero output projections the pre-norm block is the identity") {
  // The residual path: x + 0 + 0. Whatever the sub-layers compute, x reaches the output intact.
  attn::Rng rng(8);
  attn::BlockWeights w = random_weights(rng, 16, 32);
  w.attn.w_o = xt::zeros<float>({16, 16});
  w.ffn.w2 = xt::zeros<float>({32, 16});
  w.ffn.b2 = xt::zeros<float>({16});
  const Tensor<3> x = attn::randn<3>(rng, {2, 4, 16});
  CHECK_TENSOR_NEAR(attn::block_forward(x, w, block_config(16, 4)).out, x, 0.0, 0.0);
}

TEST_CASE("causal: changing future tokens does not change earlier outputs") {
  attn::Rng rng(13);
  const std::size_t T = 9, C = 16, cut = 5;
  const attn::BlockWeights w = random_weights(rng, C, 4 * C);
  const Tensor<3> x = attn::randn<3>(rng, {2, T, C});
  Tensor<3> changed = x;
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = cut; t < T; ++t)
      for (std::size_t c = 0; c < C; ++c) changed(b, t, c) = 3.0f * rng.normal();
  for (const attn::NormPlacement norm : {attn::NormPlacement::pre, attn::NormPlacement::post}) {
    CAPTURE(attn::norm_name(norm));
    attn::BlockConfig cfg = block_config(C, 4);
    cfg.norm = norm;
    const attn::BlockResult a = attn::block_forward(x, w, cfg);
    const attn::BlockResult b = attn::block_forward(changed, w, cfg);
    CHECK_TENSOR_NEAR(first_tokens(a.out, cut), first_tokens(b.out, cut), 1e-6, 1e-6);
    // Token t gives zero weight to every key u > t.
    for (std::size_t h = 0; h < cfg.spec.n_heads; ++h)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t u = t + 1; u < T; ++u) CHECK(a.weights(1, h, t, u) == 0.0f);
    // Not causal: the same change reaches the earlier tokens (so the test above can fail).
    cfg.causal = false;
    const Tensor<3> c_past = first_tokens(attn::block_forward(x, w, cfg).out, cut) -
                             first_tokens(attn::block_forward(changed, w, cfg).out, cut);
    CHECK(xt::amax(xt::abs(c_past))() > 1e-2f);
  }
}

TEST_CASE("the trace reports every step with its (B, T, C) shape: the (1, 10, 64, 4) example") {
  attn::Rng rng(42);
  const attn::BlockWeights w = attn::block_init(rng, 64, 256);
  const Tensor<3> x = attn::randn<3>(rng, {1, 10, 64});
  std::vector<std::string> steps;
  std::vector<Tensor<3>> values;
  const attn::BlockTrace trace = [&](std::string_view step, const Tensor<3>& v) {
    steps.emplace_back(step);
    values.push_back(v);
  };
  attn::BlockConfig cfg;  // the default model's spec (C 64, n_heads 4), pre-norm, causal
  SUBCASE("pre-norm") {
    const attn::BlockResult r = attn::block_forward(x, w, cfg, trace);
    CHECK(steps == std::vector<std::string>{"ln1", "attn", "residual1", "ln2", "ffn", "residual2"});
    for (const Tensor<3>& v : values) CHECK(v.shape() == std::array<std::size_t, 3>{1, 10, 64});
    CHECK(r.out.shape() == std::array<std::size_t, 3>{1, 10, 64});
    CHECK(r.weights.shape() == std::array<std::size_t, 4>{1, 4, 10, 10});
    // The values are the steps: ln1 is LayerNorm(x), residual1 = x + attn, the last is the output.
    CHECK_TENSOR_NEAR(values[0], naive_layer_norm(x, w.ln1_gamma, w.ln1_beta, 1e-5), 1e-6, 1e-6);
    CHECK_TENSOR_NEAR(values[2], naive_add(x, values[1]), 0.0, 0.0);
    CHECK_TENSOR_NEAR(values[5], naive_add(values[2], values[4]), 0.0, 0.0);
    CHECK_TENSOR_NEAR(values[5], r.out, 0.0, 0.0);
  }
  SUBCASE("post-norm") {
    cfg.norm = attn::NormPlacement::post;
    const attn::BlockResult r = attn::block_forward(x, w, cfg, trace);
    CHECK(steps == std::vector<std::string>{"attn", "residual1", "ln1", "ffn", "residual2", "ln2"});
    for (const Tensor<3>& v : values) CHECK(v.shape() == std::array<std::size_t, 3>{1, 10, 64});
    CHECK_TENSOR_NEAR(values[5], r.out, 0.0, 0.0);
  }
  SUBCASE("without LayerNorm the ln steps are still reported, as the identity") {
    cfg = rechoose(cfg, [](attn::ModelChoices& m) { m.ablations.layer_norm = false; });
    (void)attn::block_forward(x, w, cfg, trace);
    CHECK(steps.size() == 6);
    CHECK_TENSOR_NEAR(values[0], x, 0.0, 0.0);
    CHECK_TENSOR_NEAR(values[3], values[2], 0.0, 0.0);
  }
}

TEST_CASE("block_init: shapes, LayerNorm gamma = 1 and beta = 0, zero biases, draw order") {
  attn::Rng rng(7);
  const attn::BlockWeights w = attn::block_init(rng, 32, 128);
  CHECK(w.attn.w_o.shape() == std::array<std::size_t, 2>{32, 32});
  CHECK(w.ffn.w1.shape() == std::array<std::size_t, 2>{32, 128});
  for (const attn::Vector* g : {&w.ln1_gamma, &w.ln2_gamma})
    for (const float v : *g) CHECK(v == 1.0f);
  for (const attn::Vector* b : {&w.ln1_beta, &w.ln2_beta, &w.ffn.b1, &w.ffn.b2})
    for (const float v : *b) CHECK(v == 0.0f);
  // Attention weights first (w_q, w_k, w_v, w_o), then the FFN's.
  attn::Rng same(7);
  const attn::MhaWeights m = attn::mha_init(same, 32);
  const attn::FfnWeights f = attn::ffn_init(same, 32, 128);
  CHECK_TENSOR_NEAR(w.attn.w_q, m.w_q, 0.0, 0.0);
  CHECK_TENSOR_NEAR(w.attn.w_o, m.w_o, 0.0, 0.0);
  CHECK_TENSOR_NEAR(w.ffn.w2, f.w2, 0.0, 0.0);
}

TEST_CASE("parameter count: the formula, the hand count and the real weights agree") {
  // 4 C^2 + 2 C F + F + C + 4 C for C = 64, F = 256:
  // 16384 + 32768 + 256 + 64 + 256 = 49728.
  CHECK(attn::block_param_count(64, 256) == 4 * 64 * 64 + 2 * 64 * 256 + 256 + 64 + 4 * 64);
  CHECK(attn::block_param_count(64, 256) == 49728);
  attn::Rng rng(1);
  CHECK(attn::parameter_count(attn::block_init(rng, 64, 256)) == 49728);
  CHECK(attn::parameter_count(attn::block_init(rng, 12, 20)) == attn::block_param_count(12, 20));
}

TEST_CASE("FLOP formulas, by hand") {
  // (B, T, C, F, H) = (1, 10, 64, 256, 4), hs = 16:
  //   GEMMs 2 * 10 * (4 * 64^2 + 2 * 64 * 256) = 20 * 49152 = 983040
  //   attention 4 * 1 * 4 * 10^2 * 16 = 25600
  CHECK(attn::block_forward_flops(1, 10, 64, 256, 4) == 983040.0 + 25600.0);
  //   attention alone: 2 * 10 * 4 * 64^2 = 327680, plus the same 25600
  CHECK(attn::mha_forward_flops(1, 10, 64, 4) == 327680.0 + 25600.0);
  // The benchmark size (32, 128, 512, 8), F = 2048: 2*4096*(1048576 + 2097152) + 4*8*32*128^2*64
  CHECK(attn::block_forward_flops(32, 128, 512, 2048, 8) == 25769803776.0 + 1073741824.0);
  CHECK_THROWS_AS((void)attn::mha_forward_flops(1, 10, 64, 5), std::invalid_argument);
}

TEST_CASE("block_forward names the mis-shaped weight") {
  attn::Rng rng(3);
  const attn::BlockWeights good = attn::block_init(rng, 64, 256);
  const Tensor<3> x = attn::randn<3>(rng, {1, 4, 64});
  const attn::BlockConfig cfg;
  attn::BlockWeights w = good;
  w.ffn.w2 = attn::randn(rng, 256, 32);
  CHECK(error_of(x, w, cfg) == "attn::block_forward: w2 is (256, 32), expected (256, 64)");
  w = good;
  w.attn.w_k = attn::randn(rng, 64, 32);
  CHECK(error_of(x, w, cfg) == "attn::block_forward: w_k is (64, 32), expected (64, 64)");
  w = good;
  w.ln2_beta = xt::zeros<float>({63});
  CHECK(error_of(x, w, cfg) == "attn::block_forward: ln2_beta is (63,), expected (64,)");
  w = good;
  w.ffn.w1 = attn::randn(rng, 32, 256);
  CHECK(error_of(x, w, cfg) == "attn::block_forward: w1 is (32, 256), expected (64, 256)");
  w = good;
  w.ffn.b1 = xt::zeros<float>({255});
  CHECK(error_of(x, w, cfg) == "attn::block_forward: b1 is (255,), expected (256,)");
  // x itself of the wrong width: it disagrees with the spec, which is named before any weight.
  const Tensor<3> narrow = attn::randn<3>(rng, {1, 4, 32});
  CHECK(error_of(narrow, good, cfg) ==
        "attn::block_forward: x is (1, 4, 32), but the spec's n_embd is 64");
  // Five heads do not divide C = 64: no spec, so no block, has them (resolve_spec refuses).
  CHECK_THROWS_WITH_AS(
      block_config(64, 5),
      "n_heads 5 does not divide n_embd 64 (every head gets n_embd / n_heads channels)",
      attn::SpecError);
}

}  // TEST_SUITE

TEST_SUITE("block.backward") {

using attn::testing::check_gradients;
using attn::testing::cspan_of;
using attn::testing::span_of;

// random_weights with the variant's unused weights emptied.
attn::BlockWeights variant_weights(attn::Rng& rng, std::size_t C, std::size_t F,
                                   const attn::BlockConfig& cfg) {
  attn::BlockWeights w = random_weights(rng, C, F);
  if (!cfg.spec.ablations.attn_proj) w.attn.w_o = attn::Matrix(attn::Matrix::shape_type{0, 0});
  if (!cfg.spec.ablations.ffn) w.ffn = attn::FfnWeights{};
  if (!cfg.spec.ablations.layer_norm) {
    w.ln1_gamma = w.ln1_beta = w.ln2_gamma = w.ln2_beta = attn::Vector(attn::Vector::shape_type{0});
  }
  return w;
}

std::string describe(const attn::BlockConfig& c) {
  const attn::Ablations& a = c.spec.ablations;
  return std::string(attn::norm_name(c.norm)) + (a.layer_norm ? "" : " noLN") +
         (a.residual ? "" : " noRes") + (a.ffn ? "" : " noFFN") + (a.attn_proj ? "" : " noProj") +
         " " + std::string(attn::activation_name(c.spec.activation)) +
         (c.causal ? " causal" : " full");
}

// Every tensor of w and g, by name (empty ones skipped), in the parameter table's order.
std::vector<attn::GradTensor> block_tensors(attn::BlockWeights& w, const attn::BlockWeights& g) {
  std::vector<attn::GradTensor> t;
  attn::visit_block_params(w, g, nullptr, -1,
                           [&](const attn::ParamRow& row, auto& value, const auto& grad) {
                             if (value.size() != 0) {
                               t.push_back({row.field, span_of(value), cspan_of(grad)});
                             }
                           });
  return t;
}

// Every combination of norm placement, LayerNorm, residual, FFN and output projection, with the
// activation and the mask cycling through their values; plus all three activations on the
// default block. Width C = 4 with 2 heads (the gradient checks'), or C and H given.
std::vector<attn::BlockConfig> all_variants(std::size_t C = 4, std::size_t H = 2) {
  std::vector<attn::BlockConfig> v;
  std::size_t i = 0;
  for (attn::NormPlacement norm : {attn::NormPlacement::pre, attn::NormPlacement::post})
    for (bool ln : {true, false})
      for (bool res : {true, false})
        for (bool ffn : {true, false})
          for (bool proj : {true, false}) {
            attn::BlockConfig c = block_config(C, H, [&](attn::ModelChoices& m) {
              m.ablations.layer_norm = ln;
              m.ablations.residual = res;
              m.ablations.ffn = ffn;
              m.ablations.attn_proj = proj;
              m.activation = std::array{attn::Activation::gelu, attn::Activation::relu,
                                        attn::Activation::gelu_tanh}[i % 3];
            });
            c.norm = norm;
            c.causal = i % 2 == 0;
            v.push_back(c);
            ++i;
          }
  for (attn::NormPlacement norm : {attn::NormPlacement::pre, attn::NormPlacement::post})
    for (attn::Activation a :
         {attn::Activation::relu, attn::Activation::gelu, attn::Activation::gelu_tanh}) {
      attn::BlockConfig c = block_config(C, H, [&](attn::ModelChoices& m) { m.activation = a; });
      c.norm = norm;
      v.push_back(c);
    }
  return v;
}

TEST_CASE("block_backward matches central differences for every variant") {
  std::size_t k = 0;
  for (const attn::BlockConfig& cfg : all_variants()) {
    attn::Rng rng(400 + k++);
    const std::size_t B = 2, T = 3, C = 4, F = 6;
    attn::BlockWeights w = variant_weights(rng, C, F, cfg);
    Tensor<3> x = attn::randn<3>(rng, {B, T, C});
    const Tensor<3> r = attn::randn<3>(rng, {B, T, C});
    attn::BlockCache cache;
    Tensor<3> out = attn::block_forward(x, w, cfg, cache);
    // ReLU: a central difference that straddles the kink measures neither side's slope. Draw
    // again until every pre-activation is at least 0.02 away from it (h = 1e-3 below).
    for (int tries = 0;
         cfg.spec.ablations.ffn && cfg.spec.activation == attn::Activation::relu && tries < 50;
         ++tries) {
      if (xt::amin(xt::abs(cache.ffn.pre))() > 0.02f) break;
      w = variant_weights(rng, C, F, cfg);
      x = attn::randn<3>(rng, {B, T, C});
      out = attn::block_forward(x, w, cfg, cache);
    }
    CHECK_TENSOR_NEAR(out, attn::block_forward(x, w, cfg).out, 0.0, 0.0);
    CHECK(attn::activation_floats(cache) == attn::block_activation_floats(B, T, C, F, 2, cfg));
    attn::BlockWeights g = attn::block_zeros_like(w);
    Tensor<3> dx;
    attn::block_backward(r, cache, w, cfg, dx, g);
    std::vector<attn::GradTensor> tensors = block_tensors(w, g);
    tensors.insert(tensors.begin(), {"x", span_of(x), cspan_of(dx)});
    attn::GradCheckOptions options;
    if (cfg.spec.ablations.ffn && cfg.spec.activation == attn::Activation::relu) {
      options.h = 1e-3;  // the kink
    }
    check_gradients("block " + describe(cfg),
                    attn::grad_check(
                        [&] {
                          return attn::weighted_sum(cspan_of(attn::block_forward(x, w, cfg).out),
                                                    cspan_of(r));
                        },
                        tensors, options));
  }
}

TEST_CASE("block variants compute what they say") {
  attn::Rng rng(500);
  const std::size_t C = 8;
  const Tensor<3> x = attn::randn<3>(rng, {2, 5, C});
  attn::BlockConfig cfg = block_config(C, 2, [](attn::ModelChoices& m) {
    m.ablations.ffn = false;
    m.ablations.residual = false;
    m.ablations.layer_norm = false;
  });
  attn::BlockWeights w = variant_weights(rng, C, 16, cfg);
  // Attention alone: the block is mha_forward (the fast kernel the block calls: the same bits).
  CHECK_TENSOR_NEAR(attn::block_forward(x, w, cfg).out,
                    attn::fast::mha_forward(x, w.attn, 2, true).out, 0.0, 0.0);
  // With the residual: x + attn(x).
  cfg = rechoose(cfg, [](attn::ModelChoices& m) { m.ablations.residual = true; });
  const Tensor<3> with_res = attn::block_forward(x, w, cfg).out;
  CHECK_TENSOR_NEAR(with_res, Tensor<3>(x + attn::mha_forward(x, w.attn, 2, true).out), 1e-6, 1e-6);
  // Without w_o: the merged heads, i.e. mha with an identity w_o.
  cfg = rechoose(cfg, [](attn::ModelChoices& m) {
    m.ablations.residual = false;
    m.ablations.attn_proj = false;
  });
  attn::BlockWeights wn = w;
  wn.attn.w_o = attn::Matrix(attn::Matrix::shape_type{0, 0});
  attn::MhaWeights eye = w.attn;
  eye.w_o = xt::eye<float>(C);
  CHECK_TENSOR_NEAR(attn::block_forward(x, wn, cfg).out, attn::mha_forward(x, eye, 2, true).out,
                    1e-6, 1e-6);
  // A variant's unused weights must be empty, and the used ones present: named errors.
  CHECK(error_of(x, w, cfg) ==
        "attn::block_forward: w_o is (8, 8), expected empty (this model has no w_o)");
  const attn::BlockConfig with_ffn =
      block_config(C, 2, [](attn::ModelChoices& m) { m.ablations.ffn = false; });
  attn::BlockWeights full = random_weights(rng, C, 16);
  CHECK(error_of(x, full, with_ffn) ==
        "attn::block_forward: w1 is (8, 16), expected empty (this model has no w1)");
}

TEST_CASE(
    "block forward+backward: same bits on 1 and 3 threads; cache buffers reused; dout checked") {
  attn::Rng rng(501);
  const attn::BlockWeights w = random_weights(rng, 32, 64);
  const Tensor<3> x = attn::randn<3>(rng, {3, 70, 32});
  const Tensor<3> dout = attn::randn<3>(rng, {3, 70, 32});
  const std::size_t saved = attn::num_threads();
  for (attn::NormPlacement norm : {attn::NormPlacement::pre, attn::NormPlacement::post}) {
    attn::BlockConfig cfg = block_config(32, 4);
    cfg.norm = norm;
    std::vector<Tensor<3>> dxs;
    std::vector<attn::BlockWeights> gs;
    for (std::size_t threads : {1, 3}) {
      attn::set_num_threads(threads);
      attn::BlockCache cache;
      (void)attn::block_forward(x, w, cfg, cache);
      const float* ffn_pre = cache.ffn.pre.data();
      const float* weights = cache.attn.weights.data();
      (void)attn::block_forward(x, w, cfg, cache);
      CHECK(cache.ffn.pre.data() == ffn_pre);
      CHECK(cache.attn.weights.data() == weights);
      attn::BlockWeights g = attn::block_zeros_like(w);
      Tensor<3> dx;
      attn::block_backward(dout, cache, w, cfg, dx, g);
      dxs.push_back(dx);
      gs.push_back(g);
      if (threads == 1) {
        CHECK_THROWS_WITH_AS(
            attn::block_backward(Tensor<3>(xt::zeros<float>({3, 70, 31})), cache, w, cfg, dx, g),
            "attn::block_backward: expected dout of shape (3, 70, 32) (like the block's output), "
            "got dout (3, 70, 31)",
            std::invalid_argument);
        // Gradients of another block (a narrower FFN: w1 (32, 48)) would be written past.
        attn::BlockWeights narrow = attn::block_zeros_like(random_weights(rng, 32, 48));
        const attn::BlockWeights narrow_before = narrow;
        CHECK_THROWS_WITH_AS(
            attn::block_backward(dout, cache, w, cfg, dx, narrow),
            "attn::block_backward: grads must be shaped like the weights, tensor for tensor "
            "(zeros shaped like them)",
            std::invalid_argument);
        CHECK_TENSOR_NEAR(narrow.attn.w_q, narrow_before.attn.w_q, 0.0, 0.0);  // nothing added
      }
    }
    CHECK_TENSOR_NEAR(dxs[0], dxs[1], 0.0, 0.0);
    CHECK_TENSOR_NEAR(gs[0].attn.w_q, gs[1].attn.w_q, 0.0, 0.0);
    CHECK_TENSOR_NEAR(gs[0].ffn.w1, gs[1].ffn.w1, 0.0, 0.0);
    CHECK_TENSOR_NEAR(gs[0].ln1_gamma, gs[1].ln1_gamma, 0.0, 0.0);
  }
  attn::set_num_threads(saved);
}

TEST_CASE("block_activation_floats: the formula at chapter 09's shapes, against the floats held") {
  attn::Rng rng(502);
  const std::size_t B = 4, T = 64, C = 64, H = 4, F = 256;
  for (const attn::BlockConfig& cfg : all_variants(C, H)) {
    const attn::BlockWeights w = variant_weights(rng, C, F, cfg);
    const Tensor<3> x = attn::randn<3>(rng, {B, T, C});
    attn::BlockCache cache;
    (void)attn::block_forward(x, w, cfg, cache);
    CHECK(attn::activation_floats(cache) == attn::block_activation_floats(B, T, C, F, H, cfg));
  }
  // The default block by hand: 5 BTC (attention: input, q|k|v, heads) + B H T^2 (weights)
  // + BTC + 2 BTF (FFN: input, pre-activation, activation) + 2 (BTC + 2 BT) (two LayerNorms).
  attn::BlockConfig cfg;
  const std::size_t btc = B * T * C;
  CHECK(attn::block_activation_floats(B, T, C, F, H, cfg) ==
        5 * btc + B * H * T * T + btc + 2 * B * T * F + 2 * (btc + 2 * B * T));
}

// ---- The parts (chapter 11): RMSNorm, SwiGLU, grouped-query attention, RoPE, a window, no
// biases; each alone and all together, in both norm placements.

std::string describe_parts(const attn::BlockConfig& c) {
  const attn::ModelSpec& p = c.spec;
  std::string s = std::string(attn::norm_name(c.norm)) + " " +
                  std::string(attn::normalization_name(p.normalization)) + " " +
                  std::string(attn::ffn_kind_name(p.ffn)) + " H=" + std::to_string(p.n_heads) +
                  " KV=" + std::to_string(p.n_kv_heads);
  if (p.rope()) s += " rope";
  if (p.window) s += " window=" + std::to_string(*p.window);
  if (!p.bias) s += " no-bias";
  if (p.dropout > 0.0f) s += " dropout";
  return s;
}

std::vector<attn::BlockConfig> part_variants() {
  std::vector<attn::BlockConfig> v;
  // C = 8, 4 heads: hs = 2, even for RoPE.
  const auto with = [&](auto change, attn::NormPlacement norm = attn::NormPlacement::pre) {
    attn::BlockConfig c = block_config(8, 4, change);
    c.norm = norm;
    v.push_back(c);
  };
  with([](attn::ModelChoices& c) { c.normalization = attn::Normalization::rmsnorm; });
  with([](attn::ModelChoices& c) { c.ffn = attn::FfnKind::swiglu; });
  with([](attn::ModelChoices& c) { c.n_kv_heads = 2; });
  with([](attn::ModelChoices& c) { c.n_kv_heads = 1; });
  with([](attn::ModelChoices& c) { c.positions = attn::Positions::rope; });
  with([](attn::ModelChoices& c) { c.window = 2; });
  with([](attn::ModelChoices& c) { c.bias = false; });
  const auto llama = [](attn::ModelChoices& c) {
    c.positions = attn::Positions::rope;
    c.rope_theta = 500.0;
    c.normalization = attn::Normalization::rmsnorm;
    c.ffn = attn::FfnKind::swiglu;
    c.n_kv_heads = 2;
    c.bias = false;
  };
  with(llama);
  with([&](attn::ModelChoices& c) {  // the Llama recipe with a window (Mistral's)
    llama(c);
    c.window = 3;
  });
  with(
      [&](attn::ModelChoices& c) {  // post-norm with every part
        llama(c);
        c.window = 2;
      },
      attn::NormPlacement::post);
  with([&](attn::ModelChoices& c) {  // with a fixed dropout mask
    llama(c);
    c.dropout = 0.3f;
  });
  return v;
}

// The one block of a one-layer model of this spec, as lm_init draws it from the parameter
// table (after wte and wpe).
attn::BlockWeights first_block(attn::Rng& rng, const attn::ModelSpec& spec) {
  return attn::lm_init(rng, attn::with_choices(spec, [](attn::ModelChoices& m) { m.n_layers = 1; }))
      .blocks[0];
}

// Weights for the parts, every value redrawn so that each matters (gamma near 1).
attn::BlockWeights part_weights(attn::Rng& rng, std::size_t C, std::size_t F,
                                const attn::BlockConfig& cfg) {
  REQUIRE(cfg.spec.n_embd == C);
  // The shapes of the spec's tensors, from lm_init (its own generator: every value is redrawn
  // from `rng` below, after as many draws as block_init used to make first).
  attn::Rng shapes(0);
  attn::BlockWeights w = first_block(
      shapes, attn::with_choices(cfg.spec, [&](attn::ModelChoices& m) { m.ffn_hidden = F; }));
  const bool gated = cfg.spec.ffn == attn::FfnKind::swiglu;
  (void)attn::block_init(rng, C, gated ? 4 * C : F);
  if (gated) (void)attn::randn(rng, 3 * C, F, 0.02f);
  attn::BlockWeights g = attn::block_zeros_like(w);
  for (attn::GradTensor& t : block_tensors(w, g)) {
    const bool gamma = t.name.find("gamma") != std::string::npos;
    for (float& x : t.values) x = gamma ? 1.0f + rng.normal(0.0f, 0.2f) : rng.normal(0.0f, 0.5f);
  }
  return w;
}

TEST_CASE("lm_init's blocks with the default parts are block_init's weights, drawn after wpe") {
  attn::Rng a(7), b(7);
  const attn::ModelSpec parts = block_config(8, 4).spec;  // F = 4 C = 32
  REQUIRE(parts.ffn_hidden == 32);
  (void)attn::randn(a, parts.vocab_size, 8, 0.02f);  // wte, then wpe: the table's first rows
  (void)attn::randn(a, parts.block_size, 8, 0.02f);
  const attn::BlockWeights w0 = attn::block_init(a, 8, 32);
  const attn::BlockWeights w1 = first_block(b, parts);
  CHECK(parts.default_parts());
  CHECK(attn::ModelSpec{}.default_parts());
  CHECK_TENSOR_NEAR(w0.attn.w_k, w1.attn.w_k, 0.0, 0.0);
  CHECK_TENSOR_NEAR(w0.ffn.w2, w1.ffn.w2, 0.0, 0.0);
  CHECK_TENSOR_NEAR(w0.ln2_beta, w1.ln2_beta, 0.0, 0.0);
  CHECK(w1.swiglu.w_gate.size() == 0);
}

TEST_CASE("lm_init gives each part its weights: GQA's narrow w_k, SwiGLU's three, no betas") {
  attn::Rng rng(8);
  const attn::BlockConfig cfg = block_config(8, 4, [](attn::ModelChoices& m) {
    m.n_kv_heads = 1;
    m.ffn = attn::FfnKind::swiglu;
    m.normalization = attn::Normalization::rmsnorm;
    m.ffn_hidden = 16;
  });
  CHECK_FALSE(cfg.spec.default_parts());
  const attn::BlockWeights w = first_block(rng, cfg.spec);
  CHECK(w.attn.w_k.shape() == std::array<std::size_t, 2>{8, 2});  // KV * hs = 1 * 2
  CHECK(w.attn.w_v.shape() == std::array<std::size_t, 2>{8, 2});
  CHECK(w.attn.w_o.shape() == std::array<std::size_t, 2>{8, 8});
  CHECK(w.swiglu.w_gate.shape() == std::array<std::size_t, 2>{8, 16});
  CHECK(w.swiglu.w_down.shape() == std::array<std::size_t, 2>{16, 8});
  CHECK(w.ffn.w1.size() + w.ffn.b1.size() + w.ln1_beta.size() + w.ln2_beta.size() == 0);
  CHECK(w.ln1_gamma.size() == 8);
  // Its parameters: 2 C^2 + 2 C KV hs (attention) + 3 C F (SwiGLU) + 2 C (two RMSNorm gammas).
  CHECK(attn::parameter_count(w) == 2 * 64 + 2 * 8 * 2 + 3 * 8 * 16 + 2 * 8);
  CHECK(attn::swiglu_width(64) == 176);  // floor(512 / 3) = 170, up to a multiple of 8
  CHECK(attn::swiglu_width(384) == 1024);
  CHECK(attn::swiglu_width(4) == 16);
}

TEST_CASE("a Llama block is the composition of its reference ops") {
  attn::Rng rng(9);
  const attn::BlockConfig cfg = block_config(8, 4, [](attn::ModelChoices& m) {
    m.n_kv_heads = 2;
    m.positions = attn::Positions::rope;
    m.window = 3;
    m.normalization = attn::Normalization::rmsnorm;
    m.ffn = attn::FfnKind::swiglu;
    m.bias = false;
  });
  const std::size_t C = 8, F = 16;
  const attn::BlockWeights w = part_weights(rng, C, F, cfg);
  const Tensor<3> x = attn::randn<3>(rng, {2, 6, C});
  // x + gqa(rms(x)), then + swiglu(rms(.)): written out from the ops of chapter 11.
  attn::GqaConfig g;
  g.n_heads = 4;
  g.n_kv_heads = 2;
  g.rope = true;
  g.window = 3;
  const attn::GqaWeights<float> gw{w.attn.w_q, w.attn.w_k, w.attn.w_v, w.attn.w_o};
  const double eps = static_cast<double>(cfg.eps);  // the block's float 1e-5, as a double
  const Tensor<3> x1 =
      x + attn::gqa_forward<float>(attn::rms_norm<float, 3>(x, w.ln1_gamma, eps), gw, g).out;
  const Tensor<3> want =
      x1 + attn::swiglu_forward<float>(attn::rms_norm<float, 3>(x1, w.ln2_gamma, eps), w.swiglu);
  // The block runs the parts' fast kernels (attn/fast/): equal to the ops within the golden
  // tolerance (test_fast_parts.cpp tests each kernel), and its two forwards to each other exactly.
  const Tensor<3> out = attn::block_forward(x, w, cfg).out;
  CHECK_TENSOR_NEAR(out, want, 1e-5, 1e-4);
  attn::BlockCache cache;
  CHECK_TENSOR_NEAR(attn::block_forward(x, w, cfg, cache), out, 0.0, 0.0);
  CHECK(attn::activation_floats(cache) == attn::block_activation_floats(2, 6, C, F, 4, cfg));
  // The window changes the output (query 5 no longer sees keys 0 to 2) ...
  const attn::BlockConfig wide =
      rechoose(cfg, [](attn::ModelChoices& m) { m.window = std::nullopt; });
  CHECK(xt::amax(xt::abs(attn::block_forward(x, w, wide).out - want))() > 1e-3f);
  // ... and RoPE is not the identity.
  const attn::BlockConfig plain =
      rechoose(cfg, [](attn::ModelChoices& m) { m.positions = attn::Positions::learned; });
  CHECK(xt::amax(xt::abs(attn::block_forward(x, w, plain).out - want))() > 1e-3f);
}

TEST_CASE("block_backward matches central differences for each part alone and all together") {
  std::size_t k = 0;
  for (const attn::BlockConfig& cfg : part_variants()) {
    attn::Rng rng(700 + k++);
    const std::size_t B = 2, T = 4, C = 8, F = 6;
    const attn::BlockWeights w0 = part_weights(rng, C, F, cfg);
    attn::BlockWeights w = w0;
    Tensor<3> x = attn::randn<3>(rng, {B, T, C});
    const Tensor<3> r = attn::randn<3>(rng, {B, T, C});
    attn::BlockCache cache;
    attn::Rng drop(3);
    Tensor<3> out =
        attn::block_forward(x, w, cfg, cache, cfg.spec.dropout > 0.0f ? &drop : nullptr);
    if (cfg.spec.dropout == 0.0f)
      CHECK_TENSOR_NEAR(out, attn::block_forward(x, w, cfg).out, 0.0, 0.0);
    CHECK(attn::activation_floats(cache) == attn::block_activation_floats(B, T, C, F, 4, cfg));
    attn::BlockWeights g = attn::block_zeros_like(w);
    Tensor<3> dx;
    attn::block_backward(r, cache, w, cfg, dx, g);
    std::vector<attn::GradTensor> tensors = block_tensors(w, g);
    tensors.insert(tensors.begin(), {"x", span_of(x), cspan_of(dx)});
    // The loss re-runs the training forward with the cache's masks (fixed: no generator).
    attn::BlockCache probe = cache;
    const auto loss = [&] {
      return attn::weighted_sum(cspan_of(attn::block_forward(x, w, cfg, probe)), cspan_of(r));
    };
    check_gradients("block " + describe_parts(cfg), attn::grad_check(loss, tensors));
    // A wrong backward is caught: dx scaled by 1.05.
    Tensor<3> wrong = dx * 1.05f;
    CHECK_FALSE(
        attn::all_pass(attn::grad_check(loss, {{"x (scaled 1.05)", span_of(x), cspan_of(wrong)}})));
  }
}

TEST_CASE("float64 check: every part's float backward, alone and together; 0.1% off fails") {
  // block_backward's float gradients against central differences of the reference block in
  // double (attn::ref, attn::check_gradients, L = sum(out * R)), for each pre-norm part alone and
  // the Llama recipe.
  std::size_t k = 0;
  for (const attn::BlockConfig& cfg : part_variants()) {
    if (cfg.norm != attn::NormPlacement::pre || cfg.spec.dropout > 0.0f) continue;
    attn::Rng rng(800 + k++);
    const std::size_t B = 2, T = 4, C = 8, F = 6;
    const attn::BlockWeights w = part_weights(rng, C, F, cfg);
    const Tensor<3> x = attn::randn<3>(rng, {B, T, C});
    const Tensor<3> r = attn::randn<3>(rng, {B, T, C});
    attn::BlockCache cache;
    (void)attn::block_forward(x, w, cfg, cache);
    attn::BlockWeights g = attn::block_zeros_like(w);
    Tensor<3> dx;
    attn::block_backward(r, cache, w, cfg, dx, g);
    const auto d = [](const auto& t) { return xt::eval(xt::cast<double>(t)); };
    attn::Tensor64<3> x64 = d(x);
    const attn::Tensor64<3> r64 = d(r);
    // The reference block in double, and the float gradients in double beside its tensors.
    attn::ref::BlockWeights<double> w64 = attn::ref::cast<double>(w);
    attn::ref::BlockWeights<double> g64 = attn::ref::cast<double>(g);
    const attn::Tensor64<3> dx64 = d(dx);
    const auto loss = [&] {
      return attn::weighted_sum(cspan_of(attn::ref::block_forward(x64, w64, cfg)), cspan_of(r64));
    };
    std::vector<attn::GradTensor64> tensors{{"x", span_of(x64), cspan_of(dx64)}};
    const auto ws = attn::ref::parameters(w64), gs = attn::ref::parameters(g64);
    REQUIRE(ws.size() == gs.size());
    for (std::size_t i = 0; i < ws.size(); ++i)
      tensors.push_back({ws[i].name, ws[i].values, gs[i].values});
    attn::GradCheckOptions64 o;
    o.floor = 1e-2;  // a float backward: its rounding near zero (gradcheck.hpp)
    check_gradients("block64 " + describe_parts(cfg), attn::check_gradients(loss, tensors, o));
    // A gradient 0.1% off fails: x's, and the first weight's (w_q).
    for (std::size_t t : {std::size_t{0}, std::size_t{1}}) {
      std::vector<double> wrong(tensors[t].grad.begin(), tensors[t].grad.end());
      for (double& v : wrong) v *= 1.001;
      INFO(describe_parts(cfg) << ": " << tensors[t].name << " x 1.001");
      CHECK_FALSE(attn::all_pass(attn::check_gradients(
          loss, {{tensors[t].name, tensors[t].values, std::span<const double>(wrong)}}, o)));
    }
  }
}

TEST_CASE("the parts' bad combinations get one-line errors") {
  attn::Rng rng(10);
  attn::BlockConfig cfg = block_config(8, 4);
  const Tensor<3> x = attn::randn<3>(rng, {1, 3, 8});
  attn::BlockWeights w = attn::block_init(rng, 8, 16);
  // 3 K/V heads for 4 query heads: no spec has them (resolve_spec names it).
  CHECK_THROWS_WITH_AS(
      rechoose(cfg, [](attn::ModelChoices& m) { m.n_kv_heads = 3; }),
      "n_kv_heads 3 does not divide n_heads 4 (each K/V head serves an equal group of query heads)",
      attn::SpecError);
  cfg = rechoose(cfg, [](attn::ModelChoices& m) { m.n_kv_heads = 2; });
  // the weights are still MHA's: w_k (8, 8)
  CHECK(error_of(x, w, cfg) == "attn::block_forward: w_k is (8, 8), expected (8, 4)");
  cfg = rechoose(cfg, [](attn::ModelChoices& m) {
    m.n_kv_heads = std::nullopt;
    m.ffn = attn::FfnKind::swiglu;
  });
  CHECK(error_of(x, w, cfg) ==
        "attn::block_forward: w1 is (8, 16), expected empty (this model has no w1)");
}

TEST_CASE("a block's weights are checked against the parameter table, row by row") {
  // Every tensor of the table, the ones the spec's model does not have included: those must be
  // empty. (The hand-written checks before the table let SwiGLU's matrices ride along in a
  // block whose FFN is switched off.)
  attn::Rng rng(11);
  const Tensor<3> x = attn::randn<3>(rng, {1, 3, 8});
  const attn::BlockConfig no_ffn =
      block_config(8, 2, [](attn::ModelChoices& m) { m.ablations.ffn = false; });
  attn::BlockWeights w = attn::block_init(rng, 8, 16);
  w.ffn = attn::FfnWeights{};
  REQUIRE(error_of(x, w, no_ffn) == "no exception");
  w.swiglu.w_gate = attn::randn(rng, 8, 16);
  CHECK(error_of(x, w, no_ffn) ==
        "attn::block_forward: w_gate is (8, 16), expected empty (this model has no w_gate)");
  // A SwiGLU block: F from w_gate (a lone block may have any width), the rest agree with it.
  const attn::BlockConfig gated =
      block_config(8, 2, [](attn::ModelChoices& m) { m.ffn = attn::FfnKind::swiglu; });
  attn::BlockWeights g = attn::block_init(rng, 8, 16);
  g.ffn = attn::FfnWeights{};
  g.swiglu.w_gate = attn::randn(rng, 8, 16);
  g.swiglu.w_up = attn::randn(rng, 8, 16);
  g.swiglu.w_down = attn::randn(rng, 16, 8);
  REQUIRE(error_of(x, g, gated) == "no exception");
  attn::BlockWeights bad = g;
  bad.swiglu.w_up = attn::randn(rng, 8, 12);
  CHECK(error_of(x, bad, gated) == "attn::block_forward: w_up is (8, 12), expected (8, 16)");
  bad = g;
  bad.swiglu.w_down = attn::randn(rng, 16, 4);
  CHECK(error_of(x, bad, gated) == "attn::block_forward: w_down is (16, 4), expected (16, 8)");
  // Without w_gate, F is the spec's (swiglu_width(8) = 24).
  bad = g;
  bad.swiglu.w_gate = attn::Matrix(attn::Matrix::shape_type{0, 0});
  CHECK(error_of(x, bad, gated) == "attn::block_forward: w_gate is (0, 0), expected (8, 24)");
  // RMSNorm has no beta: a LayerNorm's beta in its place is named.
  const attn::BlockConfig rms = block_config(
      8, 2, [](attn::ModelChoices& m) { m.normalization = attn::Normalization::rmsnorm; });
  attn::BlockWeights r = attn::block_init(rng, 8, 16);
  r.ln1_beta = r.ln2_beta = attn::Vector(attn::Vector::shape_type{0});
  REQUIRE(error_of(x, r, rms) == "no exception");
  r.ln2_beta = xt::zeros<float>({8});
  CHECK(error_of(x, r, rms) ==
        "attn::block_forward: ln2_beta is (8,), expected empty (this model has no ln2_beta)");
  // Without LayerNorm (chapter 06's ablation) the norms' weights are ignored: all empty, or all
  // four of shape (C,) (block_init's), but not half of them.
  const attn::BlockConfig no_ln =
      block_config(8, 2, [](attn::ModelChoices& m) { m.ablations.layer_norm = false; });
  attn::BlockWeights n = attn::block_init(rng, 8, 16);
  CHECK(error_of(x, n, no_ln) == "no exception");
  n.ln1_gamma = n.ln1_beta = n.ln2_gamma = n.ln2_beta = attn::Vector(attn::Vector::shape_type{0});
  CHECK(error_of(x, n, no_ln) == "no exception");
  n.ln2_gamma = xt::ones<float>({8});
  CHECK(error_of(x, n, no_ln) == "attn::block_forward: ln1_gamma is (0,), expected (8,)");
}

}  // TEST_SUITE
