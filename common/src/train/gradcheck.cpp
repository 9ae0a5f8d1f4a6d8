// gradcheck.cpp: central differences against an analytic gradient (chapter 08), through a
// float forward (grad_check) or a double one (check_gradients); and the block and the model in
// float64 that the double checks run (gradcheck64.hpp).
#include "attn/train/gradcheck.hpp"
#include "attn/train/gradcheck64.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "attn/core/check.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/loss.hpp"

namespace attn {

std::vector<GradCheckResult> grad_check(const std::function<double()>& loss,
                                        const std::vector<GradTensor>& tensors,
                                        const GradCheckOptions& options) {
  std::vector<GradCheckResult> results;
  for (const GradTensor& t : tensors) {
    require(t.values.size() == t.grad.size(), "attn::grad_check",
            "tensor '" + t.name + "' has " + std::to_string(t.values.size()) +
                " values but its gradient has " + std::to_string(t.grad.size()));
    // 1. The numeric gradient of every element: perturb, evaluate twice, restore.
    std::vector<double> numeric(t.values.size());
    std::vector<double> noise(t.values.size());  // the rounding noise of each quotient
    for (std::size_t i = 0; i < t.values.size(); ++i) {
      const float x0 = t.values[i];
      const double step = options.h * std::max(1.0, std::abs(static_cast<double>(x0)));
      // The steps actually taken: x0 +- step rounded to float, measured in double.
      const float up = static_cast<float>(static_cast<double>(x0) + step);
      const float down = static_cast<float>(static_cast<double>(x0) - step);
      t.values[i] = up;
      const double l_up = loss();
      t.values[i] = down;
      const double l_down = loss();
      t.values[i] = x0;
      const double width = static_cast<double>(up) - static_cast<double>(down);
      numeric[i] = (l_up - l_down) / width;
      noise[i] = options.noise * std::max({1.0, std::abs(l_up), std::abs(l_down)}) / width;
    }
    // 2. Compare: absolute error, and relative error against max(|a|, |n|, floor, noise / tol).
    double scale = 0.0;
    for (double n : numeric) scale = std::max(scale, std::abs(n));
    const double floor = std::max(options.floor * scale, 1e-6);
    GradCheckResult r;
    r.name = t.name;
    r.count = t.values.size();
    bool finite = true;
    for (std::size_t i = 0; i < numeric.size(); ++i) {
      const double a = static_cast<double>(t.grad[i]);
      if (!std::isfinite(a) || !std::isfinite(numeric[i])) finite = false;
      const double err = std::abs(a - numeric[i]);
      r.max_abs = std::max(r.max_abs, err);
      const double denominator =
          std::max({std::abs(a), std::abs(numeric[i]), floor, noise[i] / options.tolerance});
      r.max_rel = std::max(r.max_rel, err / denominator);
    }
    r.pass = finite && r.max_rel <= options.tolerance;
    results.push_back(r);
  }
  return results;
}

bool all_pass(const std::vector<GradCheckResult>& results) {
  return std::all_of(results.begin(), results.end(),
                     [](const GradCheckResult& r) { return r.pass; });
}

std::vector<GradCheckResult> check_gradients(const std::function<double()>& loss,
                                             std::span<const GradTensor64> tensors,
                                             const GradCheckOptions64& options) {
  std::vector<GradCheckResult> results;
  for (const GradTensor64& t : tensors) {
    require(t.values.size() == t.grad.size(), "attn::check_gradients",
            "tensor '" + t.name + "' has " + std::to_string(t.values.size()) +
                " values but its gradient has " + std::to_string(t.grad.size()));
    // 1. The numeric gradient of every element: perturb, evaluate twice, restore.
    std::vector<double> numeric(t.values.size());
    std::vector<double> noise(t.values.size());  // the rounding noise of each quotient
    for (std::size_t i = 0; i < t.values.size(); ++i) {
      const double x0 = t.values[i];
      const double step = options.h * std::max(1.0, std::abs(x0));
      const double up = x0 + step, down = x0 - step;  // the values actually taken
      t.values[i] = up;
      const double l_up = loss();
      t.values[i] = down;
      const double l_down = loss();
      t.values[i] = x0;
      const double width = up - down;
      numeric[i] = (l_up - l_down) / width;
      noise[i] = options.noise * std::max({1.0, std::abs(l_up), std::abs(l_down)}) / width;
    }
    // 2. Compare: absolute error, and relative error against max(|a|, |n|, floor, noise / tol).
    double scale = 0.0;
    for (double n : numeric) scale = std::max(scale, std::abs(n));
    const double floor = std::max(options.floor * scale, 1e-12);
    GradCheckResult r;
    r.name = t.name;
    r.count = t.values.size();
    bool finite = true;
    for (std::size_t i = 0; i < numeric.size(); ++i) {
      const double a = t.grad[i];
      if (!std::isfinite(a) || !std::isfinite(numeric[i])) finite = false;
      const double err = std::abs(a - numeric[i]);
      r.max_abs = std::max(r.max_abs, err);
      const double denominator =
          std::max({std::abs(a), std::abs(numeric[i]), floor, noise[i] / options.tolerance});
      r.max_rel = std::max(r.max_rel, err / denominator);
    }
    r.pass = finite && r.max_rel <= options.tolerance;
    results.push_back(r);
  }
  return results;
}

std::vector<GradCheckResult> check_gradients(const std::function<double()>& loss,
                                             const std::vector<GradTensor64>& tensors,
                                             const GradCheckOptions64& options) {
  return check_gradients(loss, std::span<const GradTensor64>(tensors), options);
}

double weighted_sum(std::span<const double> a, std::span<const double> b) {
  require(a.size() == b.size(), "attn::weighted_sum",
          "sizes differ: " + std::to_string(a.size()) + " and " + std::to_string(b.size()));
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

double weighted_sum(std::span<const float> a, std::span<const float> b) {
  require(a.size() == b.size(), "attn::weighted_sum",
          "sizes differ: " + std::to_string(a.size()) + " and " + std::to_string(b.size()));
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return s;
}

// ---- The block and the model in float64 (attn/train/gradcheck64.hpp) -------------------------

namespace {

template <std::size_t N>
Tensor64<N> widen(const Tensor<N>& t) {
  Tensor64<N> d = xt::cast<double>(t);
  return d;
}

template <std::size_t N>
Tensor64<N> zeros_like(const Tensor64<N>& t) {
  Tensor64<N> z = xt::zeros<double>(t.shape());
  return z;
}

void check_default_block(const BlockConfig& c, const char* fn) {
  require(c.use_layer_norm && c.residual && c.use_ffn && c.attn_proj, fn, [&] {
    return std::string(
               "only the default block (LayerNorm, residuals, FFN, w_o) has a float64 "
               "twin, got ") +
           (!c.use_layer_norm ? "no LayerNorm"
            : !c.residual     ? "no residuals"
            : !c.use_ffn      ? "no FFN"
                              : "no w_o");
  });
}

// What the backward needs from one forward of the block.
struct Block64Cache {
  LayerNormCache64 ln1, ln2;
  MhaCache64 attn;
  FfnCache64 ffn;
  Tensor64<3> r1, r2;  // the LayerNorms' inputs: pre-norm x and h, post-norm x + a and h + f
};

// pre-norm:  h = x + mha(ln1(x));      out = h + ffn(ln2(h))
// post-norm: h = ln1(x + mha(x));      out = ln2(h + ffn(h))
Tensor64<3> block_forward_cached(const Tensor64<3>& x, const BlockWeights64& w,
                                 const BlockConfig& c, Block64Cache& k) {
  const double eps = static_cast<double>(c.eps);  // the float block's eps, exactly
  if (c.norm == NormPlacement::pre) {
    k.r1 = x;
    const Tensor64<3> l1 = layer_norm<3>(x, w.ln1_gamma, w.ln1_beta, eps, k.ln1);
    k.r2 = x + mha_forward(l1, w.attn, c.n_heads, c.causal, k.attn);  // h
    const Tensor64<3> l2 = layer_norm<3>(k.r2, w.ln2_gamma, w.ln2_beta, eps, k.ln2);
    return k.r2 + ffn_forward(l2, w.ffn, c.activation, k.ffn);
  }
  k.r1 = x + mha_forward(x, w.attn, c.n_heads, c.causal, k.attn);
  const Tensor64<3> h = layer_norm<3>(k.r1, w.ln1_gamma, w.ln1_beta, eps, k.ln1);
  k.r2 = h + ffn_forward(h, w.ffn, c.activation, k.ffn);
  return layer_norm<3>(k.r2, w.ln2_gamma, w.ln2_beta, eps, k.ln2);
}

}  // namespace

BlockWeights64 to_float64(const BlockWeights& w) {
  BlockWeights64 d;
  d.attn = {widen(w.attn.w_q), widen(w.attn.w_k), widen(w.attn.w_v), widen(w.attn.w_o)};
  d.ln1_gamma = widen(w.ln1_gamma);
  d.ln1_beta = widen(w.ln1_beta);
  d.ln2_gamma = widen(w.ln2_gamma);
  d.ln2_beta = widen(w.ln2_beta);
  d.ffn = {widen(w.ffn.w1), widen(w.ffn.b1), widen(w.ffn.w2), widen(w.ffn.b2)};
  return d;
}

BlockWeights64 block_zeros_like(const BlockWeights64& w) {
  BlockWeights64 z;
  z.attn = {zeros_like(w.attn.w_q), zeros_like(w.attn.w_k), zeros_like(w.attn.w_v),
            zeros_like(w.attn.w_o)};
  z.ln1_gamma = zeros_like(w.ln1_gamma);
  z.ln1_beta = zeros_like(w.ln1_beta);
  z.ln2_gamma = zeros_like(w.ln2_gamma);
  z.ln2_beta = zeros_like(w.ln2_beta);
  z.ffn = {zeros_like(w.ffn.w1), zeros_like(w.ffn.b1), zeros_like(w.ffn.w2), zeros_like(w.ffn.b2)};
  return z;
}

std::vector<NamedTensor64> block_parameters(BlockWeights64& w) {
  const auto s = [](auto& t) { return std::span<double>(t.data(), t.size()); };
  return {{"w_q", s(w.attn.w_q)},        {"w_k", s(w.attn.w_k)},        {"w_v", s(w.attn.w_v)},
          {"w_o", s(w.attn.w_o)},        {"ln1_gamma", s(w.ln1_gamma)}, {"ln1_beta", s(w.ln1_beta)},
          {"ln2_gamma", s(w.ln2_gamma)}, {"ln2_beta", s(w.ln2_beta)},   {"w1", s(w.ffn.w1)},
          {"b1", s(w.ffn.b1)},           {"w2", s(w.ffn.w2)},           {"b2", s(w.ffn.b2)}};
}

Tensor64<3> block_forward(const Tensor64<3>& x, const BlockWeights64& w,
                          const BlockConfig& config) {
  check_default_block(config, "attn::block_forward (float64)");
  Block64Cache k;
  return block_forward_cached(x, w, config, k);
}

void block_backward(const Tensor64<3>& dout, const Tensor64<3>& x, const BlockWeights64& w,
                    const BlockConfig& c, Tensor64<3>& dx, BlockWeights64& g) {
  check_default_block(c, "attn::block_backward (float64)");
  Block64Cache k;
  (void)block_forward_cached(x, w, c, k);
  if (c.norm == NormPlacement::pre) {
    // out = h + ffn(ln2(h)): dh = dout + ln2'(ffn'(dout))
    Tensor64<3> dl2, dh2, dl1, dx1;
    ffn_backward(dout, k.ffn, w.ffn, c.activation, dl2, g.ffn);
    layer_norm_backward<3>(dl2, k.r2, w.ln2_gamma, k.ln2, dh2, g.ln2_gamma, g.ln2_beta);
    const Tensor64<3> dh = dout + dh2;
    // h = x + mha(ln1(x)): dx = dh + ln1'(mha'(dh))
    mha_backward(dh, k.attn, w.attn, c.n_heads, c.causal, dl1, g.attn);
    layer_norm_backward<3>(dl1, k.r1, w.ln1_gamma, k.ln1, dx1, g.ln1_gamma, g.ln1_beta);
    dx = dh + dx1;
    return;
  }
  // out = ln2(r2), r2 = h + ffn(h): dh = dr2 + ffn'(dr2)
  Tensor64<3> dr2, dfh, dr1, dxa;
  layer_norm_backward<3>(dout, k.r2, w.ln2_gamma, k.ln2, dr2, g.ln2_gamma, g.ln2_beta);
  ffn_backward(dr2, k.ffn, w.ffn, c.activation, dfh, g.ffn);
  const Tensor64<3> dh = dr2 + dfh;
  // h = ln1(r1), r1 = x + mha(x): dx = dr1 + mha'(dr1)
  layer_norm_backward<3>(dh, k.r1, w.ln1_gamma, k.ln1, dr1, g.ln1_gamma, g.ln1_beta);
  mha_backward(dr1, k.attn, w.attn, c.n_heads, c.causal, dxa, g.attn);
  dx = dr1 + dxa;
}

LmWeights64 to_float64(const LmWeights& w) {
  require(w.lm_head.size() == 0, "attn::to_float64",
          "only a model with a tied head has a float64 twin, got a separate lm_head");
  LmWeights64 d;
  d.wte = widen(w.wte);
  d.wpe = widen(w.wpe);
  for (const BlockWeights& b : w.blocks) d.blocks.push_back(to_float64(b));
  d.ln_f_gamma = widen(w.ln_f_gamma);
  d.ln_f_beta = widen(w.ln_f_beta);
  return d;
}

LmWeights64 lm_zeros_like(const LmWeights64& w) {
  LmWeights64 z;
  z.wte = zeros_like(w.wte);
  z.wpe = zeros_like(w.wpe);
  for (const BlockWeights64& b : w.blocks) z.blocks.push_back(block_zeros_like(b));
  z.ln_f_gamma = zeros_like(w.ln_f_gamma);
  z.ln_f_beta = zeros_like(w.ln_f_beta);
  return z;
}

std::vector<NamedTensor64> lm_parameters(LmWeights64& w) {
  std::vector<NamedTensor64> out = {{"wte", {w.wte.data(), w.wte.size()}},
                                    {"wpe", {w.wpe.data(), w.wpe.size()}}};
  for (std::size_t l = 0; l < w.blocks.size(); ++l)
    for (NamedTensor64& t : block_parameters(w.blocks[l]))
      out.push_back({"h" + std::to_string(l) + "." + t.name, t.values});
  out.push_back({"ln_f_gamma", {w.ln_f_gamma.data(), w.ln_f_gamma.size()}});
  out.push_back({"ln_f_beta", {w.ln_f_beta.data(), w.ln_f_beta.size()}});
  return out;
}

namespace {

// The forward of the model in double, keeping each block's input and ln_f's cache.
struct Lm64Forward {
  std::vector<Tensor64<3>> inputs;  // L + 1: each block's input, then the last block's output
  LayerNormCache64 ln_f;
  Tensor64<3> h;       // (B, T, C) ln_f(x)
  Tensor64<2> logits;  // (B*T, V)
};

Lm64Forward lm_forward64(const xt::xtensor<int, 2>& tokens, const LmWeights64& w,
                         const LmConfig& config) {
  require(config.tied_head && config.use_layer_norm, "attn::lm_loss (float64)",
          "only the default model (tied head, LayerNorm) has a float64 twin");
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1], C = config.n_embd;
  const std::size_t V = config.vocab_size;
  require(T <= w.wpe.shape()[0] && w.wte.shape()[0] == V && w.wte.shape()[1] == C,
          "attn::lm_loss (float64)", "the tokens or weights do not fit the configuration");
  Lm64Forward f;
  // 1. x = wte[tokens] + wpe[0..T)                                     (B, T, C)
  Tensor64<3> x({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      const auto id = static_cast<std::size_t>(tokens(b, t));
      require(id < V, "attn::lm_loss (float64)", "a token outside [0, V)");
      for (std::size_t c = 0; c < C; ++c) x(b, t, c) = w.wte(id, c) + w.wpe(t, c);
    }
  // 2. The blocks.
  const BlockConfig bc = lm_block_config(config);
  f.inputs.push_back(x);
  for (const BlockWeights64& block : w.blocks)
    f.inputs.push_back(block_forward(f.inputs.back(), block, bc));
  // 3. logits = ln_f(x) @ wte^T                                        (B*T, C) @ (C, V)
  f.h = layer_norm<3>(f.inputs.back(), w.ln_f_gamma, w.ln_f_beta, static_cast<double>(bc.eps),
                      f.ln_f);
  f.logits = Tensor64<2>({B * T, V});
  for (std::size_t n = 0; n < B * T; ++n)
    for (std::size_t v = 0; v < V; ++v) {
      double s = 0.0;
      for (std::size_t c = 0; c < C; ++c) s += f.h.data()[n * C + c] * w.wte(v, c);
      f.logits(n, v) = s;
    }
  return f;
}

}  // namespace

double lm_loss(const xt::xtensor<int, 2>& tokens, const xt::xtensor<int, 2>& targets,
               const LmWeights64& w, const LmConfig& config) {
  const Lm64Forward f = lm_forward64(tokens, w, config);
  return cross_entropy(f.logits, std::span<const int>(targets.data(), targets.size()));
}

double lm_forward_backward(const xt::xtensor<int, 2>& tokens, const xt::xtensor<int, 2>& targets,
                           const LmWeights64& w, const LmConfig& config, LmWeights64& g) {
  const Lm64Forward f = lm_forward64(tokens, w, config);
  const std::span<const int> ys(targets.data(), targets.size());
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1], C = config.n_embd;
  const std::size_t V = config.vocab_size, N = B * T;
  // 3. logits = h @ wte^T: dh = dlogits @ wte (N, C), dwte += dlogits^T @ h (V, C)
  const Tensor64<2> dlogits = cross_entropy_grad(f.logits, ys);  // (N, V)
  Tensor64<3> dh = xt::zeros<double>({B, T, C});
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t v = 0; v < V; ++v) {
      const double d = dlogits(n, v);
      for (std::size_t c = 0; c < C; ++c) {
        dh.data()[n * C + c] += d * w.wte(v, c);
        g.wte(v, c) += d * f.h.data()[n * C + c];
      }
    }
  // ln_f, then the blocks from the top.
  Tensor64<3> dx;
  layer_norm_backward<3>(dh, f.inputs.back(), w.ln_f_gamma, f.ln_f, dx, g.ln_f_gamma, g.ln_f_beta);
  const BlockConfig bc = lm_block_config(config);
  for (std::size_t l = w.blocks.size(); l-- > 0;) {
    Tensor64<3> below;
    block_backward(dx, f.inputs[l], w.blocks[l], bc, below, g.blocks[l]);
    dx = std::move(below);
  }
  // 1. x = wte[tokens] + wpe[t]: each row of dx goes to its token's row and its position's row.
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      const auto id = static_cast<std::size_t>(tokens(b, t));
      for (std::size_t c = 0; c < C; ++c) {
        g.wte(id, c) += dx(b, t, c);
        g.wpe(t, c) += dx(b, t, c);
      }
    }
  return cross_entropy(f.logits, ys);
}

}  // namespace attn
