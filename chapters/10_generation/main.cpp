// chapters/10_generation/main.cpp: chapter 10, generating fast with a KV cache.
// The narrated walkthrough: what a new token really needs, the cache and its memory, one step
// done by hand on layer 0, the generation loop with the cache written out here (prefill, one
// lm_step per token, the re-fill past T_max; the same tokens as attn::lm_generate_cached) with
// its text streamed as it comes, the FLOPs per token as the context grows, and what happens past
// T_max. The math lives in common/src/model/kvcache.cpp (and model.cpp, sample.cpp).

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/ops/attention.hpp"
#include "attn/model/block.hpp"
#include "attn/io/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/model/kvcache.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/linear.hpp"
#include "attn/model/model.hpp"
#include "attn/io/narrate.hpp"
#include "attn/io/npy.hpp"
#include "attn/io/print.hpp"
#include "attn/core/random.hpp"
#include "attn/model/sample.hpp"
#include "attn/io/text.hpp"
#include "exercises.hpp"
#include "setup.hpp"

namespace {

using namespace ch10;
using attn::chars_of;
using attn::flag_given;
using attn::grouped;
using attn::num;
using attn::section;

namespace fs = std::filesystem;
using attn::Matrix;
using attn::Tensor;
using Clock = std::chrono::steady_clock;

// Bounds of the size flags (stated in --help).
constexpr std::size_t kMaxTokens = 100000;
constexpr std::size_t kMaxLayers = 64;
constexpr std::size_t kMaxHeads = 64;

// ---- The functions the walkthrough calls: attn::kv_append, attn::attend_cache and the loop
// written out below (generate_with_cache, equal to attn::lm_generate_cached), or, with --mine,
// the learner's ex10:: exercises.
struct Kernels {
  void (*append)(Tensor<4>&, const Matrix&, std::size_t);                            // ex10.1
  Matrix (*attend)(const Matrix&, const Tensor<4>&, const Tensor<4>&, std::size_t);  // ex10.2
  std::vector<int> (*generate)(const attn::LmWeights&, const attn::LmConfig&, std::span<const int>,
                               const attn::GenerateOptions&, attn::Rng&,
                               const attn::TokenCallback&);  // ex10.3
};

// ---- Narration helpers (the rest are attn::num, grouped, max_abs_diff from attn/io/narrate.hpp).

// A difference of float rounding is printed as "this small", not its digits: whether it is 0 or
// 1e-7 depends on the machine's BLAS kernels (a GEMM of 1 row may round differently from the
// same row inside a GEMM of 43), so attn::difference_text's "0 (bitwise identical)" would make
// the page differ from machine to machine.
std::string rounding_text(double d) {
  return d < 1e-5 ? "below 1e-5 (float rounding)" : fmt::format("{:.6f}", d);
}

// ---- The walkthrough.

// 1. What a new token needs, and the cache that keeps it.
void show_cache(const Model& m) {
  const attn::LmConfig& c = m.config;
  const std::size_t L = c.n_layers, H = c.n_heads, C = c.n_embd, T_max = c.block_size;
  section(1, "What a new token needs");
  fmt::print(
      "lm_generate (chapter 07) runs the whole model over the whole context for every new\n"
      "token, and keeps only the last row of logits. But at layer l, the key and the value of\n"
      "position t depend only on tokens 0..t: causal attention never lets them see the future.\n"
      "Once computed they never change while the text grows. A KV cache keeps them; a step then\n"
      "computes one row per layer (the new token's q, k, v, its attention, its FFN) and attends\n"
      "its single query over the cached keys: no mask, the cache holds only the past.\n");
  section(2, "The cache and its memory");
  const attn::KvCache cache = attn::kv_cache_init(c, 1);
  const std::size_t formula = attn::kv_cache_floats(c, 1);
  const std::size_t held = attn::kv_cache_held_floats(cache);
  fmt::print("Per layer, keys and values of shape (B, H, T_max, hs) = (1, {}, {}, {}).\n", H, T_max,
             C / H);
  fmt::print("By the formula 2 * L * B * T_max * C = 2 * {} * 1 * {} * {} = {} floats = {} KiB.\n",
             L, T_max, C, grouped(static_cast<double>(formula)),
             num(static_cast<double>(formula * sizeof(float)) / 1024.0, 1));
  fmt::print("Held by the {} tensors of attn::kv_cache_init: {} floats ({}).\n", 2 * L,
             grouped(static_cast<double>(held)), held == formula ? "the same" : "DIFFERENT");
  attn::claim(held == formula, "the cache holds the floats of the formula 2 L B T_max C");
  // Every tensor of the model: embeddings, blocks, ln_f and, when it is untied, the head.
  const std::size_t params = attn::lm_parameter_count(m.weights);
  fmt::print(
      "The model itself has {} parameters: the cache of one sequence is {}x its size.\n"
      "Its buffers for a step or a prefill take {} floats more, allocated once: generating\n"
      "allocates nothing per token (tests/common/test_kvcache.cpp counts it).\n",
      grouped(static_cast<double>(params)),
      num(static_cast<double>(formula) / static_cast<double>(params), 2),
      grouped(static_cast<double>(attn::kv_cache_workspace_floats(cache))));
}

// 3. One step by hand on layer 0: append (ex10.1), attend (ex10.2), compared with the full
// causal attention over the whole sequence; then the library's step against lm_forward.
struct StepByHand {
  std::size_t n = 0;             // the new token's position (0: T_max = 1, no room; skipped)
  std::size_t cache_length = 0;  // after the prefill
  int next = 0;                  // the new token: the most likely one
  double d_attn = 0.0;           // append + attend + w_o against row n of mha_forward
  double d_key = 0.0;            // lm_step's cached head-0 key against the one by hand
  double d_logits = 0.0;         // lm_step's logits against the last row of lm_forward
};

StepByHand step_by_hand(const Kernels& k, const Model& m, std::span<const int> prompt) {
  const attn::LmConfig& c = m.config;
  const std::size_t C = c.n_embd, H = c.n_heads, V = c.vocab_size;
  StepByHand r;
  // The prompt's last (up to) T_max - 1 tokens, leaving room for one more position.
  const std::size_t n = r.n = std::min(prompt.size(), c.block_size - 1);
  if (n == 0) return r;
  const std::span<const int> context = prompt.last(n);
  attn::KvCache cache = attn::kv_cache_init(c, 1);
  const Matrix& first = attn::lm_prefill(cache, context, m.weights, c);
  r.cache_length = cache.length;
  // The new token: the most likely one (a fixed choice: the text does not depend on sampling).
  const auto row = std::span<const float>(first.data(), V);
  const int next = r.next =
      static_cast<int>(std::max_element(row.begin(), row.end()) - row.begin());

  // a. Its layer-0 input and projections: x = wte[next] + wpe[n], h = ln1(x), q, k, v = h @ W.
  const attn::BlockWeights& b0 = m.weights.blocks[0];
  Matrix x(std::array<std::size_t, 2>{1, C});
  for (std::size_t j = 0; j < C; ++j)
    x(0, j) = m.weights.wte(static_cast<std::size_t>(next), j) + m.weights.wpe(n, j);
  const Matrix h = attn::layer_norm<2>(x, b0.ln1_gamma, b0.ln1_beta, 1e-5f);  // (1, C)
  const Matrix q = attn::matmul_blas(h, b0.attn.w_q);                         // (1, C)
  const Matrix key = attn::matmul_blas(h, b0.attn.w_k);                       // (1, C)
  const Matrix value = attn::matmul_blas(h, b0.attn.w_v);                     // (1, C)
  // b. Append to copies of the layer-0 cache (ex10.1), attend over n + 1 positions (ex10.2).
  Tensor<4> keys = cache.keys[0];
  Tensor<4> values = cache.values[0];
  k.append(keys, key, n);
  k.append(values, value, n);
  const Matrix out = k.attend(q, keys, values, n + 1);           // (1, C)
  const Matrix projected = attn::matmul_blas(out, b0.attn.w_o);  // (1, C)
  // c. The same row from the full causal attention over all n + 1 positions.
  std::vector<int> all(context.begin(), context.end());
  all.push_back(next);
  Tensor<3> xs(std::array<std::size_t, 3>{1, n + 1, C});
  for (std::size_t t = 0; t <= n; ++t)
    for (std::size_t j = 0; j < C; ++j)
      xs(0, t, j) = m.weights.wte(static_cast<std::size_t>(all[t]), j) + m.weights.wpe(t, j);
  const Tensor<3> hs = attn::layer_norm<3>(xs, b0.ln1_gamma, b0.ln1_beta, 1e-5f);
  const attn::MhaResult full = attn::mha_forward(hs, b0.attn, H, /*causal=*/true, false);
  r.d_attn = attn::max_abs_diff(std::span<const float>(projected.data(), C),
                                std::span<const float>(full.out.data() + n * C, C));
  // d. The library's whole step against lm_forward's last row.
  const Matrix& stepped = attn::lm_step(cache, std::span<const int>(&next, 1), m.weights, c);
  xt::xtensor<int, 2> tokens(std::array<std::size_t, 2>{1, n + 1});
  std::copy(all.begin(), all.end(), tokens.data());
  const Tensor<3> logits = attn::lm_forward(tokens, m.weights, c);
  r.d_logits = attn::max_abs_diff(std::span<const float>(stepped.data(), V),
                                  std::span<const float>(logits.data() + n * V, V));
  r.d_key = attn::max_abs_diff(std::span<const float>(key.data(), C / H),
                               std::span<const float>(cache.keys[0].data() + n * (C / H), C / H));
  return r;
}

void show_step(const StepByHand& r, const Model& m, std::size_t prompt_size) {
  section(3, "One step by hand, layer 0");
  const std::size_t n = r.n;
  if (n == 0) {
    fmt::print("T_max = 1: there is no room for a step after the prompt; skipped.\n");
    return;
  }
  const std::string next_name = char_name(m.vocab.char_of(r.next));
  if (n == prompt_size) {
    fmt::print(
        "lm_prefill runs the {} prompt tokens in one batched pass: cache.length = {}. The most\n"
        "likely next character is {} (id {}); it goes to position n = {}.\n",
        n, r.cache_length, next_name, r.next, n);
  } else {  // a prompt of T_max tokens or more: its last T_max - 1 leave room for one more
    fmt::print(
        "lm_prefill runs the last {} of the {} prompt tokens (T_max - 1) in one batched pass:\n"
        "cache.length = {}. The most likely next character is {} (id {}); it goes to position\n"
        "n = {}.\n",
        n, prompt_size, r.cache_length, next_name, r.next, n);
  }
  fmt::print(
      "  k, v, q = ln1(wte[id] + wpe[{}]) @ w_k, w_v, w_q: (1, C) each, C = {}\n"
      "  append k and v at position {} of the layer-0 cache (ex10.1)\n"
      "  attend: {} heads, one query each, over {} cached keys (ex10.2)\n"
      "  @ w_o, against row {} of mha_forward over all {} tokens: max |difference| {}\n",
      n, m.config.n_embd, n, m.config.n_heads, n + 1, n, n + 1, rounding_text(r.d_attn));
  fmt::print("  {}: one new row of work gives the attention of the whole sequence.\n",
             r.d_attn < 1e-4 ? "the same up to float rounding" : "DIFFERENT");
  attn::claim(r.d_attn < 1e-4,
              "append and attend give the row of the full causal attention, up to rounding");
  fmt::print(
      "attn::lm_step does this for every layer, then ln_f and the {} of one row:\n"
      "  its head-0 key at position {} against the one above: max |difference| {}\n"
      "  its logits (1, {}) against the last row of lm_forward over {} tokens: max |difference| "
      "{}\n",
      m.config.tied_head ? "tied projection" : "output head", n, rounding_text(r.d_key),
      m.config.vocab_size, n + 1, rounding_text(r.d_logits));
  attn::claim(r.d_key < 1e-4, "lm_step caches the key computed by hand");
  attn::claim(r.d_logits < 1e-4, "lm_step's logits are the last row of lm_forward, up to rounding");
}

// 4. The generation loop with the cache, written out: what attn::lm_generate_cached does (and
// ex10.3 asks for). Same signature as the library's, so --mine can put the learner's in its place.
std::vector<int> generate_with_cache(const attn::LmWeights& w, const attn::LmConfig& c,
                                     std::span<const int> prompt, const attn::GenerateOptions& g,
                                     attn::Rng& rng, const attn::TokenCallback& on_token) {
  const std::size_t V = c.vocab_size, T_max = c.block_size;
  std::vector<int> context(prompt.begin(), prompt.end()), generated;
  // The last (at most) T_max tokens of the context: what lm_generate's forward would see.
  const auto window = [&] {
    return std::span<const int>(context).last(std::min(context.size(), T_max));
  };
  attn::KvCache cache = attn::kv_cache_init(c, 1);  // every buffer allocated once, here
  attn::TokenSampler sampler(V);
  const attn::SamplingOptions sampling{g.temperature, g.top_k, g.top_p, g.greedy};
  // 1. Prefill: the prompt in one batched pass; its last row of logits predicts the next token.
  const Matrix* logits = &attn::lm_prefill(cache, window(), w, c);  // (1, V)
  for (std::size_t i = 0; i < g.max_new_tokens; ++i) {
    // 2. Draw the next token from those logits, exactly as lm_generate does.
    const int next = sampler.next(std::span<const float>(logits->data(), V), sampling, rng);
    context.push_back(next);
    generated.push_back(next);
    if (on_token) on_token(next);
    if (i + 1 == g.max_new_tokens) break;
    // 3. Its logits: one lm_step (one new row per layer, its keys and values appended) while
    //    positions are left. Past T_max every token moves one position down and every cached key
    //    is stale: re-fill the cache from the cropped context (section 6).
    logits = cache.length < T_max ? &attn::lm_step(cache, std::span<const int>(&next, 1), w, c)
                                  : &attn::lm_prefill(cache, window(), w, c);
  }
  return generated;
}

// Streams one character to stdout as soon as it is chosen.
void put_char(const attn::Vocab& vocab, int id) {
  const std::string s = attn::encode_utf8(vocab.char_of(id));
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

// 4. Text streamed from the model, with the cache (or without, --no-cache), and the other way
// for comparison.
void show_generation(const Kernels& k, const Model& m, std::span<const int> prompt,
                     const attn::GenerateOptions& g, std::uint64_t seed, bool no_cache, bool mine) {
  const attn::LmConfig& c = m.config;
  section(4, "Generating, character by character");
  const std::string how =
      g.greedy
          ? "greedy (the most likely character every time)"
          : fmt::format(
                "temperature {}{}{}", attn::format_significant(g.temperature),
                g.top_k > 0 ? fmt::format(", top-k {}", g.top_k) : "",
                g.top_p < 1.0f ? fmt::format(", top-p {}", attn::format_significant(g.top_p)) : "");
  fmt::print("{} new characters, {}, seed {}, {}; prompt {}:\n\n", g.max_new_tokens, how, seed,
             no_cache ? "without the cache (--no-cache)" : "with the KV cache",
             attn::quote(chars_of(m.vocab, prompt)));
  std::fflush(stdout);
  std::fputs(attn::encode_utf8(chars_of(m.vocab, prompt)).c_str(), stdout);
  const attn::TokenCallback stream = [&m](int id) { put_char(m.vocab, id); };
  // The cached loop (the learner's with --mine), with the work it did counted by the library:
  // the prefills, steps and positions it pushed through the model.
  attn::KvWork work;
  const auto cached = [&](attn::Rng& r, const attn::TokenCallback& on_token) {
    const attn::KvWork before = attn::kv_work();
    std::vector<int> tokens = k.generate(m.weights, c, prompt, g, r, on_token);
    work = attn::kv_work() - before;
    return tokens;
  };
  attn::Rng rng(seed);
  const std::vector<int> shown =
      no_cache ? attn::lm_generate(m.weights, c, prompt, g, rng, stream) : cached(rng, stream);
  fmt::print("\n\n");
  // The other loop, silently, from the same seed.
  attn::Rng other_rng(seed);
  const std::vector<int> other =
      no_cache ? cached(other_rng, {}) : attn::lm_generate(m.weights, c, prompt, g, other_rng);
  std::size_t same = 0;
  while (same < shown.size() && same < other.size() && shown[same] == other[same]) ++same;
  const bool identical = same == shown.size() && other.size() == shown.size();
  fmt::print("The same seed {} the cache: {}.\n", no_cache ? "with" : "without",
             identical ? fmt::format("the same {} characters", shown.size())
                       : fmt::format("DIFFERENT from character {} on", same + 1));
  attn::claim(identical, "cached and uncached generation give the same characters");
  // The loop written out above against the library's, from the same seed.
  attn::Rng hand_rng(seed), library_rng(seed);
  const bool same_loop = generate_with_cache(m.weights, c, prompt, g, hand_rng, {}) ==
                         attn::lm_generate_cached(m.weights, c, prompt, g, library_rng, {});
  fmt::print(
      "The loop written out in generate_with_cache (main.cpp) against the library's\n"
      "attn::lm_generate_cached, same seed: {}.\n",
      same_loop ? "the same characters" : "DIFFERENT characters");
  attn::claim(same_loop, "the generation loop written out gives attn::lm_generate_cached's tokens");
  // How the cached loop should produce them: steps while positions are left, then re-fills...
  const std::size_t n0 = std::min(prompt.size(), c.block_size);
  std::size_t steps = 0, refills = 0, length = n0;
  std::uint64_t positions = n0;  // the prefill's
  for (std::size_t i = 1; i < g.max_new_tokens; ++i) {
    if (length < c.block_size) {
      ++steps;
      ++length;
      positions += 1;
    } else {
      ++refills;
      positions += c.block_size;
    }
  }
  // ...and how it did, counted while it ran.
  const bool as_planned =
      work.prefills == refills + 1 && work.steps == steps && work.positions == positions;
  if (!mine)
    attn::claim(as_planned, "the cached loop does 1 prefill, the steps and re-fills counted");
  fmt::print("With the cache: 1 prefill of the {}, then {} step{}{}.\n",
             n0 == prompt.size() ? fmt::format("{}-token prompt", n0)
                                 : fmt::format("prompt's last {} tokens (T_max)", n0),
             steps, steps == 1 ? "" : "s",
             refills > 0 ? fmt::format(" and {} re-fill{}\n(context past T_max = {}, section 6)",
                                       refills, refills == 1 ? "" : "s", c.block_size)
                         : "");
  // What those numbers say about the cache, chosen by them.
  if (g.max_new_tokens <= 1) {
    fmt::print("One character needs only the prefill: no step was taken.\n");
  } else if (steps == 0) {
    fmt::print(
        "The prompt filled all T_max = {} positions, so the cache never stepped: every token "
        "was a\nre-fill. A prompt shorter than T_max leaves it room.\n",
        c.block_size);
    attn::claim(refills == g.max_new_tokens - 1, "with no room left every token is a re-fill");
  } else if (refills == 0) {
    fmt::print(
        "Every token after the first was one cheap step: the text never outgrew T_max = {}.\n",
        c.block_size);
  } else {
    fmt::print(
        "The cache stepped while the context fit in T_max = {} and re-filled after:\n{}.\n"
        "A longer T_max (chapter 09's --block-size) keeps it stepping longer.\n",
        c.block_size,
        steps >= refills
            ? fmt::format("most tokens after the first ({} of {}) were cheap steps", steps,
                          steps + refills)
            : fmt::format("{} of the {} tokens after the first were cheap steps, {} re-fills",
                          steps, steps + refills, refills));
  }
  attn::claim(steps + refills + 1 == std::max<std::size_t>(g.max_new_tokens, 1),
              "one prefill, then a step or a re-fill for every further token");
  attn::claim(steps == std::min(g.max_new_tokens - 1, c.block_size - n0),
              "the cache steps until the context reaches T_max");
  if (mine) {
    // The learner's loop, counted: the same tokens can hide a loop that never uses the cache.
    fmt::print(
        "Your generate_cached (ex10.3), counted as it ran: {} prefills, {} steps, {} "
        "positions through the model for {} characters; {}.\n",
        work.prefills, work.steps, work.positions, g.max_new_tokens,
        as_planned ? "the cache used as above"
        : work.positions > positions
            ? fmt::format("the cache needs {}: your loop recomputes what the cache holds",
                          positions)
            : fmt::format("the loop above needs {}", positions));
  }
}

// 5. FLOPs per token as the context grows (and µs per token with --timing).
void show_cost(const Model& m, std::uint64_t seed, bool timing) {
  const attn::LmConfig& c = m.config;
  const std::size_t T_max = c.block_size;
  section(5, "Cost per token as the text grows");
  fmt::print(
      "FLOPs to produce one token (GEMMs only, 2 M K N per product, B = 1), with a context of n\n"
      "tokens:\n"
      "  without the cache: a forward over n positions   L (2n (4C^2 + 2CF) + 4n^2 C) + 2nCV\n"
      "  with the cache: one step at position n - 1      L (2 (4C^2 + 2CF) + 4nC) + 2CV\n\n");
  fmt::print("  {:>8}  {:>14}  {:>14}  {:>8}\n", "n", "no cache", "cached", "ratio");
  std::vector<std::size_t> lengths;
  for (std::size_t n = 1; n < T_max; n *= 2) lengths.push_back(n);
  lengths.push_back(T_max);
  for (const std::size_t n : lengths) {
    const double full = attn::lm_token_flops_uncached(c, n);
    const double step = attn::lm_token_flops_cached(c, n - 1);
    fmt::print("  {:>8}  {:>14}  {:>14}  {:>8}\n", n, grouped(full), grouped(step),
               num(full / step, 1));
  }
  const double refill = attn::lm_token_flops_refill(c);
  fmt::print("  {:>8}  {:>14}  {:>14}  {:>8}   (past T_max: a re-fill, section 6)\n",
             fmt::format("> {}", T_max), grouped(attn::lm_token_flops_uncached(c, T_max)),
             grouped(refill), num(attn::lm_token_flops_uncached(c, T_max) / refill, 2));
  const double uncached_growth =
      attn::lm_token_flops_uncached(c, T_max) / attn::lm_token_flops_uncached(c, 1);
  const double cached_growth =
      attn::lm_token_flops_cached(c, T_max - 1) / attn::lm_token_flops_cached(c, 0);
  if (T_max == 1) {
    fmt::print("With T_max = 1 the context never grows: a step is the whole forward.\n");
  } else {
    // "Flat": the 4nC of attention adds less than half of a step's fixed cost at n = T_max.
    fmt::print("Without the cache the cost grows with n (x{} from n = 1 to {}); with it, {}\n",
               num(uncached_growth, 1), T_max, cached_growth < 1.5 ? "it is flat" : "only");
    fmt::print("{} (x{}).\n",
               cached_growth < 1.5 ? "but for the 4nC of attention" : "the 4nC of attention grows",
               num(cached_growth, 2));
    attn::claim(cached_growth < uncached_growth,
                "the cost per token grows slower with the cache than without");
  }
  // Every row of the table: the cached step is never dearer than the forward it replaces, and
  // cheaper as soon as there is a past to reuse.
  bool cheaper = true;
  for (const std::size_t n : lengths)
    cheaper =
        cheaper &&
        (n == 1 ? attn::lm_token_flops_cached(c, 0) <= attn::lm_token_flops_uncached(c, 1)
                : attn::lm_token_flops_cached(c, n - 1) < attn::lm_token_flops_uncached(c, n));
  attn::claim(cheaper, "the cache pays off while the context fits");
  if (!timing) return;

  // --timing: the time of every token of one generation from a 1-token prompt, averaged over
  // buckets of context length, both ways.
  const std::size_t n_new = T_max + T_max / 2;
  std::vector<double> cached_us, plain_us;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<double>& out = pass == 0 ? cached_us : plain_us;
    attn::GenerateOptions g;
    g.max_new_tokens = n_new;
    attn::Rng rng(seed);
    auto last = Clock::now();
    const attn::TokenCallback tick = [&](int) {
      const auto now = Clock::now();
      out.push_back(std::chrono::duration<double, std::micro>(now - last).count());
      last = now;
    };
    const std::vector<int> prompt = {0};
    last = Clock::now();
    if (pass == 0) {
      (void)attn::lm_generate_cached(m.weights, c, prompt, g, rng, tick);
    } else {
      (void)attn::lm_generate(m.weights, c, prompt, g, rng, tick);
    }
  }
  fmt::print("\n--timing: microseconds per token, one generation of {} tokens from 1 token:\n",
             n_new);

  const std::size_t bucket = std::max<std::size_t>(1, T_max / 4);
  for (std::size_t begin = 0; begin < n_new; begin += bucket) {
    const std::size_t end = std::min(n_new, begin + bucket);
    double a = 0.0, b = 0.0;
    for (std::size_t i = begin; i < end; ++i) {
      a += plain_us[i];
      b += cached_us[i];
    }
    const double count = static_cast<double>(end - begin);
    fmt::print("  context {:>7}: no cache {} us, cached {} us\n",
               fmt::format("{}-{}", begin + 1, end), num(a / count, 1), num(b / count, 1));
  }
}

// 6. Past T_max.
void show_past_t_max(const Model& m) {
  const std::size_t T_max = m.config.block_size;
  section(6, "Past T_max");
  const double refill =
      attn::lm_token_flops_refill(m.config) / attn::lm_token_flops_uncached(m.config, T_max);
  // "About the cost of the forward": at least half of it (with one or two layers the last
  // layer's shortcut saves more than that).
  const bool about = refill >= 0.5;
  attn::claim(refill <= 1.0, "a re-fill costs no more than the forward it replaces");
  fmt::print(
      "The position table has T_max = {} rows, so lm_generate crops the context to its last\n"
      "{} tokens. Then every token moves one position down, and every cached key and value is\n"
      "stale: they were computed with the old position added to the token. To give the same\n"
      "tokens, lm_generate_cached re-fills its cache from the cropped context for every new\n"
      "token: a prefill of {} positions, {} ({} of its\n"
      "FLOPs: the last layer needs only the keys and values of the first {}). The cache pays off\n"
      "while the context fits. Relative positions (RoPE, ALiBi) alone would not let it drop\n"
      "the oldest position exactly: from layer 1 up, every cached key and value was computed\n"
      "from states that attended to the dropped token. Only a model trained with\n"
      "sliding-window attention (Mistral's rolling buffer) never looked past its window.\n",
      T_max, T_max, T_max,
      about ? "about the cost of the forward it replaces" : "less than the forward it replaces",
      num(refill, 2), T_max - 1);
}

Kernels reference_kernels() {
  return {&attn::kv_append, &attn::attend_cache, &generate_with_cache};
}

Kernels learner_kernels() {
  return {&ex10::kv_append, &ex10::attend_cache, &ex10::generate_cached};
}

// A model with chapter 11's parts (RoPE, grouped-query attention, a window, RMSNorm, SwiGLU, no
// biases): sections 1-6 take chapter 07's cache apart, which this model does not use; it
// generates through attn::lm_generate_cached's rolling cache instead (attn/model/kvcache.hpp).
void show_rolling(const Model& m, std::span<const int> prompt, const attn::GenerateOptions& g,
                  std::uint64_t seed, bool timing) {
  const attn::LmConfig& c = m.config;
  section(1, "The rolling cache of a model with parts");
  const std::size_t kv = attn::lm_kv_heads(c), hs = c.n_embd / c.n_heads;
  const std::size_t capacity = c.window != 0 ? c.window : c.block_size;
  const bool endless = c.positions == attn::Positions::rope && c.window != 0;
  fmt::print(
      "This model has {} positions, {} K/V head{} for {} query heads{}.\n"
      "Per layer its cache keeps (B, KV, {}, hs) = (1, {}, {}, {}) keys and as many values,\n"
      "written round-robin: {} floats in all ({}).\n",
      attn::positions_name(c.positions), kv, kv == 1 ? "" : "s", c.n_heads,
      c.window != 0 ? fmt::format(" and a window of {}", c.window) : std::string(),
      c.window != 0 ? "W" : "T_max", kv, capacity, hs,
      attn::grouped(attn::rolling_cache_floats(c, 1)),
      attn::bytes_text(attn::rolling_cache_floats(c, 1) * sizeof(float)));
  fmt::print("{}\n",
             endless ? "RoPE and a window: a token sees only the last W keys of each layer and "
                       "no position table\nlimits it, so generation goes on past T_max at O(W) "
                       "per token, never re-filled."
                     : "Past T_max the context is cropped, which moves every token: the cache is "
                       "re-filled, like\nchapter 07's.");
  section(2, "Generating, character by character");
  fmt::print("{} new characters, seed {}; prompt {}:\n\n", g.max_new_tokens, seed,
             attn::quote(chars_of(m.vocab, prompt)));
  std::fflush(stdout);
  std::fputs(attn::encode_utf8(chars_of(m.vocab, prompt)).c_str(), stdout);
  const attn::TokenCallback stream = [&m](int id) { put_char(m.vocab, id); };
  attn::Rng rng(seed), other_rng(seed);
  const auto t0 = Clock::now();
  const std::vector<int> shown = attn::lm_generate_cached(m.weights, c, prompt, g, rng, stream);
  const std::chrono::duration<double> cached_time = Clock::now() - t0;
  fmt::print("\n\n");
  const auto t1 = Clock::now();
  const std::vector<int> other = attn::lm_generate(m.weights, c, prompt, g, other_rng);
  const std::chrono::duration<double> full_time = Clock::now() - t1;
  const bool identical = shown == other;
  fmt::print("The same seed without the cache: {}.\n",
             identical ? fmt::format("the same {} characters", shown.size())
                       : std::string("DIFFERENT characters"));
  attn::claim(identical, "the rolling cache and lm_generate give the same characters");
  if (timing) {
    fmt::print(
        "(the rolling cache: {} ms; lm_generate, a forward over the context per token: {} ms)\n",
        num(cached_time.count() * 1000.0, 1), num(full_time.count() * 1000.0, 1));
  }
}

void run(const attn::CommonOptions& common, const Options& o) {
  const auto t_start = Clock::now();
  const Kernels k = common.mine ? learner_kernels() : reference_kernels();
  if (o.prompt_given && o.prompt.empty()) throw attn::UsageError("--prompt must not be empty");
  if (!(o.top_p <= 1.0f)) {
    throw attn::UsageError(fmt::format("--top-p must be in (0, 1], got {}", o.top_p));
  }

  const attn::Corpus corpus = attn::load_corpus(common.data);
  const attn::Vocab corpus_vocab = attn::Vocab::from_text(corpus.text);
  const Model m = load_model(o, corpus_vocab);
  const std::size_t top_k = parse_top_k(o, m.config.vocab_size);
  const std::vector<int> prompt = prompt_ids(o, corpus, m.vocab, m.config.block_size);

  fmt::print("Chapter 10: generating fast with a KV cache\n");
  // --mine: the learner's nucleus cut (ex10.4) in every sampler, the library's loops included.
  const bool nucleus = o.top_p < 1.0f && !o.greedy;
  if (common.mine) attn::set_top_p_filter(&ex10::top_p_filter);
  fmt::print("seed {}, corpus {}, functions: {}\n", common.seed, corpus.origin,
             !common.mine ? "the reference (attn::)"
             : nucleus    ? "yours (ex10.1 to ex10.4, --mine)"
                          : "yours (ex10.1 to ex10.3, --mine; ex10.4 runs with --top-p below 1)");
  fmt::print("model: {}\n", m.origin);
  fmt::print("V {}, T_max {}, C {}, H {}, L {}\n", m.config.vocab_size, m.config.block_size,
             m.config.n_embd, m.config.n_heads, m.config.n_layers);

  attn::GenerateOptions g;
  g.max_new_tokens = o.tokens;
  g.temperature = o.temperature;
  g.top_k = top_k;
  g.top_p = o.top_p;
  g.greedy = o.greedy;
  if (attn::uses_rolling_cache(m.config))
    return show_rolling(m, prompt, g, common.seed, common.timing);
  show_cache(m);
  show_step(step_by_hand(k, m, prompt), m, prompt.size());
  const auto t_gen = Clock::now();
  show_generation(k, m, prompt, g, common.seed, o.no_cache, common.mine);
  const std::chrono::duration<double> gen_time = Clock::now() - t_gen;
  show_cost(m, common.seed, common.timing);
  show_past_t_max(m);
  fmt::print(
      "\nNext: docs/performance.md times this loop against PyTorch's, with and without a cache.\n");
  if (common.timing) {
    const std::chrono::duration<double> total = Clock::now() - t_start;
    fmt::print("(section 4, both loops: {} ms; whole run: {} ms)\n",
               num(gen_time.count() * 1000.0, 1), num(total.count() * 1000.0, 1));
  }
}

}  // namespace

int main(int argc, char** argv) {
  attn::Cli cli(
      "10_generation",
      "Chapter 10: generating fast with a KV cache. Keep every layer's keys and values, "
      "compute one new row per token, stream the text as it comes; the same characters "
      "as without the cache, and the cost per token flat instead of growing. Without "
      "--weights the model is the one the repository ships (data/sonnets-model), trained by "
      "chapter 09 on the shipped sonnets.");
  Options o;
  cli.add_string("--weights", o.weights_dir,
                 "DIR: a model folder of .npy files (07_causal_lm --export, chapter 09's run "
                 "folders and checkpoints); its model.txt gives the architecture and its "
                 "vocab.txt, if any, the vocabulary");
  cli.add_string("--prompt", o.prompt,
                 "text to continue (default: the first line of the corpus with at least 30 "
                 "characters, cut to half the model's T_max so the cache has room to step)");
  cli.add_size("--tokens", o.tokens, "N, characters to generate", 1, kMaxTokens);
  cli.add_float("--temperature", o.temperature, "sampling temperature (> 0)", 0.0f);
  cli.add_string("--top-k", o.top_k_text,
                 "K: sample only among the K most likely characters, 1 <= K <= V (default: all)");
  cli.add_float("--top-p", o.top_p,
                "P: sample only among the fewest most likely characters whose probabilities add "
                "up to P, 0 < P <= 1 (default 1: all)",
                0.0f);
  cli.add_flag("--greedy", o.greedy, "always the most likely character (no sampling)");
  cli.add_flag("--no-cache", o.no_cache,
               "stream the text from lm_generate (a full forward per token) instead");
  cli.add_size("--n-layers", o.n_layers,
               "L, transformer blocks of the model (default: its model.txt's; a value that "
               "contradicts the folder is refused)",
               1, kMaxLayers);
  cli.add_size("--n-heads", o.n_heads,
               "H, attention heads, must divide C (default: its model.txt's; needed only for a "
               "folder without one)",
               1, kMaxHeads);
  cli.add_alias("--layers", "--n-layers");  // the old spellings, before chapters 07-10 shared one
  cli.add_alias("--heads", "--n-heads");
  o.prompt_given = flag_given(argc, argv, "--prompt");
  o.top_k_given = flag_given(argc, argv, "--top-k");
  return cli.run(argc, argv, [&](const attn::CommonOptions& common) {
    // The folder gives the architecture; a flag typed (in either spelling) must agree with it.
    const auto typed = [&](std::string_view a, std::string_view b, std::size_t value) {
      return flag_given(argc, argv, a) || flag_given(argc, argv, b)
                 ? std::optional<std::size_t>(value)
                 : std::nullopt;
    };
    o.typed.n_layers = typed("--n-layers", "--layers", o.n_layers);
    o.typed.n_heads = typed("--n-heads", "--heads", o.n_heads);
    run(common, o);
  });
}
