// chapters/11_modern_attention/main.cpp: chapter 11, modern attention: the parts by which Llama,
// Mistral, Qwen and Gemma differ from GPT-2, each computed and shown, then measured.
// The narrated walkthrough: RoPE (a rotation whose dot products see only the offset, and the
// rotate-half layout), RMSNorm (LayerNorm without the mean), SwiGLU (a gate, and the width that
// keeps the parameters), grouped-query attention (shared K/V heads, the cache per token), the
// sliding window (what it forgets, and the rolling cache that is exact for it), then the table
// (table.cpp). The math lives in common/src/ops/ (rope, rmsnorm, swiglu, gqa, swa) and
// common/src/model/kvcache.cpp.
// Each section computes here and is printed by its show_ function in show.cpp.
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/term/narrate.hpp"
#include "attn/io/text.hpp"
#include "attn/model/kvcache.hpp"
#include "attn/model/model.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/rmsnorm.hpp"
#include "attn/ops/rope.hpp"
#include "attn/ops/swa.hpp"
#include "attn/ops/gqa.hpp"
#include "attn/ops/swiglu.hpp"
#include "exercises.hpp"
#include "modern.hpp"
#include "show.hpp"

namespace ch11 {

TableSize table_size(bool full) {
  // The CPU model of the full table; the default is a smaller one that trains in about a minute.
  if (full) return {64, 4, 4, 64, 32, 2000, 5, 200, 100};
  return {32, 4, 2, 32, 16, 500, 5, 100, 20};
}

std::size_t table_window(const Options& o, const TableSize& z) {
  return o.window != 0 ? o.window : z.block_size / 4;
}

void check_options(const Options& o) {
  const TableSize z = table_size(o.table);
  if (o.head_size % 2 != 0) {
    throw attn::UsageError(
        fmt::format("--head-size must be even (RoPE turns pairs of features), got {} (see --help)",
                    o.head_size));
  }
  if (z.n_heads % o.n_kv_heads != 0) {
    throw attn::UsageError(fmt::format(
        "--n-kv-heads {} does not divide the {} query heads: use 1, 2 or 4 (see --help)",
        o.n_kv_heads, z.n_heads));
  }
  if (o.window > z.block_size) {
    throw attn::UsageError(
        fmt::format("--window must be at most the table's block size T = {}{}, got {} (see --help)",
                    z.block_size, o.table ? "" : " (--table: 64)", o.window));
  }
}

}  // namespace ch11

namespace {

using namespace ch11;
using attn::Matrix;
using attn::Tensor;

constexpr std::size_t kMaxHeadSize = 256;

// ---- The functions the walkthrough calls: from attn:: (the reference) or, with --mine, the
// learner's ex11:: exercises.
struct Kernels {
  Tensor<4> (*rope)(const Tensor<4>&, double, std::size_t);              // ex11.1
  Tensor<3> (*rms_norm)(const Tensor<3>&, const attn::Vector&, double);  // ex11.2
  attn::RmsNormGrads<float, 3> (*rms_norm_backward)(const Tensor<3>&, const Tensor<3>&,
                                                    const attn::Vector&, double);  // ex11.5
  Tensor<4> (*repeat_kv)(const Tensor<4>&, std::size_t);                           // ex11.3
  attn::WindowAttention<float> (*window)(const Tensor<4>&, const Tensor<4>&, const Tensor<4>&,
                                         std::size_t);                       // ex11.4
  Tensor<4> (*rope_half)(const Tensor<4>&, double, std::size_t);             // ex11.9
  Tensor<3> (*swiglu)(const Tensor<3>&, const attn::SwigluWeights<float>&);  // ex11.10
};

Tensor<4> reference_rope(const Tensor<4>& x, double theta, std::size_t offset) {
  return attn::rope<float>(x, theta, offset);
}
Tensor<3> reference_rms_norm(const Tensor<3>& x, const attn::Vector& gamma, double eps) {
  return attn::rms_norm<float, 3>(x, gamma, eps);
}
attn::RmsNormGrads<float, 3> reference_rms_norm_backward(const Tensor<3>& dy, const Tensor<3>& x,
                                                         const attn::Vector& gamma, double eps) {
  attn::RmsNormCache<float> cache;
  (void)attn::rms_norm<float, 3>(x, gamma, eps, cache);
  return attn::rms_norm_backward<float, 3>(dy, x, gamma, cache);
}
Tensor<4> reference_repeat_kv(const Tensor<4>& kv, std::size_t n_heads) {
  return attn::repeat_kv<float>(kv, n_heads);
}
attn::WindowAttention<float> reference_window(const Tensor<4>& q, const Tensor<4>& k,
                                              const Tensor<4>& v, std::size_t window) {
  return attn::sliding_window_attention<float>(q, k, v, window);
}
Tensor<4> reference_rope_half(const Tensor<4>& x, double theta, std::size_t offset) {
  return attn::rope<float>(x, theta, offset, attn::RopeLayout::rotate_half);
}
Tensor<3> reference_swiglu(const Tensor<3>& x, const attn::SwigluWeights<float>& w) {
  return attn::swiglu_forward<float>(x, w);
}

// A (1, 1, 1, n) tensor from n numbers drawn N(0, 1).
Tensor<4> one_row(attn::Rng& rng, std::size_t n) {
  return attn::randn<4>(rng, std::array<std::size_t, 4>{1, 1, 1, n});
}

double dot(const Tensor<4>& a, const Tensor<4>& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += static_cast<double>(a.data()[i]) * static_cast<double>(b.data()[i]);
  return s;
}
// ---- The walkthrough: what sections 1-5 compute (show.cpp prints them).

// 1. RoPE: the score of a rotated query and key depends only on their offset.
RopeDemo rope_demo(const Kernels& k, std::size_t hs, double theta, std::uint64_t seed) {
  RopeDemo r;
  r.hs = hs;
  r.theta = theta;
  r.freqs = attn::rope_frequencies(hs, theta);
  attn::Rng rng(seed, 1101);
  const Tensor<4> q = one_row(rng, hs), key = one_row(rng, hs);  // (1, 1, 1, hs)
  r.plain = dot(q, key);
  for (const std::size_t n :
       {std::size_t{0}, std::size_t{10}, std::size_t{100}, std::size_t{1000}}) {
    const std::size_t m = n + r.gap;
    const Tensor<4> qm = k.rope(q, theta, m), kn = k.rope(key, theta, n);
    r.places.push_back({m, n});
    r.scores.push_back(dot(qm, kn));
    r.norm_change =
        std::max(r.norm_change, std::abs(std::sqrt(dot(qm, qm)) - std::sqrt(dot(q, q))));
  }
  const auto [lo, hi] = std::minmax_element(r.scores.begin(), r.scores.end());
  r.spread = *hi - *lo;
  r.other_gap = dot(k.rope(q, theta, r.gap + 1), k.rope(key, theta, 0));
  // The rotate-half layout: the same rotation after the permutation of the features.
  const Tensor<4> x = attn::randn<4>(rng, std::array<std::size_t, 4>{1, 2, 5, hs});
  const Tensor<4> x_half = attn::rope_to_half_layout<float>(x);
  const Tensor<4> via_half = k.rope_half(x_half, theta, 0);  // ex11.9 with --mine
  r.half_diff = attn::max_abs_diff(via_half, attn::rope_to_half_layout<float>(k.rope(x, theta, 0)));
  const Tensor<4> want_half = reference_rope_half(x_half, theta, 0);
  r.half_vs_library.max_diff = attn::max_abs_diff(via_half, want_half);
  for (const float v : want_half)
    r.half_vs_library.scale = std::max(r.half_vs_library.scale, std::abs(static_cast<double>(v)));
  r.perm = attn::rope_half_permutation(hs);
  return r;
}
// 2. RMSNorm: LayerNorm without the mean.
NormDemo norm_demo(const Kernels& k, std::uint64_t seed) {
  const std::size_t C = 8;
  attn::Rng rng(seed, 1102);
  Tensor<3> x = attn::randn<3>(rng, std::array<std::size_t, 3>{1, 1, C});
  x += 2.0f;  // a mean away from 0, as a residual stream drifts
  const attn::Vector ones = xt::ones<float>({C}), zeros = xt::zeros<float>({C});
  NormDemo d;
  for (const float v : x) d.mean += static_cast<double>(v) / static_cast<double>(C);
  Tensor<3> centred = x;
  centred -= static_cast<float>(d.mean);
  const Tensor<3> ln = attn::layer_norm<3>(x, ones, zeros, 1e-5f);
  const Tensor<3> rms = k.rms_norm(x, ones, 1e-5), rc = k.rms_norm(centred, ones, 1e-5);
  d.x.assign(x.begin(), x.end());
  d.ln.assign(ln.begin(), ln.end());
  d.rms.assign(rms.begin(), rms.end());
  d.rms_centred.assign(rc.begin(), rc.end());
  d.centred_diff = attn::max_abs_diff(rc, ln);
  d.shifted_diff = attn::max_abs_diff(rms, ln);
  // The backward (ex11.5) with eps 0: y does not change when x is scaled, so dx . x = 0.
  const Tensor<3> dy = attn::randn<3>(rng, std::array<std::size_t, 3>{1, 1, C});
  const attn::Vector gamma = attn::randn<1>(rng, std::array<std::size_t, 1>{C});
  const Tensor<3> dx = k.rms_norm_backward(dy, x, gamma, 0.0).dx;
  for (std::size_t j = 0; j < C; ++j) {
    const double a = dx.data()[j], b = x.data()[j];
    d.dx_along_x += a * b;
    d.dx_norm += a * a;
  }
  d.dx_norm = std::sqrt(d.dx_norm);
  return d;
}
// 3. SwiGLU: show_swiglu prints its widths from the formulas; with --mine, ex11.10 on a small
// random FFN against attn::swiglu_forward.
MineCheck swiglu_check(const Kernels& k, std::uint64_t seed) {
  const std::size_t C = 8, F = attn::swiglu_width(C);
  attn::Rng rng(seed, 1103);
  const Tensor<3> x = attn::randn<3>(rng, std::array<std::size_t, 3>{2, 3, C});
  attn::SwigluWeights<float> w;
  w.w_gate = attn::randn<2>(rng, std::array<std::size_t, 2>{C, F});
  w.w_up = attn::randn<2>(rng, std::array<std::size_t, 2>{C, F});
  w.w_down = attn::randn<2>(rng, std::array<std::size_t, 2>{F, C});
  const Tensor<3> want = reference_swiglu(x, w);
  MineCheck c;
  c.max_diff = attn::max_abs_diff(k.swiglu(x, w), want);
  for (const float v : want) c.scale = std::max(c.scale, std::abs(static_cast<double>(v)));
  return c;
}

// 4. Grouped-query attention: K/V heads shared by groups of query heads.
GqaDemo gqa_demo(const Kernels& k, std::size_t H, std::size_t KV) {
  Tensor<4> kv(std::array<std::size_t, 4>{1, KV, 1, 1});
  for (std::size_t g = 0; g < KV; ++g) kv(0, g, 0, 0) = static_cast<float>(g);  // its own number
  const Tensor<4> out = k.repeat_kv(kv, H);
  GqaDemo d{H, KV, {}};
  for (std::size_t h = 0; h < H; ++h)
    d.head_of.push_back(static_cast<std::size_t>(out(0, h, 0, 0)));
  return d;
}
// 5. The sliding window: what it forgets, and the rolling cache that is exact for it.
WindowDemo window_demo(const Kernels& k, const attn::ModelSpec& model, std::span<const int> text,
                       std::uint64_t seed) {
  WindowDemo d;
  d.W = *model.window;
  d.L = model.n_layers;
  d.n = 10 * d.W;
  attn::Rng rng(seed, 1105);
  const std::array<std::size_t, 4> shape{1, 1, 6, 4};
  const Tensor<4> q = attn::randn<4>(rng, shape), key = attn::randn<4>(rng, shape),
                  v = attn::randn<4>(rng, shape);
  d.small = k.window(q, key, v, d.small_W);
  d.small_diff = attn::max_abs_diff(
      d.small.out, attn::windowed_attention<float>(q, key, v, true, d.small_W).out);
  // An untrained model with RoPE and the window: its logits over 10 W characters of the text.
  attn::Rng init(seed, 1106);
  const attn::LmWeights w = attn::lm_init(init, model);
  xt::xtensor<int, 2> tokens(std::array<std::size_t, 2>{1, d.n});
  std::copy_n(text.begin(), d.n, tokens.begin());
  const Tensor<3> full = attn::lm_forward(tokens, w, model);  // (1, n, V)
  xt::xtensor<int, 2> changed = tokens;
  changed(0, 0) = (tokens(0, 0) + 1) % static_cast<int>(model.vocab_size);
  const Tensor<3> other = attn::lm_forward(changed, w, model);
  const std::size_t V = model.vocab_size;
  for (std::size_t t = 0; t < d.n; ++t)
    for (std::size_t j = 0; j < V; ++j)
      if (full(0, t, j) != other(0, t, j)) d.reach = t;
  attn::RollingKvCache cache = attn::rolling_cache_init(model, 1);
  d.capacity = cache.capacity;
  for (std::size_t t = 0; t < d.n; ++t) {
    const int id = tokens(0, t);
    const Matrix& logits = attn::lm_step_rolling(cache, std::span<const int>(&id, 1), w, model);
    for (std::size_t j = 0; j < V; ++j)
      d.cache_diff = std::max(d.cache_diff, std::abs(static_cast<double>(logits(0, j)) -
                                                     static_cast<double>(full(0, t, j))));
  }
  return d;
}
void run(const attn::CommonOptions& common, const Options& o) {
  check_options(o);
  check_table_flags(o, common.seed);
  const Kernels k =
      common.mine ? Kernels{&ex11::rope,
                            &ex11::rms_norm,
                            &ex11::rms_norm_backward,
                            &ex11::repeat_kv,
                            &ex11::sliding_window_attention,
                            &ex11::rope_rotate_half,
                            &ex11::swiglu}
                  : Kernels{&reference_rope,      &reference_rms_norm, &reference_rms_norm_backward,
                            &reference_repeat_kv, &reference_window,   &reference_rope_half,
                            &reference_swiglu};
  const attn::Corpus corpus = attn::load_corpus(common.data);
  const attn::Vocab vocab = attn::Vocab::from_text(corpus.text);
  const std::vector<int> ids = vocab.encode(corpus.text);
  const TableSize z = table_size(o.table);
  attn::ModelChoices table;  // the table's model, its parts as sections 4-5 use them
  table.vocab_size = vocab.size();
  table.block_size = z.block_size;
  table.n_embd = z.n_embd;
  table.n_heads = z.n_heads;
  table.n_layers = z.n_layers;
  const attn::ModelSpec cpu = attn::resolve_spec(table);
  table.positions = attn::Positions::rope;
  table.rope_theta = o.rope_theta;
  table.normalization = attn::Normalization::rmsnorm;
  table.ffn = attn::FfnKind::swiglu;
  table.n_kv_heads = o.n_kv_heads;
  table.window = table_window(o, z);
  table.bias = false;
  const attn::ModelSpec windowed = attn::resolve_spec(table);
  const std::size_t W = *windowed.window;
  if (ids.size() < 10 * W) {
    throw std::runtime_error(fmt::format("corpus {} is too short: section 5 needs {} characters",
                                         corpus.origin, 10 * W));
  }

  show_header(common.seed, corpus.origin, common.mine);
  if (o.extrapolate) {  // section 7 alone (extrapolation.cpp): train short, test long
    run_extrapolation(common, o);
    show_next();
    return;
  }
  const RopeDemo rope = rope_demo(k, o.head_size, o.rope_theta, common.seed);
  show_rope(rope);  // 1
  if (common.mine) show_rope_half_mine(rope);
  show_norm(norm_demo(k, common.seed), cpu);  // 2
  show_swiglu(cpu);                           // 3
  if (common.mine) show_swiglu_mine(swiglu_check(k, common.seed));
  show_gqa(gqa_demo(k, cpu.n_heads, o.n_kv_heads), cpu, W);  // 4
  show_window(window_demo(k, windowed, ids, common.seed));   // 5
  run_table(common, o);  // table.cpp: every change trained alone and all together
  show_next();
}

}  // namespace

int main(int argc, char** argv) {
  attn::Cli cli("11_modern_attention",
                "Chapter 11: modern attention. RoPE, RMSNorm, SwiGLU, grouped-query and "
                "sliding-window attention: each computed and shown, then the model trained "
                "with each change alone and all together (the Llama recipe), measured on the "
                "same budget. The default table is a small one (about a minute); --table runs "
                "the full one (C 64, H 4, L 4, T 64, B 32, 2000 steps, 5 seeds).");
  Options o;
  cli.add_size("--head-size", o.head_size, "hs of section 1's rotation, even", 2, kMaxHeadSize);
  cli.add_float("--rope-theta", o.rope_theta, "RoPE's base theta (> 0)", 0.0f, 1e9f);
  cli.add_size("--n-kv-heads", o.n_kv_heads,
               "K/V heads of the gqa rows and sections 4-5; must divide the 4 query heads", 1, 4);
  cli.add_size("--window", o.window,
               "W, the window of section 5 and the window row (default: T / 4 of the table)", 1,
               64);
  cli.add_flag("--table", o.table,
               "the full table: C 64, H 4, L 4, T 64, B 32, 2000 steps, 5 seeds (40 runs; split "
               "it with --table-rows and --table-seeds)");
  cli.add_string("--table-rows", o.table_rows,
                 "LIST: only these rows, by name, e.g. base,llama (default: all)");
  cli.add_string("--table-seeds", o.table_seeds,
                 "LIST: these seeds, e.g. 1,2 (default: --seed and the next ones)");
  cli.add_size("--table-steps", o.table_steps,
               "N: train each row this many steps instead of the table's own", 1, 100000);
  cli.add_flag("--extrapolate", o.extrapolate,
               "run section 7 alone: five ways of knowing positions, trained at T = 32 and read "
               "at 8T (25 runs, about 40 s)");
  cli.add_size("--extrapolate-steps", o.extrapolate_steps,
               "N: section 7's training steps per model (default 600)", 1, 20000);
  cli.add_size("--extrapolate-seeds", o.extrapolate_seeds,
               "N: section 7's seeds, --seed and the next ones (default 5)", 1, 16);
  return cli.run(argc, argv, [&](const attn::CommonOptions& common) {
    o.table_rows_given = attn::flag_given(argc, argv, "--table-rows");
    o.table_seeds_given = attn::flag_given(argc, argv, "--table-seeds");
    run(common, o);
  });
}
