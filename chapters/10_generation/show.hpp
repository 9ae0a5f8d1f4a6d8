// chapters/10_generation/show.hpp: what the sections of chapter 10 compute (the structs main.cpp
// fills) and the functions of show.cpp that print them, each sentence chosen by its numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "attn/model/kvcache.hpp"
#include "attn/term/narrate.hpp"
#include "attn/io/text.hpp"
#include "attn/model/model.hpp"
#include "setup.hpp"

namespace ch10 {

using attn::rounding_text;  // "below 1e-5 (float rounding)" (attn/term/narrate.hpp)

// The title lines: the seed, the corpus, whose functions run (--mine: ex10.4 only with a nucleus
// cut), the model and its sizes.
void show_header(std::uint64_t seed, const std::string& corpus_origin, const Model& m, bool mine,
                 bool nucleus);

// Streams one character to stdout as soon as it is chosen (the text of the generation sections).
void put_char(const attn::Vocab& vocab, int id);

// 1. What a new token needs; 2. the cache and its memory.
void show_cache(const Model& m);

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
void show_step(const StepByHand& r, const Model& m, std::size_t prompt_size);

// 4. The heading, the sampling settings and the prompt, which the streamed text continues.
void show_generation_start(const attn::Vocab& vocab, std::span<const int> prompt,
                           const attn::GenerateOptions& g, std::uint64_t seed, bool no_cache);

// 4. What the generation loops did: the text shown against the other loop's, the loop written
// out against the library's, and the prefills, steps and re-fills planned and counted.
struct GenerationRun {
  std::size_t prompt = 0;         // the prompt's tokens
  std::size_t shown = 0;          // characters generated and shown
  std::size_t checked = 0;        // characters the other loop made: all, or the first ones
  std::size_t same = 0;           // leading characters both loops agree on
  bool identical = false;         // the cached and uncached loops gave the same characters
  bool same_loop = false;         // generate_with_cache gave attn::lm_generate_cached's
  std::size_t n0 = 0;             // the prefill's positions (the prompt, at most T_max)
  std::size_t steps = 0;          // planned: one step per token while positions are left
  std::size_t refills = 0;        // then a re-fill per token
  std::uint64_t positions = 0;    // the positions those push through the model
  attn::KvWork work;              // what the cached loop did, counted as it ran
  std::vector<std::size_t> kept;  // per draw, the ids it could pick (what top-k and top-p kept)
};
void show_generation(const GenerationRun& r, const attn::ModelSpec& c,
                     const attn::GenerateOptions& g, bool no_cache, bool mine);

// 5. FLOPs per token as the context grows (and microseconds per token with --timing).
void show_cost(const Model& m, std::uint64_t seed, bool timing);

// 6. Past T_max.
void show_past_t_max(const Model& m);

// The pointer to the next page, and with --timing the time of section 4 and of the whole run.
void show_next(bool timing, double generation_ms, double total_ms);

// ---- A model with chapter 11's parts (RoPE, grouped-query attention, a window, ...): its own
// two sections, about attn::lm_generate_cached's rolling cache.
// 1. The rolling cache of this model: its shape and memory, and what happens past T_max.
void show_rolling_cache(const attn::ModelSpec& c);
// 2. The heading, the settings and the prompt, which the streamed text continues.
void show_rolling_start(const attn::Vocab& vocab, std::span<const int> prompt,
                        const attn::GenerateOptions& g, std::uint64_t seed);
// 2. The streamed text against lm_generate's from the same seed.
struct RollingRun {
  std::size_t shown = 0;    // characters generated and shown
  std::size_t checked = 0;  // characters lm_generate made: all, or the first ones
  bool identical = false;   // lm_generate gave the same characters
  double cached_ms = 0.0;   // the rolling cache's generation (--timing)
  double full_ms = 0.0;     // lm_generate's, a forward over the context per token (--timing)
};
void show_rolling_result(const RollingRun& r, bool timing);

}  // namespace ch10
