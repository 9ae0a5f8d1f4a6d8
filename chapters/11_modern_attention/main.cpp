// chapters/11_modern_attention/main.cpp: chapter 11, modern attention: the parts by which Llama,
// Mistral, Qwen and Gemma differ from GPT-2, each computed and shown, then measured.
// The narrated walkthrough: RoPE (a rotation whose dot products see only the offset, and the
// rotate-half layout), RMSNorm (LayerNorm without the mean), SwiGLU (a gate, and the width that
// keeps the parameters), grouped-query attention (shared K/V heads, the cache per token), the
// sliding window (what it forgets, and the rolling cache that is exact for it), then the table
// (table.cpp). The math lives in common/src/ops/ (rope, rmsnorm, swiglu, gqa, swa) and
// common/src/model/kvcache.cpp.
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

namespace ch11 {

TableSize table_size(bool full) {
  // The CPU model of the full table; the default is a smaller one that trains in about a minute.
  if (full) return {64, 4, 4, 64, 32, 2000, 3, 200, 100};
  return {32, 4, 2, 32, 16, 500, 3, 100, 20};
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
using attn::num;
using attn::section;
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
                                         std::size_t);  // ex11.4
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

std::string rounding_text(double d) {
  return d < 1e-5 ? "below 1e-5 (float rounding)" : fmt::format("{:.6f}", d);
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

// ---- 1. RoPE: the score of a rotated query and key depends only on their offset.
struct RopeDemo {
  std::size_t hs = 0, gap = 3;
  double theta = 0.0;
  std::vector<double> freqs;                       // theta^(-2i/hs), i < hs/2
  std::vector<std::array<std::size_t, 2>> places;  // (m, n), m - n = gap
  std::vector<double> scores;                      // rope(q, m) . rope(k, n)
  double spread = 0.0;                             // max - min of scores
  double other_gap = 0.0;                          // rope(q, gap + 1) . rope(k, 0)
  double plain = 0.0;                              // q . k, no rotation
  double norm_change = 0.0;                        // | |rope(q, m)| - |q| |, largest
  double half_diff = 0.0;                          // rope(P x, half) against P rope(x)
  std::vector<std::size_t> perm;
};

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
  const Tensor<4> via_half = attn::rope<float>(attn::rope_to_half_layout<float>(x), theta, 0,
                                               attn::RopeLayout::rotate_half);
  r.half_diff = attn::max_abs_diff(via_half, attn::rope_to_half_layout<float>(k.rope(x, theta, 0)));
  r.perm = attn::rope_half_permutation(hs);
  return r;
}

void show_rope(const RopeDemo& r) {
  section(1, "RoPE: positions as rotations");
  fmt::print(
      "GPT-2 adds a learned position vector to each token. RoPE adds nothing: inside every head\n"
      "it turns each pair of features (2i, 2i+1) of q and k by the angle p * theta^(-2i/hs), p\n"
      "the position. Pair 0 turns 1 radian per position, the last pair slowest. For hs = {},\n"
      "theta = {}, the angle per position of each pair:",
      r.hs, num(r.theta, 0));
  for (std::size_t i = 0; i < r.freqs.size(); ++i)
    fmt::print("{}{}", i % 8 == 0 ? "\n  " : " ", attn::format_significant(r.freqs[i], 3));
  fmt::print(
      "\nA rotation keeps lengths (|rope(q)| - |q|: {}), and two\n"
      "rotations by a and b leave a dot product that sees only a - b: rope(q, m) . rope(k, n)\n"
      "depends on m - n alone. One q and one k, drawn once, at four pairs of positions {} apart:\n",
      rounding_text(r.norm_change), r.gap);
  for (std::size_t i = 0; i < r.places.size(); ++i)
    fmt::print("  m = {:>4}, n = {:>4}:  q . k = {}\n", r.places[i][0], r.places[i][1],
               num(r.scores[i], 4));
  const bool same = r.spread < 1e-4;
  attn::claim(same, "the four scores are equal to float rounding");
  const bool moves = std::abs(r.other_gap - r.scores[0]) > 1e-3;
  fmt::print(
      "Largest difference {}: {}.\n"
      "At offset {} instead the score is {}{}; unrotated, q . k = {}.\n"
      "The model learns what each offset means, wherever it happens.\n",
      rounding_text(r.spread), same ? "the same score" : "DIFFERENT scores", r.gap + 1,
      num(r.other_gap, 4), moves ? " (the offset matters)" : " (nearly the same here)",
      num(r.plain, 4));
  std::string perm;
  for (const std::size_t p : r.perm) perm += (perm.empty() ? "" : " ") + std::to_string(p);
  attn::claim(r.half_diff < 1e-5, "the two layouts are the same rotation");
  fmt::print(
      "GPT-NeoX and Hugging Face pair feature i with i + hs/2 instead (\"rotate-half\"). Reorder\n"
      "the interleaved features by ({}) and the rotate-half RoPE gives the\n"
      "reordered interleaved result: largest difference {}.\n"
      "The same model, its w_q and w_k columns permuted: how Llama checkpoints are converted\n"
      "between the two.\n",
      perm, rounding_text(r.half_diff));
}

// ---- 2. RMSNorm: LayerNorm without the mean.
struct NormDemo {
  std::vector<float> x, ln, rms, rms_centred;
  double mean = 0.0;
  double centred_diff = 0.0;  // rms_norm(x - mean) against layer_norm(x)
  double shifted_diff = 0.0;  // rms_norm(x) against layer_norm(x)
  double dx_along_x = 0.0;    // the backward's dx . x, for a random dy (eps 0)
  double dx_norm = 0.0;       // |dx|
};

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

void show_norm(const NormDemo& d, const attn::LmConfig& cpu) {
  section(2, "RMSNorm: LayerNorm without the mean");
  const auto row = [](std::string_view name, const std::vector<float>& v) {
    fmt::print("  {:<22}", name);
    for (const float x : v) fmt::print(" {:>7}", num(x, 3));
    fmt::print("\n");
  };
  fmt::print(
      "LayerNorm centres a token's C features, then scales them to rms 1; RMSNorm only\n"
      "scales: y = x / sqrt(mean(x^2) + eps) * gamma. A token of C = 8, mean {}:\n",
      num(d.mean, 3));
  row("x", d.x);
  row("layer_norm(x)", d.ln);
  row("rms_norm(x)", d.rms);
  row("rms_norm(x - mean)", d.rms_centred);
  attn::claim(d.centred_diff < 1e-4, "RMSNorm of the centred token is LayerNorm");
  const bool apart = d.shifted_diff > 0.1;
  fmt::print(
      "On the centred token RMSNorm is LayerNorm (largest difference {});\n"
      "on x itself they differ by up to {}{}.\n"
      "The bet (Zhang and Sennrich 2019) is that the scale is what keeps a deep stack stable\n"
      "and the next layer copes with the mean: one reduction per token instead of two, and no\n"
      "beta. This model's {} norms (2 per block, ln_f) of C = {} drop {} parameters.\n",
      rounding_text(d.centred_diff), num(d.shifted_diff, 3),
      apart ? ": the mean moved every feature" : "", 2 * cpu.n_layers + 1, cpu.n_embd,
      (2 * cpu.n_layers + 1) * cpu.n_embd);
  const bool orthogonal = std::abs(d.dx_along_x) < 1e-4 * std::max(1.0, d.dx_norm);
  attn::claim(orthogonal, "RMSNorm's dx has no component along x");
  fmt::print(
      "Scaling x by any factor leaves y as it is (eps = 0), so the gradient cannot point along x.\n"
      "For a random dy and gamma, rms_norm_backward gives |dx| = {}, and |dx . x| is\n"
      "{}{}.\n",
      num(d.dx_norm, 3), rounding_text(std::abs(d.dx_along_x)),
      orthogonal ? ": orthogonal" : " (NOT orthogonal)");
}

// ---- 3. SwiGLU: a gate, and the width that keeps the parameters.
void show_swiglu(const attn::LmConfig& cpu) {
  section(3, "SwiGLU: a gated FFN");
  fmt::print(
      "The MLP is gelu(x W1 + b1) W2 + b2, F = 4C. SwiGLU multiplies two projections:\n"
      "silu(x W_gate) * (x W_up), then W_down. silu(a) = a sigmoid(a) lets one branch decide,\n"
      "per feature and per token, how much of the other passes:\n ");
  for (const double a : {-4.0, -1.0, 0.0, 1.0, 4.0})
    fmt::print(" silu({}) = {}", num(a, 0), num(attn::silu(a), 3));
  fmt::print(
      "\nThree matrices instead of two: F = 2/3 * 4C keeps the parameter count, rounded up to a\n"
      "multiple of 8 (Llama rounds to 256):\n");
  fmt::print("  {:>6} {:>6} {:>13} {:>13} {:>7}\n", "C", "F", "MLP 2*C*4C", "SwiGLU 3*C*F",
             "ratio");
  for (const std::size_t C : {cpu.n_embd, std::size_t{384}, std::size_t{4096}}) {
    const std::size_t F = attn::swiglu_width(C);
    const double mlp = 2.0 * static_cast<double>(C) * 4.0 * static_cast<double>(C);
    const double glu = 3.0 * static_cast<double>(C) * static_cast<double>(F);
    attn::claim(std::abs(glu / mlp - 1.0) < 0.05, "SwiGLU's width keeps the MLP's parameters");
    fmt::print("  {:>6} {:>6} {:>13} {:>13} {:>7}\n", C, F, attn::grouped(mlp), attn::grouped(glu),
               num(glu / mlp, 3));
  }
}

// ---- 4. Grouped-query attention: K/V heads shared by groups of query heads.
struct GqaDemo {
  std::size_t H = 0, KV = 0;
  std::vector<std::size_t> head_of;  // the K/V head each query head read, from repeat_kv
};

GqaDemo gqa_demo(const Kernels& k, std::size_t H, std::size_t KV) {
  Tensor<4> kv(std::array<std::size_t, 4>{1, KV, 1, 1});
  for (std::size_t g = 0; g < KV; ++g) kv(0, g, 0, 0) = static_cast<float>(g);  // its own number
  const Tensor<4> out = k.repeat_kv(kv, H);
  GqaDemo d{H, KV, {}};
  for (std::size_t h = 0; h < H; ++h)
    d.head_of.push_back(static_cast<std::size_t>(out(0, h, 0, 0)));
  return d;
}

void show_gqa(const GqaDemo& d, const attn::LmConfig& cpu, std::size_t W) {
  section(4, "Grouped-query attention: fewer keys and values");
  fmt::print(
      "At generation every layer caches K and V for every position (chapter 10). With H = {}\n"
      "query heads sharing KV = {} K/V heads, each query head reads the K/V head of its group:\n ",
      d.H, d.KV);
  bool grouped_right = true;
  for (std::size_t h = 0; h < d.H; ++h) {
    grouped_right = grouped_right && d.head_of[h] == h / (d.H / d.KV);
    fmt::print(" q{} -> kv{}", h, d.head_of[h]);
  }
  attn::claim(grouped_right, "query head h reads K/V head h / (H / KV)");
  fmt::print(
      "\n{}KV = H is chapter 05's multi-head attention (MHA), KV = 1 multi-query attention\n"
      "(MQA). The cache per token is 2 L KV hs numbers:\n",
      grouped_right ? "" : "(NOT the grouping h / (H / KV).) ");
  const std::size_t hs = cpu.n_embd / cpu.n_heads;
  fmt::print("  {:<38} {:>4} {:>12} {:>12}\n", "", "KV", "bytes/token", "4096 tokens");
  const auto line = [](std::string_view name, std::size_t kv, double per_token, double held) {
    fmt::print("  {:<38} {:>4} {:>12} {:>12}\n", name, kv, attn::grouped(per_token),
               attn::bytes_text(static_cast<std::uint64_t>(held)));
  };
  for (const std::size_t kv : {cpu.n_heads, d.KV, std::size_t{1}}) {
    if (kv == d.KV && (kv == cpu.n_heads || kv == 1)) continue;
    const double b = 2.0 * static_cast<double>(cpu.n_layers * kv * hs) * 4.0;
    line(fmt::format("this model (L {}, hs {}), float32{}", cpu.n_layers, hs,
                     kv == cpu.n_heads ? ", MHA" : (kv == 1 ? ", MQA" : ", GQA")),
         kv, b, b * 4096.0);
  }
  const double b_window = 2.0 * static_cast<double>(cpu.n_layers * d.KV * hs) * 4.0;
  line(fmt::format("the same GQA, window W = {}", W), d.KV, b_window,
       b_window * static_cast<double>(std::min<std::size_t>(W, 4096)));
  for (const std::size_t kv : {std::size_t{64}, std::size_t{8}}) {
    const double b = 2.0 * 80.0 * static_cast<double>(kv) * 128.0 * 2.0;
    line(fmt::format("Llama 2 70B (L 80, hs 128), fp16{}", kv == 64 ? ", MHA" : ", GQA"), kv, b,
         b * 4096.0);
  }
  fmt::print(
      "Fewer K/V heads shrink the cache by H / KV; a window caps it at W positions whatever the\n"
      "length of the text. The query heads, and their compute, stay.\n");
}

// ---- 5. The sliding window: what it forgets, and the rolling cache that is exact for it.
struct WindowDemo {
  std::size_t W = 0, L = 0, n = 0;
  attn::WindowAttention<float> small;  // T 6 attention weights with the demo's window
  std::size_t small_W = 3;
  double small_diff = 0.0;   // against attn::windowed_attention
  std::size_t reach = 0;     // the last position whose logits token 0 changes
  double cache_diff = 0.0;   // rolling cache against the full forward, every position
  std::size_t capacity = 0;  // positions the rolling cache holds per layer
};

WindowDemo window_demo(const Kernels& k, const attn::LmConfig& model, std::span<const int> text,
                       std::uint64_t seed) {
  WindowDemo d;
  d.W = model.window;
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

void show_window(const WindowDemo& d) {
  section(5, "The sliding window: what it forgets");
  fmt::print(
      "With a window W, query t attends to keys t - W + 1 .. t only: a layer costs O(T W)\n"
      "instead of O(T^2). The weights of T = 6 positions, W = {} (. is exactly 0):\n",
      d.small_W);
  for (std::size_t t = 0; t < 6; ++t) {
    fmt::print("  t = {}:", t);
    for (std::size_t s = 0; s < 6; ++s) {
      const float p = d.small.weights(0, 0, t, s);
      fmt::print(" {:>5}", p == 0.0f ? "." : num(p, 2));
    }
    fmt::print("\n");
  }
  attn::claim(d.small_diff < 1e-5, "the window's attention equals the library's masked one");
  fmt::print("(the same output as attn::windowed_attention: largest difference {}.)\n",
             rounding_text(d.small_diff));
  const std::size_t field = d.L * (d.W - 1);
  fmt::print(
      "Nothing is lost at once: layer 1 sees W positions back, layer 2 sees what those saw, and\n"
      "so on: after L layers a token reaches L (W - 1) positions into the past. An untrained\n"
      "model (L {}, W {}, RoPE, no position table) over {} characters; change the first one\n"
      "and the last position whose logits move is {} (L (W - 1) = {}):\n{}.\n",
      d.L, d.W, d.n, d.reach, field,
      d.reach == field ? "beyond it, the first character is forgotten entirely"
                       : "NOT the receptive field");
  attn::claim(d.reach == field, "token 0 reaches exactly L (W - 1) positions");
  const bool exact = d.cache_diff < 1e-4;
  attn::claim(exact, "the rolling cache equals the full sliding-window forward");
  fmt::print(
      "So a cache of the last W positions per layer is all generation needs: the rolling cache\n"
      "holds {} per layer, written round-robin, RoPE applied at the absolute position. Its\n"
      "logits, one token at a time for all {} positions, against the full forward over the\n"
      "whole sequence: largest difference {}{}.\n"
      "This is exact because the model was built with the window; a model trained without one\n"
      "and cropped at generation would need its evicted keys from layer 1 up (chapter 10).\n",
      d.capacity, d.n, rounding_text(d.cache_diff),
      exact ? ":\nthe same logits, token for token" : " (DIFFERENT)");
}

void run(const attn::CommonOptions& common, const Options& o) {
  check_options(o);
  check_table_flags(o, common.seed);
  const Kernels k =
      common.mine ? Kernels{&ex11::rope, &ex11::rms_norm, &ex11::rms_norm_backward,
                            &ex11::repeat_kv, &ex11::sliding_window_attention}
                  : Kernels{&reference_rope, &reference_rms_norm, &reference_rms_norm_backward,
                            &reference_repeat_kv, &reference_window};
  const attn::Corpus corpus = attn::load_corpus(common.data);
  const attn::Vocab vocab = attn::Vocab::from_text(corpus.text);
  const std::vector<int> ids = vocab.encode(corpus.text);
  const TableSize z = table_size(o.table);
  attn::LmConfig cpu;  // the table's model, its parts as sections 4-5 use them
  cpu.vocab_size = vocab.size();
  cpu.block_size = z.block_size;
  cpu.n_embd = z.n_embd;
  cpu.n_heads = z.n_heads;
  cpu.n_layers = z.n_layers;
  attn::LmConfig windowed = cpu;
  windowed.positions = attn::Positions::rope;
  windowed.rope_theta = o.rope_theta;
  windowed.normalization = attn::Normalization::rmsnorm;
  windowed.ffn = attn::FfnKind::swiglu;
  windowed.n_kv_heads = o.n_kv_heads;
  windowed.window = table_window(o, z);
  windowed.bias = false;
  if (ids.size() < 10 * windowed.window) {
    throw std::runtime_error(fmt::format("corpus {} is too short: section 5 needs {} characters",
                                         corpus.origin, 10 * windowed.window));
  }

  fmt::print("Chapter 11: modern attention\n");
  fmt::print("seed {}, corpus {}, functions: {}\n", common.seed, corpus.origin,
             common.mine ? "yours (ex11::, --mine)" : "the reference (attn::)");
  show_rope(rope_demo(k, o.head_size, o.rope_theta, common.seed));
  show_norm(norm_demo(k, common.seed), cpu);
  show_swiglu(cpu);
  show_gqa(gqa_demo(k, cpu.n_heads, o.n_kv_heads), cpu, windowed.window);
  show_window(window_demo(k, windowed, ids, common.seed));
  run_table(common, o);
  fmt::print(
      "\nNext: chapter 12 makes attention itself fast: the online softmax, tiles, and a kernel\n"
      "that never holds the (T, T) weights.\n");
}

}  // namespace

int main(int argc, char** argv) {
  attn::Cli cli("11_modern_attention",
                "Chapter 11: modern attention. RoPE, RMSNorm, SwiGLU, grouped-query and "
                "sliding-window attention: each computed and shown, then the model trained "
                "with each change alone and all together (the Llama recipe), measured on the "
                "same budget. The default table is a small one (about a minute); --table runs "
                "the full one (C 64, H 4, L 4, T 64, B 32, 2000 steps, 3 seeds).");
  Options o;
  cli.add_size("--head-size", o.head_size, "hs of section 1's rotation, even", 2, kMaxHeadSize);
  cli.add_float("--rope-theta", o.rope_theta, "RoPE's base theta (> 0)", 0.0f, 1e9f);
  cli.add_size("--n-kv-heads", o.n_kv_heads,
               "K/V heads of the gqa rows and sections 4-5; must divide the 4 query heads", 1, 4);
  cli.add_size("--window", o.window,
               "W, the window of section 5 and the window row (default: T / 4 of the table)", 1,
               64);
  cli.add_flag("--table", o.table,
               "the full table: C 64, H 4, L 4, T 64, B 32, 2000 steps, 3 seeds (24 runs; split "
               "it with --table-rows and --table-seeds)");
  cli.add_string("--table-rows", o.table_rows,
                 "LIST: only these rows, by name, e.g. base,llama (default: all)");
  cli.add_string("--table-seeds", o.table_seeds,
                 "LIST: these seeds, e.g. 1,2 (default: --seed and the next ones)");
  cli.add_size("--table-steps", o.table_steps,
               "N: train each row this many steps instead of the table's own", 1, 100000);
  return cli.run(argc, argv, [&](const attn::CommonOptions& common) { run(common, o); });
}
