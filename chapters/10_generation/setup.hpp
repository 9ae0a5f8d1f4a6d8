// chapters/10_generation/setup.hpp: what chapter 10 runs on, apart from the lesson (main.cpp):
// its flags, the model (the shipped one or --weights DIR) with its vocabulary, and the prompt as
// ids, each checked before anything is printed (setup.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attn/io/corpus.hpp"
#include "attn/io/text.hpp"
#include "attn/term/narrate.hpp"
#include "attn/model/lm_files.hpp"
#include "attn/term/model_flags.hpp"
#include "attn/model/model.hpp"

namespace ch10 {

// ---- The chapter's flags.
struct Options {
  std::string weights_dir;
  std::string prompt;  // empty: the first line of the corpus with kPromptMinLength characters
  std::size_t tokens = 200;
  float temperature = 1.0f;
  std::string top_k_text;  // empty: every token
  float top_p = 1.0f;
  bool greedy = false;
  bool no_cache = false;
  std::size_t n_layers = 4;
  std::size_t n_heads = 4;
  bool prompt_given = false;  // told apart from the default: --prompt "" is an error
  bool top_k_given = false;
  attn::ArchitectureFlags typed;  // --n-layers, --n-heads as typed: they only override
};

struct Model {
  attn::ModelSpec config;
  attn::LmWeights weights;
  attn::Vocab vocab;
  std::string origin;      // for the narration
  bool described = false;  // the folder has a model.txt
};

using attn::char_name;  // 'a', '\n', ' ' (attn/term/narrate.hpp)
// --top-k as a number in [1, V]; 0 when not given (every token).
std::size_t parse_top_k(const Options& o, std::size_t V);
// Where the model comes from: --weights DIR (an lm folder, or a chapter-09 run or checkpoint
// holding DIR/model; the architecture from its model.txt, its vocab.txt if it has one, else the
// corpus's vocabulary as in chapter 07), or the model the repository ships (data/sonnets-model).
// attn::UsageError for --n-layers or --n-heads that contradict the folder; std::runtime_error
// naming the file for anything broken.
Model load_model(const Options& o, const attn::Vocab& corpus_vocab);
// The prompt as ids: --prompt, or the first line of the corpus with at least 30 characters, cut
// to at most half of block_size (the model's T_max) so that the cache has room to step.
std::vector<int> prompt_ids(const Options& o, const attn::Corpus& corpus, const attn::Vocab& vocab,
                            std::size_t block_size);

// ---- The time a run takes, bounded before it starts. Its work is counted in forward FLOPs with
// kvcache.hpp's formulas: the cached loops (chapter 07's cache: the streamed one, the one written
// out and the library's; a rolling-cache model: one), and the uncached run they are checked
// against, a forward over the whole context per character. About 50 GFLOP/s reach a 2-core
// machine here, so the whole run is held to kMaxGenerationFlops (about two minutes), and the
// uncached check to kMaxCheckFlops: past that it compares the first `checked` characters only
// (for a rope model with a window its cost grows with the square of the context).
inline constexpr double kMaxGenerationFlops = 5e12;
inline constexpr double kMaxCheckFlops = 2.5e11;
struct GenerationPlan {
  std::size_t checked = 0;  // the characters compared with the uncached run: all, or a prefix
  double flops = 0.0;       // the run's estimated work
};
// Throws attn::UsageError naming --tokens (and --no-cache, whose loop is the uncached one) when
// the work is above the budget.
GenerationPlan plan_generation(const attn::ModelSpec& c, std::size_t prompt, std::size_t tokens,
                               bool no_cache);

}  // namespace ch10
