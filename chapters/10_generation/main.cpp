// chapters/10_generation/main.cpp: chapter 10, generating fast with a KV cache.
// The narrated walkthrough: what a new token really needs, the cache and its memory, one step
// done by hand on layer 0, the generation loop with the cache written out here (prefill, one
// lm_step per token, the re-fill past T_max; the same tokens as attn::lm_generate_cached) with
// its text streamed as it comes, the FLOPs per token as the context grows, and what happens past
// T_max. Each section is computed here and printed by show.cpp (the structs between them in
// show.hpp). The math lives in common/src/model/kvcache.cpp (and model.cpp, sample.cpp).

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

#include "attn/fast/gemm.hpp"
#include "attn/ops/attention.hpp"
#include "attn/model/block.hpp"
#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/model/kvcache.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/linear.hpp"
#include "attn/model/model.hpp"
#include "attn/term/narrate.hpp"
#include "attn/io/npy.hpp"
#include "attn/term/print.hpp"
#include "attn/core/random.hpp"
#include "attn/model/sample.hpp"
#include "attn/io/text.hpp"
#include "exercises.hpp"
#include "setup.hpp"
#include "show.hpp"

namespace {

using namespace ch10;
using attn::flag_given;

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
  std::vector<int> (*generate)(attn::KvCache&, const attn::LmWeights&, const attn::ModelSpec&,
                               std::span<const int>, const attn::GenerateOptions&, attn::Rng&,
                               const attn::TokenCallback&);  // ex10.3
};

// ---- The walkthrough.

// 3. One step by hand on layer 0: append (ex10.1), attend (ex10.2), compared with the full
// causal attention over the whole sequence; then the library's step against lm_forward.
StepByHand step_by_hand(const Kernels& k, const Model& m, std::span<const int> prompt) {
  const attn::ModelSpec& c = m.config;
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
  const Matrix q = attn::fast::matmul_blas(h, b0.attn.w_q);                   // (1, C)
  const Matrix key = attn::fast::matmul_blas(h, b0.attn.w_k);                 // (1, C)
  const Matrix value = attn::fast::matmul_blas(h, b0.attn.w_v);               // (1, C)
  // b. Append to copies of the layer-0 cache (ex10.1), attend over n + 1 positions (ex10.2).
  Tensor<4> keys = cache.keys[0];
  Tensor<4> values = cache.values[0];
  k.append(keys, key, n);
  k.append(values, value, n);
  const Matrix out = k.attend(q, keys, values, n + 1);                 // (1, C)
  const Matrix projected = attn::fast::matmul_blas(out, b0.attn.w_o);  // (1, C)
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

// 4. The generation loop with the cache, written out: what attn::lm_generate_cached does (and
// ex10.3 asks for). `kept`, when given, receives the number of ids each draw could pick (what
// top-k and top-p left).
std::vector<int> generate_with_cache(attn::KvCache& cache, const attn::LmWeights& w,
                                     const attn::ModelSpec& c, std::span<const int> prompt,
                                     const attn::GenerateOptions& g, attn::Rng& rng,
                                     const attn::TokenCallback& on_token,
                                     std::vector<std::size_t>* kept = nullptr) {
  const std::size_t V = c.vocab_size, T_max = c.block_size;
  std::vector<int> context(prompt.begin(), prompt.end()), generated;
  // The last (at most) T_max tokens of the context: what lm_generate's forward would see.
  const auto window = [&] {
    return std::span<const int>(context).last(std::min(context.size(), T_max));
  };
  attn::TokenSampler sampler(V);
  const attn::SamplingOptions sampling{g.temperature, g.top_k, g.top_p, g.greedy};
  // 1. Prefill: the prompt in one batched pass; its last row of logits predicts the next token.
  const Matrix* logits = &attn::lm_prefill(cache, window(), w, c);  // (1, V)
  for (std::size_t i = 0; i < g.max_new_tokens; ++i) {
    // 2. Draw the next token from those logits, exactly as lm_generate does.
    const int next = sampler.next(std::span<const float>(logits->data(), V), sampling, rng);
    if (kept != nullptr) {
      const std::span<const float> p = sampler.last_probs();  // 0 outside top-k and the nucleus
      kept->push_back(static_cast<std::size_t>(
          std::count_if(p.begin(), p.end(), [](float x) { return x > 0.0f; })));
    }
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

// 4. Text streamed from the model, with the cache (or without, --no-cache), and the other way
// for comparison; show_generation (show.cpp) says what the two loops did.
GenerationRun generate_text(const Kernels& k, const Model& m, std::span<const int> prompt,
                            const attn::GenerateOptions& g, std::uint64_t seed, bool no_cache,
                            std::size_t checked) {
  const attn::ModelSpec& c = m.config;
  show_generation_start(m.vocab, prompt, g, seed, no_cache);  // the heading, then the prompt
  const attn::TokenCallback stream = [&m](int id) { put_char(m.vocab, id); };
  // The cached loop (the learner's with --mine) through a cache made here, every buffer
  // allocated once; the cache counts the work done with it: the prefills, steps and positions
  // pushed through the model.
  attn::KvWork work;
  const auto cached = [&](attn::Rng& r, const attn::TokenCallback& on_token) {
    attn::KvCache cache = attn::kv_cache_init(c, 1);
    std::vector<int> tokens = k.generate(cache, m.weights, c, prompt, g, r, on_token);
    work = cache.work;
    return tokens;
  };
  attn::Rng rng(seed);
  const std::vector<int> shown =
      no_cache ? attn::lm_generate(m.weights, c, prompt, g, rng, stream) : cached(rng, stream);
  fmt::print("\n\n");  // the end of the streamed text
  // The other loop, silently, from the same seed: the uncached one for the first `checked`
  // characters (its draws are the same, one by one, so a prefix is a fair check).
  attn::Rng other_rng(seed);
  attn::GenerateOptions first = g;
  first.max_new_tokens = std::min(g.max_new_tokens, checked);
  const std::vector<int> other =
      no_cache ? cached(other_rng, {}) : attn::lm_generate(m.weights, c, prompt, first, other_rng);
  GenerationRun r;
  r.prompt = prompt.size();
  r.shown = shown.size();
  r.checked = other.size();
  while (r.same < r.checked && shown[r.same] == other[r.same]) ++r.same;
  r.identical = r.same == r.checked && r.checked <= shown.size();
  // The loop written out above against the library's, from the same seed.
  attn::Rng hand_rng(seed), library_rng(seed);
  attn::KvCache hand_cache = attn::kv_cache_init(c, 1);
  r.same_loop = generate_with_cache(hand_cache, m.weights, c, prompt, g, hand_rng, {}, &r.kept) ==
                attn::lm_generate_cached(m.weights, c, prompt, g, library_rng, {});
  // How the cached loop should produce them: steps while positions are left, then re-fills.
  r.n0 = std::min(prompt.size(), c.block_size);
  std::size_t length = r.n0;
  r.positions = r.n0;  // the prefill's
  for (std::size_t i = 1; i < g.max_new_tokens; ++i) {
    if (length < c.block_size) {
      ++r.steps;
      ++length;
      r.positions += 1;
    } else {
      ++r.refills;
      r.positions += c.block_size;
    }
  }
  r.work = work;  // how it did, counted while it ran
  return r;
}

Kernels reference_kernels() {
  return {&attn::kv_append, &attn::attend_cache,
          [](attn::KvCache& cache, const attn::LmWeights& w, const attn::ModelSpec& c,
             std::span<const int> prompt, const attn::GenerateOptions& g, attn::Rng& rng,
             const attn::TokenCallback& on_token) {
            return generate_with_cache(cache, w, c, prompt, g, rng, on_token);
          }};
}

Kernels learner_kernels() {
  return {&ex10::kv_append, &ex10::attend_cache, &ex10::generate_cached};
}

// A model with chapter 11's parts (RoPE, grouped-query attention, a window, RMSNorm, SwiGLU, no
// biases): sections 1-6 take chapter 07's cache apart, which this model does not use; it
// generates through attn::lm_generate_cached's rolling cache instead (attn/model/kvcache.hpp).
void generate_rolling(const Model& m, std::span<const int> prompt, const attn::GenerateOptions& g,
                      std::uint64_t seed, bool timing, std::size_t checked) {
  const attn::ModelSpec& c = m.config;
  show_rolling_cache(c);                         // 1
  show_rolling_start(m.vocab, prompt, g, seed);  // 2: the heading, then the prompt
  const attn::TokenCallback stream = [&m](int id) { put_char(m.vocab, id); };
  attn::Rng rng(seed), other_rng(seed);
  const auto t0 = Clock::now();
  const std::vector<int> shown = attn::lm_generate_cached(m.weights, c, prompt, g, rng, stream);
  const std::chrono::duration<double> cached_time = Clock::now() - t0;
  fmt::print("\n\n");  // the end of the streamed text
  // The uncached run for the first `checked` characters: with a window, its forward runs over
  // the whole context, so its cost grows with the square of the characters.
  attn::GenerateOptions first = g;
  first.max_new_tokens = std::min(g.max_new_tokens, checked);
  const auto t1 = Clock::now();
  const std::vector<int> other = attn::lm_generate(m.weights, c, prompt, first, other_rng);
  const std::chrono::duration<double> full_time = Clock::now() - t1;
  RollingRun r;
  r.shown = shown.size();
  r.checked = other.size();
  r.identical = r.checked <= shown.size() && std::equal(other.begin(), other.end(), shown.begin());
  r.cached_ms = cached_time.count() * 1000.0;
  r.full_ms = full_time.count() * 1000.0;
  show_rolling_result(r, timing);
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
  if (common.mine && attn::uses_rolling_cache(m.config)) {
    // Chapter 11's parts generate through the library's rolling cache, not the cache of
    // ex10.1-ex10.3: --mine would run none of the learner's code and call it theirs.
    throw std::runtime_error(fmt::format(
        "--mine cannot run your ex10.1-ex10.3 on model '{}': its chapter-11 parts generate "
        "through the library's rolling cache, not yours; run 10_generation --mine without "
        "--weights (the shipped model), or on a run of 09_training without chapter 11's parts",
        o.weights_dir));
  }
  const std::size_t top_k = parse_top_k(o, m.config.vocab_size);
  const std::vector<int> prompt = prompt_ids(o, corpus, m.vocab, m.config.block_size);

  // --mine: the learner's nucleus cut (ex10.4) in every sampler, the library's loops included.
  const bool nucleus = o.top_p < 1.0f && !o.greedy;
  if (common.mine) attn::set_top_p_filter(&ex10::top_p_filter);
  show_header(common.seed, corpus.origin, m, common.mine, nucleus);

  attn::GenerateOptions g;
  g.max_new_tokens = o.tokens;
  g.temperature = o.temperature;
  g.top_k = top_k;
  g.top_p = o.top_p;
  g.greedy = o.greedy;
  // Refused up front when it would run for more than about two minutes.
  const GenerationPlan plan = plan_generation(m.config, prompt.size(), o.tokens, o.no_cache);
  if (attn::uses_rolling_cache(m.config))
    return generate_rolling(m, prompt, g, common.seed, common.timing, plan.checked);
  show_cache(m);
  show_step(step_by_hand(k, m, prompt), m, prompt.size());
  const auto t_gen = Clock::now();
  show_generation(generate_text(k, m, prompt, g, common.seed, o.no_cache, plan.checked), m.config,
                  g, o.no_cache, common.mine);
  const std::chrono::duration<double> gen_time = Clock::now() - t_gen;
  show_cost(m, common.seed, common.timing);
  show_past_t_max(m);
  const std::chrono::duration<double> total = Clock::now() - t_start;
  show_next(common.timing, gen_time.count() * 1000.0, total.count() * 1000.0);
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
