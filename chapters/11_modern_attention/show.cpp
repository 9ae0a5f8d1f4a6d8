// chapters/11_modern_attention/show.cpp: the narration of sections 1-5 of chapter 11. Each
// function prints what one section of main.cpp computed, and checks the sentences its numbers
// could contradict (attn::claim).
#include "show.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/limits.hpp"
#include "attn/term/narrate.hpp"
#include "attn/ops/swiglu.hpp"

namespace ch11 {

using attn::num;
using attn::rounding_text;
using attn::section;

void show_header(std::uint64_t seed, const std::string& corpus_origin, bool mine) {
  fmt::print("Chapter 11: modern attention\n");
  fmt::print("seed {}, corpus {}, functions: {}\n", seed, corpus_origin,
             mine ? "yours (ex11::, --mine)" : "the reference (attn::)");
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

void show_norm(const NormDemo& d, const attn::ModelSpec& cpu) {
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

// 3. SwiGLU: a gate, and the width that keeps the parameters.
// The tests' tolerance for ex11.9 and ex11.10 (tests/exercises/ch11_test.cpp): 1e-5 + 1e-4 |want|.
static std::string mine_verdict(const MineCheck& c) {
  return fmt::format("max |diff| {:.1e}, {}", c.max_diff,
                     c.max_diff <= 1e-5 + 1e-4 * c.scale
                         ? "within the tests' tolerance"
                         : "TOO FAR (beyond the tests' 1e-5 + 1e-4 |ref|)");
}

void show_rope_half_mine(const RopeDemo& r) {
  fmt::print(
      "yours (ex11.9): that rotate-half RoPE, on the same (1, 2, 5, {}) input, against\n"
      "attn::rope with RopeLayout::rotate_half: {}.\n",
      r.hs, mine_verdict(r.half_vs_library));
}

void show_swiglu(const attn::ModelSpec& cpu) {
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

void show_swiglu_mine(const MineCheck& c) {
  fmt::print(
      "yours (ex11.10): SwiGLU on a random (2, 3, 8) input, F = {}, against\n"
      "attn::swiglu_forward with the same weights: {}.\n",
      attn::swiglu_width(8), mine_verdict(c));
}

void show_gqa(const GqaDemo& d, const attn::ModelSpec& cpu, std::size_t W) {
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

void show_next() {
  fmt::print(
      "\nNext: chapter 12 makes attention itself fast: the online softmax, tiles, and a kernel\n"
      "that never holds the (T, T) weights.\n");
}

}  // namespace ch11
