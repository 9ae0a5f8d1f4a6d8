// chapters/10_generation/show.cpp: how chapter 10 prints what main.cpp computes, section by
// section; every sentence that depends on a number is chosen by it (attn::claim).
#include "show.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "attn/core/limits.hpp"
#include "attn/io/text.hpp"
#include "attn/term/narrate.hpp"
#include "attn/model/sample.hpp"

namespace ch10 {

using attn::grouped;
using attn::num;
using attn::section;
using Clock = std::chrono::steady_clock;

void show_header(std::uint64_t seed, const std::string& corpus_origin, const Model& m, bool mine,
                 bool nucleus) {
  fmt::print("Chapter 10: generating fast with a KV cache\n");
  fmt::print("seed {}, corpus {}, functions: {}\n", seed, corpus_origin,
             !mine     ? "the reference (attn::)"
             : nucleus ? "yours (ex10.1 to ex10.4, --mine)"
                       : "yours (ex10.1 to ex10.3, --mine; ex10.4 runs with --top-p below 1)");
  fmt::print("model: {}\n", m.origin);
  fmt::print("V {}, T_max {}, C {}, H {}, L {}\n", m.config.vocab_size, m.config.block_size,
             m.config.n_embd, m.config.n_heads, m.config.n_layers);
}

void put_char(const attn::Vocab& vocab, int id) {
  const std::string s = attn::encode_utf8(vocab.char_of(id));
  attn::print(s);
  std::fflush(stdout);
}

void show_cache(const Model& m) {
  const attn::ModelSpec& c = m.config;
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
      m.config.ablations.tied_head ? "tied projection" : "output head", n, rounding_text(r.d_key),
      m.config.vocab_size, n + 1, rounding_text(r.d_logits));
  attn::claim(r.d_key < 1e-4, "lm_step caches the key computed by hand");
  attn::claim(r.d_logits < 1e-4, "lm_step's logits are the last row of lm_forward, up to rounding");
}

void show_generation_start(const attn::Vocab& vocab, std::span<const int> prompt,
                           const attn::GenerateOptions& g, std::uint64_t seed, bool no_cache) {
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
             attn::quote(attn::chars_of(vocab, prompt)));
  std::fflush(stdout);
  attn::print(attn::encode_utf8(attn::chars_of(vocab, prompt)));
}

namespace {
// The uncached run stopped at its budget (setup.hpp, kMaxCheckFlops).
void show_check_budget(std::size_t checked, std::size_t shown) {
  fmt::print(
      "(The first {} of the {} characters: the run without the cache does a forward over the\n"
      "whole context per character, so the check stops at its budget of {:.0e} FLOPs.)\n",
      checked, shown, kMaxCheckFlops);
}
}  // namespace

void show_generation(const GenerationRun& r, const attn::ModelSpec& c,
                     const attn::GenerateOptions& g, bool no_cache, bool mine) {
  fmt::print("The same seed {} the cache: {}.\n", no_cache ? "with" : "without",
             r.identical ? fmt::format("the same {} characters", r.checked)
                         : fmt::format("DIFFERENT from character {} on", r.same + 1));
  if (r.checked < r.shown) show_check_budget(r.checked, r.shown);
  attn::claim(r.identical, "cached and uncached generation give the same characters");
  fmt::print(
      "The loop written out in generate_with_cache (main.cpp) against the library's\n"
      "attn::lm_generate_cached, same seed: {}.\n",
      r.same_loop ? "the same characters" : "DIFFERENT characters");
  attn::claim(r.same_loop,
              "the generation loop written out gives attn::lm_generate_cached's tokens");
  if (g.top_p < 1.0f && !g.greedy && !r.kept.empty()) {
    // How many characters the nucleus kept, draw by draw: few where the model is sure.
    const auto [lo, hi] = std::minmax_element(r.kept.begin(), r.kept.end());
    double mean = 0.0;
    for (const std::size_t n : r.kept) mean += static_cast<double>(n);
    mean /= static_cast<double>(r.kept.size());
    const auto alone = std::count(r.kept.begin(), r.kept.end(), std::size_t{1});
    attn::claim(*lo >= 1 && *hi <= c.vocab_size, "the nucleus keeps between 1 and V ids");
    fmt::print(
        "The nucleus (top-p {}{}) kept {} to {} of the {} characters per draw, {} on average;\n"
        "a single character in {} of the {} draws, where the model was that sure.\n",
        attn::format_significant(g.top_p),
        g.top_k > 0 ? fmt::format(", after top-k {}", g.top_k) : std::string(), *lo, *hi,
        c.vocab_size, num(mean, 1), alone, r.kept.size());
    // Draw by draw, in the order of the characters written (the first kShown of them).
    constexpr std::size_t kShown = 40;
    const std::size_t n = std::min(kShown, r.kept.size());
    fmt::print("Kept, draw by draw ({}, one draw per character written):\n",
               n < r.kept.size() ? fmt::format("the first {} of {}", n, r.kept.size())
                                 : fmt::format("all {}", n));
    for (std::size_t i = 0; i < n; ++i) {  // 20 to a line
      fmt::print("{}{}{}", i % 20 == 0 ? "  " : " ", r.kept[i],
                 (i + 1) % 20 == 0 || i + 1 == n ? "\n" : "");
    }
  }
  // How the cached loop should produce them, and how it did, counted while it ran.
  const std::size_t n0 = r.n0, steps = r.steps, refills = r.refills;
  const std::uint64_t positions = r.positions;
  const attn::KvWork& work = r.work;
  const bool as_planned =
      work.prefills == refills + 1 && work.steps == steps && work.positions == positions;
  if (!mine)
    attn::claim(as_planned, "the cached loop does 1 prefill, the steps and re-fills counted");
  fmt::print("With the cache: 1 prefill of the {}, then {} step{}{}.\n",
             n0 == r.prompt ? fmt::format("{}-token prompt", n0)
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
    // The learner's loop, counted by the cache it was handed: the same tokens can hide a loop
    // that never uses it.
    fmt::print(
        "Your generate_cached (ex10.3), counted as it ran: {} prefills, {} steps, {} "
        "positions through the model for {} characters; {}.\n",
        work.prefills, work.steps, work.positions, g.max_new_tokens,
        as_planned ? "the cache used as above"
        : work.positions == 0
            ? "the cache it was handed stayed idle: your loop uses a cache of its own, or none"
        : work.positions > positions
            ? fmt::format("the cache needs {}: your loop recomputes what the cache holds",
                          positions)
            : fmt::format("the loop above needs {}", positions));
  }
}

// 5. FLOPs per token as the context grows (and µs per token with --timing).
void show_cost(const Model& m, std::uint64_t seed, bool timing) {
  const attn::ModelSpec& c = m.config;
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

  // --timing: the time of every token of a generation from a 1-token prompt, both ways, each
  // token's fastest of kRuns generations (one run on a busy machine has spikes of several times
  // a token's cost), averaged over buckets of context length.
  constexpr int kRuns = 5;
  const std::size_t n_new = T_max + T_max / 2;
  std::vector<double> cached_us(n_new, 1e300), plain_us(n_new, 1e300);
  for (int run = 0; run < 2 * kRuns; ++run) {
    std::vector<double>& out = run % 2 == 0 ? cached_us : plain_us;
    attn::GenerateOptions g;
    g.max_new_tokens = n_new;
    attn::Rng rng(seed);
    std::size_t i = 0;
    auto last = Clock::now();
    const attn::TokenCallback tick = [&](int) {
      const auto now = Clock::now();
      out[i] = std::min(out[i], std::chrono::duration<double, std::micro>(now - last).count());
      ++i;
      last = now;
    };
    const std::vector<int> prompt = {0};
    last = Clock::now();
    if (run % 2 == 0) {
      (void)attn::lm_generate_cached(m.weights, c, prompt, g, rng, tick);
    } else {
      (void)attn::lm_generate(m.weights, c, prompt, g, rng, tick);
    }
  }
  fmt::print(
      "\n--timing: microseconds per token, generating {} tokens from 1 token (each token's\n"
      "fastest of {} generations each way):\n",
      n_new, kRuns);

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

void show_next(bool timing, double generation_ms, double total_ms) {
  fmt::print(
      "\nNext: docs/performance.md times this loop against PyTorch's, with and without a cache.\n");
  if (timing) {
    fmt::print("(section 4, both loops: {} ms; whole run: {} ms)\n", num(generation_ms, 1),
               num(total_ms, 1));
  }
}

void show_rolling_cache(const attn::ModelSpec& c) {
  section(1, "The rolling cache of a model with parts");
  const std::size_t kv = c.n_kv_heads, hs = c.n_embd / c.n_heads;
  const std::size_t capacity = c.window.value_or(c.block_size);
  const bool endless = !c.learned_positions() && c.window.has_value();
  fmt::print(
      "This model has {} positions, {} K/V head{} for {} query heads{}.\n"
      "Per layer its cache keeps (B, KV, {}, hs) = (1, {}, {}, {}) keys and as many values,\n"
      "written round-robin: {} floats in all ({}).\n",
      attn::positions_name(c.positions), kv, kv == 1 ? "" : "s", c.n_heads,
      c.window ? fmt::format(" and a window of {}", *c.window) : std::string(),
      c.window ? "W" : "T_max", kv, capacity, hs, attn::grouped(attn::rolling_cache_floats(c, 1)),
      attn::bytes_text(attn::rolling_cache_floats(c, 1) * sizeof(float)));
  fmt::print("{}\n",
             endless ? "RoPE and a window: a token sees only the last W keys of each layer and "
                       "no position table\nlimits it, so generation goes on past T_max at O(W) "
                       "per token, never re-filled."
                     : "Past T_max the context is cropped, which moves every token: the cache is "
                       "re-filled, like\nchapter 07's.");
}

void show_rolling_start(const attn::Vocab& vocab, std::span<const int> prompt,
                        const attn::GenerateOptions& g, std::uint64_t seed) {
  section(2, "Generating, character by character");
  fmt::print("{} new characters, seed {}; prompt {}:\n\n", g.max_new_tokens, seed,
             attn::quote(attn::chars_of(vocab, prompt)));
  std::fflush(stdout);
  attn::print(attn::encode_utf8(attn::chars_of(vocab, prompt)));
}

void show_rolling_result(const RollingRun& r, bool timing) {
  fmt::print("The same seed without the cache: {}.\n",
             r.identical ? fmt::format("the same {} characters", r.checked)
                         : std::string("DIFFERENT characters"));
  if (r.checked < r.shown) show_check_budget(r.checked, r.shown);
  attn::claim(r.identical, "the rolling cache and lm_generate give the same characters");
  if (timing) {
    fmt::print(
        "(the rolling cache: {} ms; lm_generate, a forward over the context per token: {} ms)\n",
        num(r.cached_ms, 1), num(r.full_ms, 1));
  }
}

}  // namespace ch10
