// block.cpp: the transformer block (chapter 06): multi-head attention (chapters 04-05) and the
// feed-forward network, each wrapped in a residual connection and a LayerNorm. Chapter 07
// stacks these blocks into a language model (model.cpp).
#include "attn/block.hpp"

#include <array>
#include <stdexcept>
#include <string>

#include "attn/check.hpp"
#include "attn/layernorm.hpp"

namespace attn {

NormPlacement parse_norm(std::string_view name) {
  if (name == "pre") return NormPlacement::pre;
  if (name == "post") return NormPlacement::post;
  throw std::invalid_argument("unknown norm placement '" + std::string(name) +
                              "': expected pre or post");
}

std::string_view norm_name(NormPlacement n) {
  switch (n) {
    case NormPlacement::pre: return "pre";
    case NormPlacement::post: return "post";
  }
  return "unknown";
}

BlockWeights block_init(Rng& rng, std::size_t C, std::size_t F) {
  BlockWeights w;
  // Drawn in this order: w_q, w_k, w_v, w_o, then w1, w2.
  w.attn = mha_init(rng, C);
  // gamma = 1, beta = 0: at initialisation each LayerNorm only normalises.
  w.ln1_gamma = xt::ones<float>({C});
  w.ln1_beta = xt::zeros<float>({C});
  w.ln2_gamma = xt::ones<float>({C});
  w.ln2_beta = xt::zeros<float>({C});
  w.ffn = ffn_init(rng, C, F);
  return w;
}

namespace {

constexpr const char* kFunction = "attn::block_forward";

// "attn::block_forward: ffn.w2 is (256, 32), expected (256, 64)"
template <std::size_t R>
void check_shape(std::string_view name, const Tensor<R>& t, const std::array<std::size_t, R>& want) {
  if (t.shape() != want) {
    require(false, kFunction,
            std::string(name) + " is " + shape_str(t.shape()) + ", expected " + shape_str(want));
  }
}

// C comes from x, F from ffn.w1; every other size must agree with them.
void check_block(const Tensor<3>& x, const BlockWeights& w, const BlockConfig& config) {
  const std::size_t C = x.shape()[2];
  const std::size_t F = w.ffn.w1.shape()[1];
  require(C >= 1, kFunction, "x is " + shape_str(x.shape()) + ", C must be at least 1");
  require(config.n_heads >= 1 && C % config.n_heads == 0, kFunction,
          "n_heads = " + std::to_string(config.n_heads) + " does not divide C = " +
              std::to_string(C));
  check_shape<2>("attn.w_q", w.attn.w_q, {C, C});
  check_shape<2>("attn.w_k", w.attn.w_k, {C, C});
  check_shape<2>("attn.w_v", w.attn.w_v, {C, C});
  check_shape<2>("attn.w_o", w.attn.w_o, {C, C});
  check_shape<1>("ln1_gamma", w.ln1_gamma, {C});
  check_shape<1>("ln1_beta", w.ln1_beta, {C});
  check_shape<1>("ln2_gamma", w.ln2_gamma, {C});
  check_shape<1>("ln2_beta", w.ln2_beta, {C});
  check_shape<2>("ffn.w1", w.ffn.w1, {C, F});
  check_shape<1>("ffn.b1", w.ffn.b1, {F});
  check_shape<2>("ffn.w2", w.ffn.w2, {F, C});
  check_shape<1>("ffn.b2", w.ffn.b2, {C});
}

// LayerNorm(x) into `storage`, or x itself when the config switches LayerNorm off (chapter 06's
// experiment: without it, the scale of the activations drifts as blocks are stacked). The trace
// still reports the step, so both variants list the same steps.
const Tensor<3>& norm(const Tensor<3>& x, const Vector& gamma, const Vector& beta,
                      const BlockConfig& config, Tensor<3>& storage) {
  if (!config.use_layer_norm) return x;
  storage = layer_norm<3>(x, gamma, beta, config.eps);
  return storage;
}

// acc += other, element by element. Both (B, T, C), contiguous.
void add_in_place(Tensor<3>& acc, const Tensor<3>& other) {
  float* a = acc.data();
  const float* o = other.data();
  for (std::size_t i = 0; i < acc.size(); ++i) a[i] += o[i];
}

void report(const BlockTrace& trace, std::string_view step, const Tensor<3>& value) {
  if (trace) trace(step, value);
}

}  // namespace

BlockResult block_forward(const Tensor<3>& x, const BlockWeights& w, const BlockConfig& config,
                          const BlockTrace& trace) {
  check_block(x, w, config);
  Tensor<3> ln_storage;  // holds the current LayerNorm output, when LayerNorm is on

  if (config.norm == NormPlacement::pre) {
    // Pre-norm (GPT-2 and most LLMs since): the sub-layers see normalised inputs, while the
    // residual stream x passes from input to output untouched by any LayerNorm. That clean path
    // is why deep pre-norm stacks train without the warm-up tricks post-norm needs.
    // 1. h = ln1(x)                                            (B, T, C)
    const Tensor<3>& h1 = norm(x, w.ln1_gamma, w.ln1_beta, config, ln_storage);
    report(trace, "ln1", h1);
    // 2. a = MultiHeadAttention(h): tokens exchange information  (B, T, C), weights (B, H, T, T)
    MhaResult a = mha_forward(h1, w.attn, config.n_heads, config.causal, config.keep_weights);
    report(trace, "attn", a.out);
    // 3. x = x + a: the residual connection                   (B, T, C)
    Tensor<3> stream = std::move(a.out);
    add_in_place(stream, x);
    report(trace, "residual1", stream);
    // 4. h = ln2(x)                                            (B, T, C)
    const Tensor<3>& h2 = norm(stream, w.ln2_gamma, w.ln2_beta, config, ln_storage);
    report(trace, "ln2", h2);
    // 5. f = FFN(h): each token on its own                     (B, T, C) -> (B, T, F) -> (B, T, C)
    Tensor<3> f = ffn_forward(h2, w.ffn, config.activation);
    report(trace, "ffn", f);
    // 6. x = x + f                                             (B, T, C)
    add_in_place(stream, f);
    report(trace, "residual2", stream);
    return {std::move(stream), std::move(a.weights)};
  }

  // Post-norm (the original Transformer): normalise after each residual addition, so the
  // stream itself is renormalised twice per block.
  // 1. a = MultiHeadAttention(x)                               (B, T, C), weights (B, H, T, T)
  MhaResult a = mha_forward(x, w.attn, config.n_heads, config.causal, config.keep_weights);
  report(trace, "attn", a.out);
  // 2. r = x + a                                               (B, T, C)
  Tensor<3> r1 = std::move(a.out);
  add_in_place(r1, x);
  report(trace, "residual1", r1);
  // 3. x = ln1(r)                                              (B, T, C)
  const Tensor<3>& x1 = norm(r1, w.ln1_gamma, w.ln1_beta, config, ln_storage);
  report(trace, "ln1", x1);
  // 4. f = FFN(x)                                              (B, T, C)
  Tensor<3> r2 = ffn_forward(x1, w.ffn, config.activation);
  report(trace, "ffn", r2);
  // 5. r = x + f                                               (B, T, C)
  add_in_place(r2, x1);
  report(trace, "residual2", r2);
  // 6. out = ln2(r)                                            (B, T, C)
  if (config.use_layer_norm) r2 = layer_norm<3>(r2, w.ln2_gamma, w.ln2_beta, config.eps);
  report(trace, "ln2", r2);
  return {std::move(r2), std::move(a.weights)};
}

std::size_t block_param_count(std::size_t C, std::size_t F) {
  // w_q, w_k, w_v, w_o | w1, w2, b1, b2 | ln1 and ln2 gamma, beta
  return 4 * C * C + (2 * C * F + F + C) + 4 * C;
}

namespace {
// hs = C / H, checked.
double head_size(std::size_t C, std::size_t H, const char* function) {
  require(H >= 1 && C % H == 0, function,
          "n_heads = " + std::to_string(H) + " does not divide C = " + std::to_string(C));
  return static_cast<double>(C / H);
}
}  // namespace

double mha_forward_flops(std::size_t B, std::size_t T, std::size_t C, std::size_t H) {
  const double hs = head_size(C, H, "attn::mha_forward_flops");
  const double b = static_cast<double>(B), t = static_cast<double>(T), c = static_cast<double>(C);
  const double h = static_cast<double>(H);
  // A (M, K) @ (K, N) product costs 2 M K N flops (one multiply and one add per term).
  // Four (B*T, C) @ (C, C) projections: q, k, v and the output.
  const double projections = 2.0 * b * t * (4.0 * c * c);
  // Per head: scores q @ k^T (T, hs) @ (hs, T) and weights @ v (T, T) @ (T, hs), 2 T^2 hs each.
  const double attention = 4.0 * b * h * t * t * hs;
  return projections + attention;
}

double block_forward_flops(std::size_t B, std::size_t T, std::size_t C, std::size_t F,
                           std::size_t H) {
  (void)head_size(C, H, "attn::block_forward_flops");
  const double b = static_cast<double>(B), t = static_cast<double>(T), c = static_cast<double>(C);
  const double f = static_cast<double>(F);
  // Attention as above, plus the FFN's (B*T, C) @ (C, F) and (B*T, F) @ (F, C). LayerNorm,
  // softmax, GELU and the residual additions are O(B T C) or O(B H T^2): left out.
  return mha_forward_flops(B, T, C, H) + 2.0 * b * t * (2.0 * c * f);
}

std::size_t parameter_count(const BlockWeights& w) {
  return w.attn.w_q.size() + w.attn.w_k.size() + w.attn.w_v.size() + w.attn.w_o.size() +
         w.ln1_gamma.size() + w.ln1_beta.size() + w.ln2_gamma.size() + w.ln2_beta.size() +
         w.ffn.w1.size() + w.ffn.b1.size() + w.ffn.w2.size() + w.ffn.b2.size();
}

}  // namespace attn
