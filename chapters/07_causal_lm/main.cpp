// chapters/07_causal_lm/main.cpp: chapter 07, the causal language model (a GPT in miniature).
// The narrated walkthrough: the whole decoder and its parameter count, next-character logits for
// a prompt, generation with temperature and top-k, and the weights as a folder of .npy files.
// The model is never trained here (that comes later), so its text is noise. The math lives in
// common/src/model/model.cpp and sample.cpp, the files in common/src/io/npy.cpp. This file is the
// lesson: one function per section computes what it teaches and returns a struct (show.hpp);
// show.cpp prints it.

#include <fmt/core.h>
#include <unistd.h>  // mkdtemp

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/core/limits.hpp"
#include "attn/core/random.hpp"
#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/term/narrate.hpp"
#include "attn/io/npy.hpp"
#include "attn/io/text.hpp"
#include "attn/model/block.hpp"
#include "attn/model/kvcache.hpp"
#include "attn/model/model.hpp"
#include "attn/model/lm_files.hpp"
#include "attn/term/model_flags.hpp"
#include "attn/model/sample.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/linear.hpp"
#include "attn/ops/loss.hpp"
#include "attn/train/checkpoint.hpp"
#include "exercises.hpp"
#include "show.hpp"

namespace {

using namespace ch07;
namespace fs = std::filesystem;
using Tokens = xt::xtensor<int, 2>;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kPromptMinLength = 30;   // the default prompt: the first line this long
constexpr std::size_t kPromptMaxLength = 200;  // ... cut to its first 200 characters

// Upper bounds of the flags (the input contract, CONTRIBUTING.md): each keeps a run within
// seconds on its own, with the other flags at their defaults; the model's parameters are also
// bounded together (limits::kMaxModelParameters).
constexpr std::size_t kMaxLayers = 48;
constexpr std::size_t kMaxEmbd = 512;
constexpr std::size_t kMaxHeads = 64;
constexpr std::size_t kMaxBlockSize = 4096;
constexpr std::size_t kMaxTokens = 2000;
constexpr std::size_t kMaxPromptFlagLength = 4096;  // characters of --prompt

// ---- The functions the walkthrough calls: from attn:: (the reference) or, with --mine, the
// learner's ex07:: exercises.
struct Kernels {
  Tensor<3> (*embed)(const Tokens&, const Matrix& wte, const Matrix& wpe);  // ex07.1
  Tensor<3> (*tied_logits)(const Tensor<3>& x, const Matrix& wte);          // ex07.2
  Tensor<3> (*lm_forward)(const Tokens&, const attn::LmWeights&,
                          const attn::ModelSpec&);                              // ex07.3
  int (*sample_top_k)(std::span<const float>, float, std::size_t, attn::Rng&);  // ex07.4
};

// attn::lm_forward does its first and last step inline; here they are on their own so that
// --mine can swap in the learner's. x[b, t] = wte[id] + wpe[t]:  (B, T) -> (B, T, C).
Tensor<3> reference_embed(const Tokens& tokens, const Matrix& wte, const Matrix& wpe) {
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1], C = wte.shape()[1];
  attn::require(wpe.shape()[1] == C && T <= wpe.shape()[0], "embed",
                "wpe must be (T_max, C) with T <= T_max");
  Tensor<3> x({B, T, C});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      const int id = tokens(b, t);
      attn::require(id >= 0 && static_cast<std::size_t>(id) < wte.shape()[0], "embed",
                    "token id outside [0, V)");
      xt::view(x, b, t, xt::all()) =
          xt::row(wte, id) + xt::row(wpe, static_cast<std::ptrdiff_t>(t));
    }
  return x;
}

// logits = x @ wte^T: (B, T, C) @ (C, V) -> (B, T, V), one GEMM.
Tensor<3> reference_tied_logits(const Tensor<3>& x, const Matrix& wte) {
  const Matrix wte_t = xt::transpose(wte);  // (C, V)
  return attn::linear(x, wte_t);
}

Kernels reference_kernels() {
  return {&reference_embed, &reference_tied_logits, &attn::lm_forward, &attn::sample_top_k};
}

Kernels learner_kernels() {
  return {&ex07::embed, &ex07::tied_logits, &ex07::lm_forward, &ex07::sample_top_k};
}

// ---- The chapter's flags.
struct Options {
  std::size_t n_layers = 2;
  std::size_t n_embd = 64;
  std::size_t n_heads = 4;
  std::size_t block_size = 32;
  std::size_t tokens = 100;
  float temperature = 1.0f;
  std::string prompt;      // empty: the first line of the corpus with kPromptMinLength characters
  std::string top_k_text;  // empty: no top-k filtering
  std::string weights_dir;
  std::string export_dir;
  bool prompt_given = false;  // told apart from the default: --prompt "" is an error
  bool top_k_given = false;
  attn::ArchitectureFlags typed;  // the architecture flags typed: with --weights, overrides only
};

Tokens as_batch(std::span<const int> ids) {
  Tokens tokens({1, ids.size()});  // (1, T)
  std::copy(ids.begin(), ids.end(), tokens.begin());
  return tokens;
}

// Population standard deviation of every element, in double: how big the values are.
double std_of(const Tensor<3>& x) {
  double mean = 0.0;
  for (const float v : x) mean += static_cast<double>(v);
  mean /= static_cast<double>(x.size());
  double var = 0.0;
  for (const float v : x) var += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean);
  return std::sqrt(var / static_cast<double>(x.size()));
}

// ---------------------------------------------------------------------------------------------
// 1. The parameters, counted from the tensors.
Parameters parameters(const Model& m) {
  Parameters r;
  r.embedding = m.weights.wte.size();
  r.positions = m.weights.wpe.size();
  for (const attn::BlockWeights& b : m.weights.blocks) r.blocks.push_back(attn::parameter_count(b));
  r.final_ln = m.weights.ln_f_gamma.size() + m.weights.ln_f_beta.size();
  r.head = m.weights.lm_head.size() + m.weights.lm_head_bias.size();  // 0 when tied
  r.total = r.embedding + r.positions + r.final_ln + r.head;
  for (const std::size_t b : r.blocks) r.total += b;
  return r;
}

// 2. The forward pass step by step, then in one call; the loss on the prompt.
Logits logits(const Kernels& k, const Model& m, const Prompt& p) {
  Logits r;
  const attn::ModelSpec& c = m.config;
  const Tokens tokens = as_batch(p.context);  // (1, T)
  const auto step = [&](std::string what, const Tensor<3>& x) {
    r.steps.push_back({std::move(what), attn::shape_str(x.shape()), std_of(x)});
  };
  Tensor<3> x = k.embed(tokens, m.weights.wte, m.weights.wpe);  // (1, T, C)
  step("x = wte[tokens] + wpe", x);
  // Causal, pre-norm, eps 1e-5, and the model's own variant (a chapter-09 model may use ReLU,
  // no LayerNorm, ...): the blocks lm_forward runs.
  const attn::BlockConfig block_config = attn::lm_block_config(c);
  for (std::size_t l = 0; l < c.n_layers; ++l) {
    x = attn::block_forward(x, m.weights.blocks[l], block_config).out;  // (1, T, C)
    step(fmt::format("x = block_{}(x)", l), x);
  }
  if (c.ablations.layer_norm) {
    x = attn::layer_norm(x, m.weights.ln_f_gamma, m.weights.ln_f_beta);  // (1, T, C)
    step("x = ln_f(x)", x);
  }
  if (c.ablations.tied_head) {
    r.stepwise = k.tied_logits(x, m.weights.wte);  // (1, T, C) @ (C, V) -> (1, T, V)
    step("logits = x @ wte^T", r.stepwise);
  } else {  // a separate output head, as the lecture's models have
    r.stepwise = attn::linear(x, m.weights.lm_head, m.weights.lm_head_bias);  // (1, T, V)
    step("logits = x @ lm_head + b", r.stepwise);
  }
  r.logits = k.lm_forward(tokens, m.weights, m.config);  // (1, T, V)
  // The loss: position t predicts token t+1, over the T-1 positions that have a target.
  const std::size_t T = p.context.size();
  if (T >= 2) {
    const Matrix rows = xt::view(r.logits, 0, xt::range(0, T - 1), xt::all());  // (T-1, V)
    const std::vector<int> targets(p.context.begin() + 1, p.context.end());
    r.loss = attn::cross_entropy(rows, targets);
  }
  return r;
}

// 3. The generation loop of attn::lm_generate, written with the chapter's kernels so that --mine
// runs the learner's forward pass and sampler. Returns only the new tokens.
std::vector<int> generate(const Kernels& k, const attn::LmWeights& w, const attn::ModelSpec& config,
                          std::span<const int> prompt, const attn::GenerateOptions& g,
                          attn::Rng& rng) {
  const std::size_t V = config.vocab_size;
  std::vector<int> all(prompt.begin(), prompt.end());
  for (std::size_t i = 0; i < g.max_new_tokens; ++i) {
    // 1. Crop: the position table has T_max rows, so the model sees the last T_max tokens.
    const std::size_t T = std::min(all.size(), config.block_size);
    const Tokens context = as_batch(std::span<const int>(all).last(T));  // (1, T)
    // 2. Forward. Only the last position predicts a token nobody has seen yet.
    const Tensor<3> logits = k.lm_forward(context, w, config);  // (1, T, V)
    // 3. Sample: top_k = V keeps every token (and draws exactly what sample_logits draws).
    all.push_back(k.sample_top_k(last_row(logits), g.temperature, g.top_k == 0 ? V : g.top_k, rng));
  }
  return {all.begin() + static_cast<std::ptrdiff_t>(prompt.size()), all.end()};
}

// The flags' sample (timed), lm_generate's with the same seed, and four other settings.
Generation generation(const Kernels& k, const Model& m, const Prompt& p,
                      const attn::GenerateOptions& g, std::uint64_t seed) {
  Generation r;
  r.options = g;
  const auto t0 = Clock::now();
  attn::Rng rng(seed, 4);
  r.sample = generate(k, m.weights, m.config, p.ids, g, rng);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  attn::Rng library_rng(seed, 4);
  r.library = attn::lm_generate(m.weights, m.config, p.ids, g, library_rng);
  const std::size_t V = m.config.vocab_size;
  const struct {
    const char* setting;
    float temperature;
    std::size_t top_k;
  } others[] = {{"temperature 0.5", 0.5f, 0},
                {"temperature 1.5", 1.5f, 0},
                {"temperature 1.0, top-k 5", 1.0f, std::min<std::size_t>(5, V)},
                {"temperature 0.1", 0.1f, 0}};
  for (const auto& o : others) {
    attn::GenerateOptions other = g;
    other.temperature = o.temperature;
    other.top_k = o.top_k;
    attn::Rng same_seed(seed, 4);
    r.others.push_back({o.setting, generate(k, m.weights, m.config, p.ids, other, same_seed)});
  }
  return r;
}

// 4. save_lm to a temporary folder, what it wrote, and load_lm back: the same logits?
RoundTrip round_trip(const Kernels& k, const Model& m, const Prompt& p) {
  RoundTrip r;
  char pattern[] = "/tmp/attn-07-XXXXXX";
  if (mkdtemp(pattern) == nullptr) throw std::runtime_error("cannot create a temporary folder");
  const fs::path dir(pattern);
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  attn::save_lm(dir, m.weights, m.config);
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".npy") continue;
    const attn::NpyArray a = attn::read_npy(e.path());
    r.files.push_back({e.path().filename().string(), a.shape, a.descr});
    r.bytes += fs::file_size(e.path());
  }
  std::sort(r.files.begin(), r.files.end(),
            [](const NpyFile& a, const NpyFile& b) { return a.name < b.name; });
  attn::ModelSpec loaded_config;
  bool described = false;
  const attn::LmWeights loaded = attn::load_lm_as_described(dir, {}, 1, loaded_config, described);
  r.again = k.lm_forward(as_batch(p.context), loaded, loaded_config);  // (1, T, V)
  return r;
}

// ---- Checks on the flags and the model folder, before anything is printed.

std::size_t parse_top_k(const Options& o, std::size_t V) {
  return o.top_k_given ? attn::parse_top_k(o.top_k_text, V) : 0;
}

// The flags' sizes together: the parameters of the model they describe, checked (no product may
// wrap around) and bounded, before anything is drawn. A usage error: the flags are too large.
void check_model_size(const Options& o) {
  const std::size_t C = o.n_embd, L = o.n_layers;
  const std::size_t per_block = 12 * C * C + 13 * C;                    // C <= 1024: no overflow
  const std::size_t params = L * per_block + o.block_size * C + 2 * C;  // + V * C, checked later
  if (params > attn::limits::kMaxModelParameters) {
    throw attn::UsageError(fmt::format(
        "--n-layers {} --n-embd {} --block-size {} make a model of {} parameters (before the "
        "embedding), more than the limit of {}: lower --n-layers or --n-embd",
        L, C, o.block_size, params, attn::limits::kMaxModelParameters));
  }
}

// Section 3 generates --tokens tokens six times (the sample, lm_generate's copy, four other
// settings); each token is one forward pass over the last min(length, T_max) tokens. Its
// floating-point operations, estimated in double, are bounded so that no combination of flags
// runs for minutes: 2 T (12 C^2 L + V C) for the weights, 4 L T^2 C for attention.
constexpr double kMaxGenerationWork = 2.5e11;  // some seconds on one core of a laptop

void check_generation_work(const attn::ModelSpec& c, std::size_t prompt, std::size_t new_tokens,
                           bool loaded) {
  const double C = static_cast<double>(c.n_embd), L = static_cast<double>(c.n_layers);
  const double V = static_cast<double>(c.vocab_size);
  double work = 0.0;
  for (std::size_t i = 0; i < new_tokens; ++i) {
    const double T = static_cast<double>(std::min(prompt + i, c.block_size));
    work += 6.0 * (2.0 * T * (12.0 * C * C * L + V * C) + 4.0 * L * T * T * C);
  }
  if (work > kMaxGenerationWork) {
    throw attn::UsageError(fmt::format(
        "--tokens {} with L = {}, C = {}, T_max = {} is about {:.1e} floating-point operations "
        "of generation, more than the limit of {:.1e}: lower {}",
        new_tokens, c.n_layers, c.n_embd, c.block_size, work, kMaxGenerationWork,
        // A loaded model's sizes are its files', not flags: only --tokens is the learner's.
        loaded ? "--tokens (the sizes are the model folder's)"
               : "--tokens, --block-size, --n-embd or --n-layers"));
  }
}

// The model: drawn from the flags, or loaded from --weights DIR as the folder describes itself
// (model.txt, the tensors' shapes) with its vocab.txt when it has one; `vocab` is the corpus's
// on entry and the model's on return.
Model make_model(const Options& o, attn::Vocab& vocab, std::uint64_t seed) {
  Model m;
  if (o.weights_dir.empty()) {
    attn::ModelChoices asked;
    asked.vocab_size = vocab.size();
    asked.block_size = o.block_size;
    asked.n_embd = o.n_embd;
    asked.n_heads = o.n_heads;
    asked.n_layers = o.n_layers;
    try {
      m.config = attn::resolve_spec(asked, attn::SpecNames::flags);
    } catch (const attn::SpecError& e) {
      throw attn::UsageError(e.what());
    }
    attn::Rng rng(seed, 3);  // its own stream: the initial weights do not move with sampling
    m.weights = attn::lm_init(rng, m.config);
    m.origin = fmt::format("random initialisation (seed {}), untrained", seed);
    return m;
  }
  // Resolved once (a chapter-09 run's DIR/model links to current/model, which a running trainer
  // switches): every file below is read from this one folder, never from two checkpoints.
  const fs::path dir = attn::resolve_model_folder(o.weights_dir);
  bool described = false;
  m.weights =
      attn::load_lm_as_described(dir, o.typed, o.n_heads, m.config, described, o.weights_dir);
  // The folder's model is held to the flags' bounds, as one the flags drew would be.
  attn::check_model_bounds(m.config, {kMaxLayers, kMaxHeads, kMaxEmbd, kMaxBlockSize},
                           o.weights_dir);
  if (attn::uses_rolling_cache(m.config)) {
    // Chapter 11's parts (RoPE, RMSNorm, SwiGLU, GQA, a window, no biases): this chapter takes
    // GPT-2's model apart, step by step, and would describe it wrongly.
    const attn::ModelSpec& c = m.config;
    std::string parts;
    const auto add = [&](bool on, const std::string& what) {
      if (on) parts += (parts.empty() ? "" : ", ") + what;
    };
    add(!c.learned_positions(), fmt::format("{} positions", attn::positions_name(c.positions)));
    add(c.normalization == attn::Normalization::rmsnorm, "RMSNorm");
    add(c.ffn == attn::FfnKind::swiglu, "SwiGLU");
    add(c.n_kv_heads != c.n_heads, fmt::format("{} K/V heads for {}", c.n_kv_heads, c.n_heads));
    add(c.window.has_value(), fmt::format("window {}", c.window.value_or(0)));
    add(!c.bias, "no biases");
    throw std::runtime_error(fmt::format(
        "model '{}' is built from parts this chapter does not take apart ({}): 10_generation "
        "--weights {} generates from it",
        o.weights_dir, parts, o.weights_dir));
  }
  attn::Vocab own(U"?");
  const bool has_vocab = attn::find_vocab(dir, own, "model folder");
  if (has_vocab && own.size() != m.config.vocab_size) {
    throw std::runtime_error(fmt::format(
        "model '{}' has a vocabulary of {} tokens (wte.npy is ({}, {})) but its vocab.txt has {} "
        "characters",
        o.weights_dir, m.config.vocab_size, m.config.vocab_size, m.config.n_embd, own.size()));
  }
  if (!has_vocab && m.config.vocab_size != vocab.size()) {
    throw std::runtime_error(fmt::format(
        "model '{}' has a vocabulary of {} tokens (wte.npy is ({}, {})) but the corpus has {} "
        "characters and the folder no vocab.txt: use the corpus it was made with (--data)",
        o.weights_dir, m.config.vocab_size, m.config.vocab_size, m.config.n_embd, vocab.size()));
  }
  if (has_vocab) vocab = std::move(own);
  m.origin = fmt::format("loaded from '{}'", o.weights_dir);
  m.described = described;
  m.own_vocab = has_vocab;
  m.untrained = false;
  return m;
}

// The prompt: the flag, or the first line of the corpus with kPromptMinLength characters.
std::u32string prompt_text(const Options& o, const attn::Corpus& corpus, const attn::Vocab& vocab,
                           bool own_vocab) {
  std::u32string prompt;
  if (o.prompt_given) {
    try {
      prompt = attn::decode_utf8(o.prompt);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("--prompt: {}", e.what()));
    }
    if (prompt.size() > kMaxPromptFlagLength) {
      throw attn::UsageError(fmt::format("--prompt must be at most {} characters, got {}",
                                         kMaxPromptFlagLength, prompt.size()));
    }
    for (char32_t c : prompt) {
      if (!vocab.contains(c)) {
        throw std::runtime_error(
            fmt::format("--prompt: character {} (U+{:04X}) is not in the vocabulary of this {} ({} "
                        "characters)",
                        char_name(c), static_cast<std::uint32_t>(c), own_vocab ? "model" : "corpus",
                        vocab.size()));
      }
    }
    return prompt;
  }
  const std::u32string text = attn::decode_utf8(corpus.text);
  for (std::size_t begin = 0; begin < text.size() && prompt.empty();) {
    std::size_t end = text.find(U'\n', begin);
    if (end == std::u32string::npos) end = text.size();
    if (end - begin >= kPromptMinLength) {
      prompt = text.substr(begin, std::min(end - begin, kPromptMaxLength));
    }
    begin = end + 1;
  }
  if (prompt.empty()) prompt = text.substr(0, std::min<std::size_t>(text.size(), kPromptMinLength));
  // The corpus's line in the model's vocabulary (a --weights model may have its own).
  std::u32string kept;
  for (const char32_t c : prompt)
    if (vocab.contains(c)) kept += c;
  return kept.empty() ? std::u32string(1, vocab.chars()[0]) : kept;
}

// --mine runs the learner's ex07.3, the model its stub describes: chapter 06's full blocks
// (pre-norm, GELU), a final LayerNorm and the head tied to wte. On another model (a chapter-09
// run with an untied head or ReLU, say) it would compute a different function and look wrong:
// one line says so, and what to run instead.
void check_mine_can_run(const Model& m, const Options& o) {
  const attn::ModelSpec& c = m.config;
  std::string differs;
  const auto add = [&](bool on, const std::string& what) {
    if (on) differs += (differs.empty() ? "" : ", ") + what;
  };
  add(!c.ablations.tied_head, "an untied head (lm_head)");
  add(c.activation != attn::Activation::gelu,
      fmt::format("{} activation", attn::activation_name(c.activation)));
  add(!c.ablations.layer_norm || !c.ablations.residual || !c.ablations.ffn ||
          !c.ablations.attn_proj,
      "chapter 09's reduced blocks");
  if (differs.empty()) return;
  throw std::runtime_error(fmt::format(
      "--mine cannot run your ex07.3 on model '{}': it has {}, and your lm_forward builds the "
      "stub's model (GELU, tied head); run 07_causal_lm --mine without --weights, or on a run of "
      "09_training --tied --activation gelu",
      o.weights_dir.empty() ? "from the flags" : o.weights_dir, differs));
}

void run(const attn::CommonOptions& common, const Options& o) {
  const auto t_start = Clock::now();
  const Kernels k = common.mine ? learner_kernels() : reference_kernels();
  if (o.prompt_given && o.prompt.empty()) throw attn::UsageError("--prompt must not be empty");
  if (o.weights_dir.empty()) check_model_size(o);
  if (o.weights_dir.empty() && o.n_embd % o.n_heads != 0) {
    throw attn::UsageError(
        fmt::format("--n-heads {} does not divide --n-embd {} (every head gets C / H channels)",
                    o.n_heads, o.n_embd));
  }

  if (!o.export_dir.empty()) {  // never into a run (chapter 09) or a saved checkpoint
    try {
      attn::check_save_folder(o.export_dir, "--export");
    } catch (const std::invalid_argument& e) {
      throw attn::UsageError(e.what());
    }
  }

  const attn::Corpus corpus = attn::load_corpus(common.data);
  attn::Vocab vocab = attn::Vocab::from_text(corpus.text);
  const Model m = make_model(o, vocab, common.seed);  // with --weights, the model's vocabulary
  if (common.mine) check_mine_can_run(m, o);
  const std::size_t top_k = parse_top_k(o, vocab.size());
  const std::u32string prompt = prompt_text(o, corpus, vocab, m.own_vocab);

  if (!o.export_dir.empty())
    attn::save_lm(o.export_dir, m.weights, m.config);  // fail before the story
  Prompt p;
  p.ids = vocab.encode(attn::encode_utf8(prompt));
  const std::size_t T = std::min(p.ids.size(), m.config.block_size);
  p.context.assign(p.ids.end() - static_cast<std::ptrdiff_t>(T), p.ids.end());
  check_generation_work(m.config, p.ids.size(), o.tokens, !o.weights_dir.empty());

  fmt::print("Chapter 07: the causal language model\n");
  fmt::print("seed {}, corpus {}, functions: {}\n", common.seed, corpus.origin,
             common.mine ? "yours (ex07::, --mine)" : "the reference (attn::)");
  fmt::print("model: {}\n", m.origin);
  if (!o.weights_dir.empty()) {
    fmt::print(
        "(the folder describes the model: {};\n V, C and T_max from wte and wpe; the vocabulary "
        "from {})\n",
        m.described ? "L, H and the variant from its model.txt"
                    : "no model.txt, so L from its blocks and H from --n-heads",
        m.own_vocab ? "its vocab.txt" : "the corpus");
  }

  show_architecture(m, parameters(m));
  const auto t_forward = Clock::now();
  const Logits l = logits(k, m, p);
  const std::chrono::duration<double> forward_time = Clock::now() - t_forward;
  show_logits(m, vocab, p, l);
  attn::GenerateOptions g;
  g.max_new_tokens = o.tokens;
  g.temperature = o.temperature;
  g.top_k = top_k;
  show_generation(m, vocab, p, l.logits, generation(k, m, p, g, common.seed), common.timing);
  show_weights(m, l.logits, round_trip(k, m, p), o.export_dir);
  if (common.svg_dir) write_svgs(*common.svg_dir, m, vocab, p, l.logits);
  fmt::print("{}",
             m.untrained
                 ? "\nWhat this model lacks is training: the loss of section 2 needs a gradient "
                   "for every\nweight (backpropagation). docs/performance.md looks at where the "
                   "time goes.\n"
                 : "\nThese weights were loaded, not drawn: training (chapters 08 and 09) is what "
                   "made them.\ndocs/performance.md looks at where the time goes.\n");
  if (common.timing) {
    const std::chrono::duration<double> total = Clock::now() - t_start;
    fmt::print("(section 2: {} ms; whole run: {} ms)\n",
               attn::num(forward_time.count() * 1000.0, 2), attn::num(total.count() * 1000.0, 1));
  }
}

}  // namespace

int main(int argc, char** argv) {
  attn::Cli cli("07_causal_lm",
                "Chapter 07: the causal language model. Token and position embeddings, L "
                "transformer blocks, a final LayerNorm and an output projection tied to the "
                "embedding; next-character logits, generation with temperature and top-k, and "
                "the weights as a folder of .npy files. Drawn from the flags the model is "
                "untrained and its text is noise; --weights DIR loads a trained one (a "
                "chapter-09 run) as its folder describes it.");
  Options o;
  cli.add_size("--n-layers", o.n_layers, "L, transformer blocks", 1, kMaxLayers);
  cli.add_size("--n-embd", o.n_embd, "C, the model width", 1, kMaxEmbd);
  cli.add_size("--n-heads", o.n_heads, "H, attention heads (must divide C)", 1, kMaxHeads);
  cli.add_size("--block-size", o.block_size, "T_max, the longest context (rows of wpe)", 1,
               kMaxBlockSize);
  cli.add_string("--prompt", o.prompt,
                 "text to continue (default: the first line of the corpus with at least 30 "
                 "characters, cut to 200; at most 4096)");
  cli.add_size("--tokens", o.tokens, "characters to generate", 1, kMaxTokens);
  cli.add_float("--temperature", o.temperature, "sampling temperature (> 0)", 0.0f);
  cli.add_string("--top-k", o.top_k_text,
                 "K: sample only among the K most likely characters, 1 <= K <= V (default: all)");
  cli.add_string("--weights", o.weights_dir,
                 "DIR: load the model from this folder of .npy files (or a chapter-09 run or "
                 "checkpoint) instead of drawing it; its model.txt gives the architecture and its "
                 "vocab.txt the vocabulary, and a size flag may only repeat what the files say");
  cli.add_string("--export", o.export_dir, "DIR: also save the model as .npy files into DIR");
  cli.add_alias("layers", "n-layers");  // the names of earlier versions
  cli.add_alias("channels", "n-embd");
  cli.add_alias("heads", "n-heads");
  cli.add_alias("max-new-tokens", "tokens");
  o.prompt_given = attn::flag_given(argc, argv, "--prompt");
  o.top_k_given = attn::flag_given(argc, argv, "--top-k");
  // With --weights the folder gives the architecture; a flag typed (in any spelling) overrides
  // it only where it agrees.
  const auto typed = [&](std::initializer_list<std::string_view> names, std::size_t value) {
    for (const std::string_view name : names)
      if (attn::flag_given(argc, argv, name)) return std::optional<std::size_t>(value);
    return std::optional<std::size_t>();
  };
  const auto fill_typed = [&] {
    o.typed.n_layers = typed({"--n-layers", "--layers"}, o.n_layers);
    o.typed.n_heads = typed({"--n-heads", "--heads"}, o.n_heads);
    o.typed.n_embd = typed({"--n-embd", "--channels"}, o.n_embd);
    o.typed.block_size = typed({"--block-size"}, o.block_size);
  };
  return cli.run(argc, argv, [&](const attn::CommonOptions& common) {
    fill_typed();  // after parsing: the values typed
    run(common, o);
  });
}
