// chapters/10_generation/setup.cpp: the flags, model folder and prompt of chapter 10, checked
// before anything is printed (see setup.hpp). The lesson is main.cpp.
#include "setup.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "attn/term/cli.hpp"
#include "attn/io/npy.hpp"
#include "attn/model/kvcache.hpp"
#include "attn/model/lm_files.hpp"

namespace ch10 {

namespace {

namespace fs = std::filesystem;

constexpr std::uintmax_t kMaxVocabBytes = 1 << 20;  // vocab.txt: 1 MiB is far more than enough
constexpr std::size_t kPromptMinLength = 30;        // the default prompt: the first line this long
// The largest model it loads (attn::check_model_bounds).
constexpr std::size_t kMaxLayers = 64, kMaxHeads = 64, kMaxEmbd = 1024, kMaxBlockSize = 4096;

}  // namespace

std::size_t parse_top_k(const Options& o, std::size_t V) {
  return o.top_k_given ? attn::parse_top_k(o.top_k_text, V) : 0;
}

namespace {

// vocab.txt of a model folder: the characters of the vocabulary in id order, UTF-8 (what
// chapter 09 writes beside its checkpoint).
// The caller saw the file a moment ago: when it is gone now, a running trainer removed its
// checkpoint in between (the weights came from the same folder), and the message says so.
attn::Vocab read_vocab_file(const fs::path& path) {
  std::error_code ec;
  const auto gone = [&] { return !fs::exists(fs::symlink_status(path, ec)); };
  const auto vanished = [&] {
    return std::runtime_error(
        fmt::format("'{}' vanished while the folder was read (a newer checkpoint replaced it?)",
                    path.string()));
  };
  if (!fs::is_regular_file(path, ec)) {
    if (gone()) throw vanished();
    throw std::runtime_error(fmt::format("'{}' is not a regular file", path.string()));
  }
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) {
    if (gone()) throw vanished();
    throw std::runtime_error(fmt::format("cannot read the size of '{}'", path.string()));
  }
  if (size > kMaxVocabBytes) {
    throw std::runtime_error(fmt::format("'{}' is larger than {} bytes: not a vocabulary",
                                         path.string(), kMaxVocabBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (gone()) throw vanished();
    throw std::runtime_error(fmt::format("cannot open '{}'", path.string()));
  }
  // (Once open, the bytes stay readable even if the file is removed.)
  std::string bytes(static_cast<std::size_t>(size), '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(size))) {
    throw std::runtime_error(fmt::format("cannot read '{}'", path.string()));
  }
  try {
    std::u32string chars = attn::decode_utf8(bytes);
    return attn::Vocab(std::move(chars));
  } catch (const std::exception& e) {
    // The library's check, in the file's terms: without the class name it reports from.
    std::string what = e.what();
    if (constexpr std::string_view from = "attn::Vocab: "; what.starts_with(from)) {
      what.erase(0, from.size());
    }
    throw std::runtime_error(fmt::format(
        "'{}': {} (expected the vocabulary's characters, sorted, each once)", path.string(), what));
  }
}

// The model the repository ships, beside the shipped corpus: data/sonnets-model.
fs::path shipped_model_path() {
  return attn::shipped_corpus_path().parent_path() / "sonnets-model";
}

}  // namespace

// Where the model comes from: --weights DIR (an lm folder, with its vocab.txt if it has one,
// else the corpus's vocabulary as in chapter 07), or the default model. The only place that
// decides it.
Model load_model(const Options& o, const attn::Vocab& corpus_vocab) {
  // The default: the model the repository ships, trained by chapter 09 on the shipped sonnets
  // (data/sonnets-model, the chapter-09 CPU model's shapes: C 64, H 4, L 4, T_max 64), so the
  // text looks like the corpus and the page's transcript is checked like every other.
  const bool shipped = o.weights_dir.empty();
  const std::string folder = shipped ? shipped_model_path().string() : o.weights_dir;
  // Resolved once (a chapter-09 run's DIR/model links to current/model, which a running trainer
  // switches): the weights and vocab.txt below come from this one folder, never from two
  // checkpoints, and its MANIFEST.txt (if any) proves them complete.
  const fs::path dir = attn::resolve_model_folder(folder);
  std::error_code ec;
  const bool had_manifest = fs::exists(dir / "MANIFEST.txt", ec);
  Model m{attn::ModelSpec{}, attn::LmWeights{}, corpus_vocab, ""};
  // Messages name the folder as typed (the shipped one as the pages do).
  m.weights = attn::load_lm_as_described(dir, o.typed, o.n_heads, m.config, m.described,
                                         shipped ? "data/sonnets-model" : folder);
  // Held to the bounds of the flags that make such models: 10's own --n-layers and --n-heads,
  // chapter 09's --n-embd and chapter 07's --block-size.
  attn::check_model_bounds(m.config, {kMaxLayers, kMaxHeads, kMaxEmbd, kMaxBlockSize},
                           shipped ? "data/sonnets-model" : folder);
  const fs::path vocab_file = dir / "vocab.txt";
  const bool has_vocab = fs::exists(vocab_file, ec);
  if (!has_vocab && had_manifest && !fs::exists(dir / "MANIFEST.txt", ec)) {
    // The manifest the weights were verified by is gone too: the folder is being removed, and
    // its vocab.txt with it (a chapter-09 checkpoint always has one). Not the corpus's case.
    throw std::runtime_error(
        fmt::format("'{}' vanished while the folder was read (a newer checkpoint replaced it?)",
                    vocab_file.string()));
  }
  if (has_vocab) m.vocab = read_vocab_file(vocab_file);
  if (m.config.vocab_size != m.vocab.size()) {
    throw std::runtime_error(fmt::format(
        "model '{}' has a vocabulary of {} tokens (wte.npy) but {} has {} characters", folder,
        m.config.vocab_size,
        has_vocab ? "its vocab.txt" : "the corpus (no vocab.txt in the folder)", m.vocab.size()));
  }
  m.origin =
      shipped
          ? std::string(
                "the model the repository ships (data/sonnets-model: chapter 09 "
                "trained it on the shipped sonnets, 1000 steps)")
          : fmt::format("loaded from '{}' ({}, {})", folder,
                        m.described ? "architecture from its model.txt"
                                    : "no model.txt: L from its blocks, H from --n-heads",
                        has_vocab ? "vocabulary from its vocab.txt" : "vocabulary of the corpus");
  return m;
}

// The prompt as ids: the flag, or the first line of the corpus with kPromptMinLength characters.
std::vector<int> prompt_ids(const Options& o, const attn::Corpus& corpus, const attn::Vocab& vocab,
                            std::size_t block_size) {
  std::u32string prompt;
  if (o.prompt_given) {
    try {
      prompt = attn::decode_utf8(o.prompt);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("--prompt: {}", e.what()));
    }
    for (char32_t c : prompt) {
      if (!vocab.contains(c)) {
        throw std::runtime_error(fmt::format(
            "--prompt: character {} (U+{:04X}) is not in the model's vocabulary ({} characters)",
            char_name(c), static_cast<std::uint32_t>(c), vocab.size()));
      }
    }
  } else {
    const std::u32string text = attn::decode_utf8(corpus.text);
    for (std::size_t begin = 0; begin < text.size() && prompt.empty();) {
      std::size_t end = text.find(U'\n', begin);
      if (end == std::u32string::npos) end = text.size();
      if (end - begin >= kPromptMinLength) prompt = text.substr(begin, end - begin);
      begin = end + 1;
    }
    if (prompt.empty())
      prompt = text.substr(0, std::min<std::size_t>(text.size(), kPromptMinLength));
    // The corpus's line must be in the model's vocabulary (a --weights model may have its own).
    std::u32string kept;
    for (char32_t c : prompt)
      if (vocab.contains(c)) kept += c;
    prompt = kept.empty() ? std::u32string(1, vocab.chars()[0]) : kept;
    // At most half the model's T_max, so the cache has room to step: cut at the end of a word
    // when one ends in the second half of that budget.
    const std::size_t budget = std::max<std::size_t>(1, block_size / 2);
    if (prompt.size() > budget) {
      const std::size_t space = prompt.rfind(U' ', budget);
      prompt.resize(space != std::u32string::npos && space >= budget / 2 && space > 0 ? space
                                                                                      : budget);
    }
  }
  std::vector<int> ids;
  for (char32_t c : prompt) ids.push_back(vocab.id_of(c));
  return ids;
}

GenerationPlan plan_generation(const attn::ModelSpec& c, std::size_t prompt, std::size_t tokens,
                               bool no_cache) {
  const std::size_t T_max = c.block_size;
  const bool rolling = attn::uses_rolling_cache(c);
  // lm_generate crops its context to T_max, except for a rope model with a window.
  const bool uncropped = c.rope() && c.window.has_value();
  const std::size_t n0 = std::max<std::size_t>(1, std::min(prompt, T_max));
  // 1. The cached loops: a prefill, then a step per character while positions are left (a
  //    re-fill each past T_max for chapter 07's cache; a rolling cache keeps stepping).
  double cached = attn::lm_token_flops_uncached(c, n0);
  for (std::size_t i = 1, length = n0; i < tokens; ++i) {
    if (rolling) {
      cached += attn::lm_token_flops_cached(c, std::min(length++, c.window.value_or(T_max)));
    } else if (length < T_max) {
      cached += attn::lm_token_flops_cached(c, length++);
    } else {
      cached += attn::lm_token_flops_refill(c);
    }
  }
  // 2. The uncached run, character by character, and how many characters fit its budget.
  GenerationPlan plan;
  double uncached = 0.0, checked = 0.0;
  for (std::size_t i = 0; i < tokens; ++i) {
    const std::size_t context = uncropped ? prompt + i : std::min(prompt + i, T_max);
    uncached += attn::lm_token_flops_uncached(c, std::max<std::size_t>(1, context));
    if (uncached <= kMaxCheckFlops) {
      plan.checked = i + 1;
      checked = uncached;
    }
  }
  const double loops = rolling ? 1.0 : 3.0;
  // --no-cache streams the uncached run itself (all of it), then checks it against the cache.
  plan.flops = loops * cached + (no_cache ? uncached : checked);
  if (no_cache) plan.checked = tokens;
  if (plan.flops > kMaxGenerationFlops) {
    throw attn::UsageError(fmt::format(
        "--tokens {}{} with L = {}, C = {}, T_max = {} is about {:.2g} floating-point operations, "
        "more than the limit of {:.2g} (about two minutes on a 2-core machine): lower --tokens{}",
        tokens, no_cache ? " --no-cache" : "", c.n_layers, c.n_embd, T_max, plan.flops,
        kMaxGenerationFlops, no_cache ? " or drop --no-cache" : ""));
  }
  return plan;
}

}  // namespace ch10
