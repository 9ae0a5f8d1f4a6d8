// chapters/14_gpt2/main.cpp: chapter 14, GPT-2 on the course's own attention.
// A Hugging Face GPT-2 folder as downloaded (config.json, model.safetensors, vocab.json,
// merges.txt) read into the course's model: the safetensors file checked and read by hand
// (attn/io/safetensors.hpp), every checkpoint name mapped to a row of the parameter table, the
// fused c_attn split into w_q, w_k, w_v, and one new part, attention biases
// (attn/model/gpt2.hpp). Then the prompt through the blocks (a shape trace) and text generated
// with chapter 10's KV cache. Each section is computed here and printed by show.cpp.
// Without --weights the model is the small random GPT-2 the tests use (tests/gpt2/tiny, written
// by scripts/make_gpt2_fixture.py with Hugging Face's own save_pretrained).

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/core/random.hpp"
#include "attn/io/bpe.hpp"
#include "attn/io/corpus.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/io/text.hpp"
#include "attn/model/block.hpp"
#include "attn/model/gpt2.hpp"
#include "attn/model/kvcache.hpp"
#include "attn/model/model.hpp"
#include "attn/model/params.hpp"
#include "attn/term/cli.hpp"
#include "attn/term/narrate.hpp"
#include "attn/term/print.hpp"
#include "exercises.hpp"
#include "show.hpp"

namespace {

namespace fs = std::filesystem;
using attn::Tensor;
using Clock = std::chrono::steady_clock;

// Bounds of the size flags (stated in --help).
constexpr std::size_t kMaxTokens = 4096;
constexpr std::size_t kMaxPromptIds = 4096;

struct Options {
  std::string weights_dir;
  std::string prompt;
  std::string prompt_ids;
  std::size_t tokens = 24;
  float temperature = 1.0f;
  std::string top_k_text;
  float top_p = 1.0f;
  bool greedy = false;
  bool no_cache = false;
  bool raw = false;
  bool top_k_given = false;
  bool prompt_given = false;
};

// The default prompt, for a folder with a tokenizer.
constexpr std::string_view kDefaultPrompt = "Shall I compare thee to a summer's day?";
constexpr std::size_t kMaxPromptBytes = 16384;

// Generated text printed as it comes: each token's bytes, an unfinished UTF-8 character held
// back until its last byte arrives (a token may end inside one), escaped for the terminal.
class TextStream {
 public:
  explicit TextStream(const attn::Bpe& bpe) : bpe_(bpe) {}
  void put(int id) {
    pending_ += bpe_.token_bytes(id);
    std::size_t cut = pending_.size();
    // Back up over at most 3 bytes to the last lead byte; cut before it if its character is
    // not complete yet.
    for (std::size_t back = 1; back <= std::min<std::size_t>(3, pending_.size()); ++back) {
      const auto b = static_cast<unsigned char>(pending_[pending_.size() - back]);
      if ((b & 0xC0) == 0x80) continue;  // a continuation byte
      const std::size_t need = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
      if (need > back) cut = pending_.size() - back;
      break;
    }
    flush(cut);
  }
  void finish() { flush(pending_.size()); }

 private:
  void flush(std::size_t n) {
    if (n == 0) return;
    const std::string text = attn::utf8_replace(std::string_view(pending_).substr(0, n));
    fmt::print("{}", attn::terminal_safe(attn::decode_utf8(text)));
    std::fflush(stdout);
    pending_.erase(0, n);
  }
  const attn::Bpe& bpe_;
  std::string pending_;
};

// The shipped fixture, from the repository's root: tests/gpt2/tiny.
fs::path shipped_model() {
  return attn::shipped_corpus_path().parent_path().parent_path() / "tests" / "gpt2" / "tiny";
}

// --mine, ex14.2: the learner's tensor_offset on every entry of the file's header (already read
// and checked by the library), given the file's first 8 bytes and its size; each answer must be
// the library's, 8 + N + begin.
void check_offsets_mine(const fs::path& file) {
  const attn::SafetensorsHeader header = attn::read_safetensors_header(file);
  std::string start(8, '\0');
  std::ifstream in(file, std::ios::binary);
  if (!in.read(start.data(), 8))
    throw attn::Gpt2Error(file.string() + ": cannot read its first 8 bytes");
  const std::uint64_t size = fs::file_size(file);
  for (const attn::StTensor& t : header.tensors) {
    ex14::TensorEntry e;
    e.dtype = std::string(attn::st_dtype_name(t.dtype));
    e.shape.assign(t.shape.begin(), t.shape.end());
    e.begin = t.begin;
    e.end = t.end;
    const std::uint64_t yours = ex14::tensor_offset(start, size, e);
    if (yours != header.data_start + t.begin) {
      throw attn::Gpt2Error(fmt::format(
          "{}: your tensor_offset (ex14.2) puts '{}' at byte {}, but it starts at byte {}",
          file.string(), t.name, yours, header.data_start + t.begin));
    }
  }
}

// "464,2068,7586": token ids, each in [0, V). Throws attn::UsageError naming the flag.
std::vector<int> parse_ids(std::string_view text, std::size_t V) {
  std::vector<int> ids;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view item = text.substr(at, comma - at);
    long long v = -1;
    const auto [end, err] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || err != std::errc() || end != item.data() + item.size() || v < 0 ||
        static_cast<unsigned long long>(v) >= V) {
      throw attn::UsageError(
          fmt::format("--prompt-ids must be token ids in [0, {}) separated by commas, got '{}'", V,
                      std::string(item.substr(0, 24))));
    }
    ids.push_back(static_cast<int>(v));
    if (ids.size() > kMaxPromptIds) {
      throw attn::UsageError(fmt::format("--prompt-ids holds more than {} ids", kMaxPromptIds));
    }
    at = comma + 1;
  }
  return ids;
}

// 4. The prompt through the blocks: the embeddings, block 0 step by step (BlockTrace), every
// later block's output, ln_f and the logits, with their shapes.
std::vector<ch14::TraceStep> trace_prompt(const attn::Gpt2Model& m, std::span<const int> prompt) {
  const attn::ModelSpec& s = m.spec;
  const std::size_t T = std::min(prompt.size(), s.block_size), C = s.n_embd;
  const std::span<const int> context = prompt.last(T);
  std::vector<ch14::TraceStep> steps;
  const auto record = [&](std::string where, const Tensor<3>& x) {
    double sum = 0.0;
    for (const float v : x) sum += static_cast<double>(v) * static_cast<double>(v);
    steps.push_back({std::move(where), attn::shape_str(x.shape()),
                     std::sqrt(sum / static_cast<double>(x.size()))});
  };
  // x = wte[token] + wpe[t]                                              (1, T, C)
  Tensor<3> x = Tensor<3>::from_shape({1, T, C});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t c = 0; c < C; ++c)
      x(0, t, c) = m.weights.wte(static_cast<std::size_t>(context[t]), c) + m.weights.wpe(t, c);
  record("wte + wpe", x);
  attn::BlockConfig bc = attn::lm_block_config(s);
  for (std::size_t l = 0; l < s.n_layers; ++l) {
    const attn::BlockTrace trace = [&](std::string_view step, const Tensor<3>& v) {
      if (l == 0) record(fmt::format("h0.{}", step), v);
    };
    attn::BlockResult r = attn::block_forward(x, m.weights.blocks[l], bc, trace);
    x = std::move(r.out);
    if (l > 0) record(fmt::format("h{}", l), x);
  }
  // logits = ln_f(x) @ wte^T                                 (1, T, C) -> (1, T, V)
  xt::xtensor<int, 2> tokens = xt::xtensor<int, 2>::from_shape({1, T});
  std::copy(context.begin(), context.end(), tokens.begin());
  record("logits", attn::lm_forward(tokens, m.weights, s));
  return steps;
}

// --mine, ex14.3: the learner's step_qkv in every block, on the row that ln_1 gives the prompt's
// last token in the full forward (traced), with the block's c_attn weight and bias put back
// together; its q, k, v must be that forward's rows, h w + b, to float rounding.
void check_step_qkv_mine(const attn::Gpt2Model& m, std::span<const int> prompt) {
  const attn::ModelSpec& s = m.spec;
  const std::size_t T = std::min(prompt.size(), s.block_size), C = s.n_embd;
  const std::span<const int> context = prompt.last(T);
  Tensor<3> x = Tensor<3>::from_shape({1, T, C});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t c = 0; c < C; ++c)
      x(0, t, c) = m.weights.wte(static_cast<std::size_t>(context[t]), c) + m.weights.wpe(t, c);
  const attn::BlockConfig bc = attn::lm_block_config(s);
  for (std::size_t l = 0; l < s.n_layers; ++l) {
    attn::Vector h = xt::zeros<float>({C});
    const attn::BlockTrace trace = [&](std::string_view step, const Tensor<3>& v) {
      if (step == "ln1")
        for (std::size_t c = 0; c < C; ++c) h(c) = v(0, T - 1, c);
    };
    attn::BlockResult r = attn::block_forward(x, m.weights.blocks[l], bc, trace);
    const attn::MhaWeights& a = m.weights.blocks[l].attn;
    const std::array<const attn::Matrix*, 3> w{&a.w_q, &a.w_k, &a.w_v};
    const std::array<const attn::Vector*, 3> b{&a.b_q, &a.b_k, &a.b_v};
    const attn::Matrix fused = xt::concatenate(xt::xtuple(a.w_q, a.w_k, a.w_v), 1);
    attn::Vector bias = xt::zeros<float>({3 * C});
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t c = 0; c < b[j]->size() && c < C; ++c) bias(j * C + c) = (*b[j])(c);
    const std::array<attn::Vector, 3> yours = ex14::step_qkv(h, fused, bias);
    for (std::size_t j = 0; j < 3; ++j) {
      const char* name = j == 0 ? "q" : j == 1 ? "k" : "v";
      if (yours[j].size() != C) {
        throw attn::Gpt2Error(
            fmt::format("block {}: your step_qkv (ex14.3) returns {} of {} "
                        "values, expected C = {}",
                        l, name, yours[j].size(), C));
      }
      for (std::size_t c = 0; c < C; ++c) {
        double want = c < b[j]->size() ? static_cast<double>((*b[j])(c)) : 0.0;
        for (std::size_t i = 0; i < C; ++i)
          want += static_cast<double>(h(i)) * static_cast<double>((*w[j])(i, c));
        const double got = static_cast<double>(yours[j](c));
        if (!(std::abs(got - want) <= 1e-5 + 1e-4 * std::abs(want))) {
          throw attn::Gpt2Error(fmt::format(
              "block {}: your step_qkv (ex14.3) gives the last prompt token {}[{}] = {:.6f}, "
              "but the full forward's row holds {:.6f}",
              l, name, c, got, want));
        }
      }
    }
    x = std::move(r.out);
  }
}

void run(const attn::CommonOptions& common, const Options& o) {
  const bool shipped = o.weights_dir.empty();
  const fs::path folder = shipped ? shipped_model() : fs::path(o.weights_dir);
  if (!shipped) {  // named by its flag, not as a missing config.json inside it (issue 29)
    std::error_code ec;
    const fs::file_status st = fs::status(folder, ec);
    constexpr std::string_view expected =
        "expected a GPT-2 folder: config.json, model.safetensors, vocab.json, merges.txt";
    if (!fs::exists(st)) {
      throw std::runtime_error(
          fmt::format("--weights: '{}' does not exist ({})", o.weights_dir, expected));
    }
    if (!fs::is_directory(st)) {
      throw std::runtime_error(
          fmt::format("--weights: '{}' is not a folder ({})", o.weights_dir, expected));
    }
  }
  // --data: its first line of at least 30 bytes is the default prompt (the chapter reads a corpus
  // only when given one).
  std::string default_prompt(kDefaultPrompt);
  if (common.data) {
    const attn::Corpus corpus = attn::load_corpus(common.data);
    std::string_view rest = corpus.text;
    while (!rest.empty()) {
      const std::string_view line = rest.substr(0, rest.find('\n'));
      if (line.size() >= 30) {
        default_prompt = std::string(line.substr(0, 200));
        break;
      }
      rest.remove_prefix(std::min(rest.size(), line.size() + 1));
    }
  }
  attn::Gpt2Model m = attn::load_gpt2(folder);
  // --mine: every tensor of model.safetensors checked and placed by the learner's tensor_offset
  // (ex14.2), which must find each where the library's reader did.
  if (common.mine) check_offsets_mine(folder / "model.safetensors");
  // --mine: every block's w_q, w_k, w_v cut from its fused c_attn by the learner's split_qkv
  // (ex14.1) instead of the library's (the fused matrix put back together first).
  if (common.mine) {
    for (attn::BlockWeights& b : m.weights.blocks) {
      const attn::Matrix fused = xt::concatenate(xt::xtuple(b.attn.w_q, b.attn.w_k, b.attn.w_v), 1);
      std::array<attn::Matrix, 3> qkv = ex14::split_qkv(fused);
      b.attn.w_q = std::move(qkv[0]);
      b.attn.w_k = std::move(qkv[1]);
      b.attn.w_v = std::move(qkv[2]);
    }
  }
  const attn::ModelSpec& s = m.spec;
  const std::size_t V = s.vocab_size;
  // The tokenizer of the folder, when it has one (chapter 13: vocab.json and merges.txt).
  const bool tokenizer = fs::exists(folder / "vocab.json") && fs::exists(folder / "merges.txt");
  std::optional<attn::Bpe> bpe;
  if (tokenizer) bpe = attn::Bpe::load(folder);
  if (bpe && bpe->vocab_size() > V) {
    throw attn::Gpt2Error(
        fmt::format("{}: vocab.json holds {} tokens, more than the model's "
                    "vocab_size {} (config.json)",
                    (folder / "vocab.json").string(), bpe->vocab_size(), V));
  }
  if (o.prompt_given && !o.prompt_ids.empty()) {
    throw attn::UsageError("--prompt and --prompt-ids both give the prompt: keep one");
  }
  if (o.prompt_given && !bpe) {
    throw attn::Gpt2Error(
        fmt::format("--prompt needs a tokenizer: {} has no vocab.json and "
                    "merges.txt (give --prompt-ids instead)",
                    folder.string()));
  }
  if (o.prompt_given && (o.prompt.empty() || o.prompt.size() > kMaxPromptBytes)) {
    throw attn::UsageError(
        fmt::format("--prompt must hold 1 to {} bytes, got {}", kMaxPromptBytes, o.prompt.size()));
  }
  // The prompt: ids as given, text through the tokenizer, or by default a line of verse (with a
  // tokenizer) or the end-of-text id GPT-2 starts a document with (the last of its vocabulary).
  std::vector<int> prompt;
  if (!o.prompt_ids.empty()) {
    prompt = parse_ids(o.prompt_ids, V);
  } else if (bpe) {
    prompt = bpe->encode(o.prompt_given ? std::string_view(o.prompt) : default_prompt);
    if (prompt.empty()) throw attn::UsageError("--prompt encodes to no tokens");
  } else {
    prompt = {static_cast<int>(V - 1)};
  }
  // --mine: the KV-cache step's q, k, v of every block by the learner's step_qkv (ex14.3),
  // against the rows of the full forward.
  if (common.mine) check_step_qkv_mine(m, prompt);
  attn::GenerateOptions g;
  g.max_new_tokens = o.tokens;
  g.temperature = o.temperature;
  g.top_k = o.top_k_given ? attn::parse_top_k(o.top_k_text, V) : 0;
  g.top_p = o.top_p;
  g.greedy = o.greedy;
  if (!o.raw) {
    ch14::FolderReport f;
    f.folder = shipped ? "tests/gpt2/tiny" : o.weights_dir;
    f.tokenizer = tokenizer;
    f.params_table = attn::param_count(attn::param_dims(s), s.n_layers);
    attn::visit_params(
        m.weights, m.weights, nullptr,
        [&](const attn::ParamRow&, const auto& t, const auto&) { f.params_loaded += t.size(); });
    ch14::show_folder(m, f);
    ch14::show_names(m);
    ch14::show_cache(s);
    ch14::show_trace(trace_prompt(m, prompt), std::min(prompt.size(), s.block_size), s.n_layers);
    attn::section(5, "Generation");
    fmt::print("prompt ids {}\n", attn::format_ids(prompt));
    if (bpe) fmt::print("prompt {}\n", attn::quote(attn::decode_utf8(bpe->decode(prompt))));
  }
  // 5. Generation, each token printed as soon as it is chosen.
  // Text as it comes (with a tokenizer), else the ids; --raw prints the whole continuation at
  // the end, decoded in one piece (exactly the tokenizer's decode of the new ids).
  bool first = true;
  std::optional<TextStream> text;
  if (bpe) text.emplace(*bpe);
  const attn::TokenCallback stream = [&](int id) {
    if (o.raw && bpe) return;
    if (text) {
      text->put(id);
      return;
    }
    fmt::print("{}{}", first ? "" : ",", id);
    std::fflush(stdout);
    first = false;
  };
  attn::Rng rng(common.seed);
  const auto t0 = Clock::now();
  const std::vector<int> generated =
      o.no_cache ? attn::lm_generate(m.weights, s, prompt, g, rng, stream)
                 : attn::lm_generate_cached(m.weights, s, prompt, g, rng, stream);
  const std::chrono::duration<double> seconds = Clock::now() - t0;
  ch14::GenerationReport r;
  r.prompt = prompt.size();
  r.generated = generated.size();
  r.cached = !o.no_cache;
  r.seconds = seconds.count();
  if (text && !o.raw) text->finish();
  if (o.raw && bpe) fmt::print("{}", bpe->decode(generated));
  if (o.raw) {
    if (common.timing) {
      fmt::print("\n");
      ch14::show_timing(r);
    }
    return;
  }
  fmt::print("\n");
  // The other loop, from the same seed: the cache changes nothing but the cost.
  attn::Rng other_rng(common.seed);
  const std::vector<int> other = o.no_cache
                                     ? attn::lm_generate_cached(m.weights, s, prompt, g, other_rng)
                                     : attn::lm_generate(m.weights, s, prompt, g, other_rng);
  r.compared = true;
  while (r.same < generated.size() && r.same < other.size() && generated[r.same] == other[r.same])
    ++r.same;
  ch14::show_generation(r, o.greedy);
  if (common.timing) ch14::show_timing(r);
}

}  // namespace

int main(int argc, char** argv) {
  attn::Cli cli("14_gpt2",
                "Chapter 14: GPT-2 on the course's own attention. Reads a Hugging Face GPT-2 "
                "folder (config.json, model.safetensors, vocab.json, merges.txt), maps every "
                "tensor to the course's parameter table and generates with chapter 10's KV "
                "cache. Without --weights: the small random GPT-2 of the tests "
                "(tests/gpt2/tiny).");
  Options o;
  cli.add_string("--weights", o.weights_dir,
                 "DIR: a GPT-2 folder as downloaded from Hugging Face (config.json, "
                 "model.safetensors; vocab.json and merges.txt for text)");
  cli.add_string("--prompt", o.prompt,
                 "TEXT: the prompt, encoded by the folder's tokenizer (at most 16384 bytes; "
                 "default: a line of verse, or with --data the first line of the corpus of at "
                 "least 30 bytes)");
  cli.add_string("--prompt-ids", o.prompt_ids,
                 "IDS: the prompt as token ids separated by commas, e.g. 464,2068,7586 (at most "
                 "4096; without a tokenizer the default is the end-of-text id, the last of the "
                 "vocabulary)");
  cli.add_size("--tokens", o.tokens, "N, tokens to generate", 1, kMaxTokens);
  cli.add_float("--temperature", o.temperature, "sampling temperature (> 0)", 0.0f);
  cli.add_string("--top-k", o.top_k_text,
                 "K: sample only among the K most likely tokens, 1 <= K <= V (default: all)");
  cli.add_float("--top-p", o.top_p,
                "P: sample only among the fewest most likely tokens whose probabilities add up "
                "to P, 0 < P <= 1 (default 1: all)",
                0.0f, 1.0f);
  cli.add_flag("--greedy", o.greedy, "always the most likely token (no sampling)");
  cli.add_flag("--no-cache", o.no_cache,
               "generate with lm_generate (a full forward per token) instead of the KV cache");
  cli.add_flag("--raw", o.raw, "print the generated continuation and nothing else");
  o.top_k_given = attn::flag_given(argc, argv, "--top-k");
  o.prompt_given = attn::flag_given(argc, argv, "--prompt");
  return cli.run(argc, argv, [&](const attn::CommonOptions& common) { run(common, o); });
}
