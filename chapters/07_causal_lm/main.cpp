// chapters/07_causal_lm/main.cpp: chapter 07, the causal language model (a GPT in miniature).
// The narrated walkthrough: the whole decoder and its parameter count, next-character logits for
// a prompt, generation with temperature and top-k, and the weights as a folder of .npy files.
// The model is never trained here (that comes later), so its text is noise. The math lives in
// common/src/model/model.cpp, npy.cpp and sample.cpp; this file calls it and tells the story.

#include <fmt/core.h>
#include <unistd.h>  // mkdtemp

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <numeric>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/model/block.hpp"
#include "attn/core/check.hpp"
#include "attn/io/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/core/limits.hpp"
#include "attn/ops/linear.hpp"
#include "attn/ops/loss.hpp"
#include "attn/model/model.hpp"
#include "attn/io/narrate.hpp"
#include "attn/io/npy.hpp"
#include "attn/io/plot.hpp"
#include "attn/io/print.hpp"
#include "attn/core/random.hpp"
#include "attn/model/sample.hpp"
#include "attn/io/text.hpp"
#include "exercises.hpp"

namespace {

using attn::flag_given;
using attn::section;
using attn::chars_of;

namespace fs = std::filesystem;
using attn::Matrix;
using attn::Tensor;
using Tokens = xt::xtensor<int, 2>;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kPromptMinLength = 30;  // the default prompt: the first line this long
constexpr std::size_t kPromptMaxLength = 200;  // ... cut to its first 200 characters

// Upper bounds of the flags (the input contract, CONTRIBUTING.md): each keeps a run within
// seconds on its own, with the other flags at their defaults; the model's parameters are also
// bounded together (limits::kMaxModelParameters).
constexpr std::size_t kMaxLayers = 48;
constexpr std::size_t kMaxChannels = 512;
constexpr std::size_t kMaxHeads = 64;
constexpr std::size_t kMaxBlockSize = 4096;
constexpr std::size_t kMaxNewTokens = 2000;
constexpr std::size_t kMaxPromptFlagLength = 4096;  // characters of --prompt

// ---- The functions the walkthrough calls: from attn:: (the reference) or, with --mine, the
// learner's ex07:: exercises.
struct Kernels {
  Tensor<3> (*embed)(const Tokens&, const Matrix& wte, const Matrix& wpe);  // ex07.1
  Tensor<3> (*tied_logits)(const Tensor<3>& x, const Matrix& wte);         // ex07.2
  Tensor<3> (*lm_forward)(const Tokens&, const attn::LmWeights&,
                          const attn::LmConfig&);                          // ex07.3
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
      xt::view(x, b, t, xt::all()) = xt::row(wte, id) + xt::row(wpe, static_cast<std::ptrdiff_t>(t));
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
  std::size_t layers = 2;
  std::size_t channels = 64;
  std::size_t heads = 4;
  std::size_t block_size = 32;
  std::size_t max_new_tokens = 100;
  float temperature = 1.0f;
  std::string prompt;      // empty: the first line of the corpus with kPromptMinLength characters
  std::string top_k_text;  // empty: no top-k filtering
  std::string weights_dir;
  std::string export_dir;
  bool prompt_given = false;  // told apart from the default: --prompt "" is an error
  bool top_k_given = false;
};


// ---- Narration helpers.


std::string num(double value, int precision = 4) {
  return attn::format_number(static_cast<float>(value), precision);
}


// One character for a table: 'a', '\n', ' '.
std::string char_name(char32_t c) {
  return c == U' ' ? attn::printable(c) : "'" + attn::printable(c) + "'";
}

// "1 character", "42 characters".
std::string plural(std::size_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

std::string shape_text(const Tensor<3>& x) { return attn::shape_str(x.shape()); }

// Population standard deviation of every element, in double: how big the values are.
double std_of(const Tensor<3>& x) {
  double mean = 0.0;
  for (const float v : x) mean += static_cast<double>(v);
  mean /= static_cast<double>(x.size());
  double var = 0.0;
  for (const float v : x) var += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean);
  return std::sqrt(var / static_cast<double>(x.size()));
}

double max_abs_difference(const Tensor<3>& a, const Tensor<3>& b) {
  if (a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(a.data()[i]) -
                                     static_cast<double>(b.data()[i])));
  return worst;
}

std::string difference_text(double d) {
  return d == 0.0 ? "0 (bitwise identical)" : attn::format_number(static_cast<float>(d), 8);
}

// Entropy in nats of a distribution: log V when uniform, 0 when one token is certain.
double entropy(std::span<const float> probs) {
  double h = 0.0;
  for (const float p : probs)
    if (p > 0.0f) h -= static_cast<double>(p) * std::log(static_cast<double>(p));
  return h;
}

// The distribution sample_top_k draws from: softmax(logits / temperature) kept on the k largest
// logits (ties: lower id), renormalised. For the table of section 3 only.
std::vector<float> top_k_probs(std::span<const float> logits, float temperature, std::size_t k) {
  const attn::Vector probs = attn::probs_with_temperature(logits, temperature);  // (V,)
  std::vector<std::size_t> order(logits.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return logits[a] > logits[b]; });
  std::vector<float> kept(logits.size(), 0.0f);
  double sum = 0.0;
  for (std::size_t r = 0; r < k; ++r) sum += static_cast<double>(probs(order[r]));
  for (std::size_t r = 0; r < k; ++r)
    kept[order[r]] = static_cast<float>(static_cast<double>(probs(order[r])) / sum);
  return kept;
}

// The last position's logits of a (1, T, V) tensor.
std::span<const float> last_row(const Tensor<3>& logits) {
  const std::size_t T = logits.shape()[1], V = logits.shape()[2];
  return {logits.data() + (T - 1) * V, V};
}

Tokens as_batch(std::span<const int> ids) {
  Tokens tokens({1, ids.size()});  // (1, T)
  std::copy(ids.begin(), ids.end(), tokens.begin());
  return tokens;
}

// The generation loop of attn::lm_generate, written with the chapter's kernels so that --mine
// runs the learner's forward pass and sampler. Returns only the new tokens.
std::vector<int> generate(const Kernels& k, const attn::LmWeights& w, const attn::LmConfig& config,
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

std::size_t distinct(std::span<const int> ids) { return std::set<int>(ids.begin(), ids.end()).size(); }

// ---- Checks on the flags and the model folder, before anything is printed.

std::size_t parse_top_k(const Options& o, std::size_t V) {
  if (!o.top_k_given) return 0;
  long long k = 0;
  const char* begin = o.top_k_text.data();
  const char* end = begin + o.top_k_text.size();
  const auto [ptr, ec] = std::from_chars(begin, end, k);
  if (ec != std::errc{} || ptr != end) {
    throw attn::UsageError(fmt::format("--top-k expects an integer, got '{}'", o.top_k_text));
  }
  if (k < 1) throw attn::UsageError(fmt::format("--top-k must be at least 1, got {}", k));
  if (static_cast<unsigned long long>(k) > V) {
    throw attn::UsageError(fmt::format(
        "--top-k must be at most V = {} (the vocabulary size), got {}", V, k));
  }
  return static_cast<std::size_t>(k);
}

// The number of blocks h0, h1, ... that a model folder holds (by their h{i}.w_q.npy).
std::size_t blocks_in(const fs::path& dir) {
  std::size_t n = 0;
  while (fs::exists(dir / fmt::format("h{}.w_q.npy", n))) ++n;
  return n;
}

// The flags' sizes together: the parameters of the model they describe, checked (no product may
// wrap around) and bounded, before anything is drawn. A usage error: the flags are too large.
void check_model_size(const Options& o) {
  const std::size_t C = o.channels, L = o.layers;
  const std::size_t per_block = 12 * C * C + 13 * C;  // C <= 1024: no overflow
  const std::size_t params = L * per_block + o.block_size * C + 2 * C;  // + V * C, checked later
  if (params > attn::limits::kMaxModelParameters) {
    throw attn::UsageError(fmt::format(
        "--layers {} --channels {} --block-size {} make a model of {} parameters (before the "
        "embedding), more than the limit of {}: lower --layers or --channels",
        L, C, o.block_size, params, attn::limits::kMaxModelParameters));
  }
}

// Section 3 generates max_new_tokens tokens six times (the sample, lm_generate's copy, four
// other settings); each token is one forward pass over the last min(length, T_max) tokens.
// Its floating-point operations, estimated in double, are bounded so that no combination of
// flags runs for minutes: 2 T (12 C^2 L + V C) for the weights, 4 L T^2 C for attention.
constexpr double kMaxGenerationWork = 2.5e11;  // some seconds on one core of a laptop

void check_generation_work(const attn::LmConfig& c, std::size_t prompt, std::size_t new_tokens) {
  const double C = static_cast<double>(c.n_embd), L = static_cast<double>(c.n_layers);
  const double V = static_cast<double>(c.vocab_size);
  double work = 0.0;
  for (std::size_t i = 0; i < new_tokens; ++i) {
    const double T = static_cast<double>(std::min(prompt + i, c.block_size));
    work += 6.0 * (2.0 * T * (12.0 * C * C * L + V * C) + 4.0 * L * T * T * C);
  }
  if (work > kMaxGenerationWork) {
    throw attn::UsageError(fmt::format(
        "--max-new-tokens {} with L = {}, C = {}, T_max = {} is about {:.1e} floating-point "
        "operations of generation, more than the limit of {:.1e}: lower --max-new-tokens, "
        "--block-size, --channels or --layers",
        new_tokens, c.n_layers, c.n_embd, c.block_size, work, kMaxGenerationWork));
  }
}

struct Model {
  attn::LmConfig config;
  attn::LmWeights weights;
  std::string origin;      // for the narration
  bool untrained = true;   // false with --weights: the files may hold a trained model
};

Model make_model(const Options& o, std::size_t V, std::uint64_t seed) {
  Model m;
  if (o.weights_dir.empty()) {
    m.config.vocab_size = V;
    m.config.block_size = o.block_size;
    m.config.n_embd = o.channels;
    m.config.n_heads = o.heads;
    m.config.n_layers = o.layers;
    attn::Rng rng(seed, 3);  // its own stream: the initial weights do not move with sampling
    m.weights = attn::lm_init(rng, m.config);
    m.origin = fmt::format("random initialisation (seed {}), untrained", seed);
    return m;
  }
  const fs::path dir(o.weights_dir);
  if (!fs::is_directory(dir)) {
    throw std::runtime_error(fmt::format("--weights: '{}' is not a folder", o.weights_dir));
  }
  if (const std::size_t found = blocks_in(dir); found > o.layers) {
    throw attn::UsageError(fmt::format(
        "--layers {} but model '{}' has {} blocks (h0 to h{}): pass --layers {}", o.layers,
        o.weights_dir, found, found - 1, found));
  }
  // --heads is a usage error, so it is checked against C (the width of wte.npy) before
  // load_lm; a missing or broken wte.npy is left for load_lm to report.
  try {
    const attn::NpyArray wte = attn::read_npy(dir / "wte.npy");
    if (wte.shape.size() == 2 && wte.shape[0] > 0 && wte.shape[1] > 0 &&
        wte.shape[1] % o.heads != 0) {
      throw attn::UsageError(fmt::format(
          "--heads {} does not divide C = {} of model '{}' (every head gets C / H channels)",
          o.heads, wte.shape[1], o.weights_dir));
    }
  } catch (const attn::UsageError&) {
    throw;
  } catch (const std::exception&) {
  }
  m.weights = attn::load_lm(dir, o.layers, o.heads, m.config);
  if (m.config.vocab_size != V) {
    throw std::runtime_error(fmt::format(
        "model '{}' has a vocabulary of {} tokens (wte.npy is ({}, {})) but the corpus has {} "
        "characters: use the corpus it was made with (--data)",
        o.weights_dir, m.config.vocab_size, m.config.vocab_size, m.config.n_embd, V));
  }
  m.origin = fmt::format("loaded from '{}'", o.weights_dir);
  m.untrained = false;
  return m;
}

// ---- The walkthrough.

// 1. The architecture and where its parameters are.
void show_architecture(const Model& m) {
  const attn::LmConfig& c = m.config;
  const std::size_t V = c.vocab_size, C = c.n_embd, T_max = c.block_size, L = c.n_layers;
  const std::size_t F = 4 * C;
  section(1, "The whole decoder");
  fmt::print(
      "A causal language model reads T tokens and returns, at every position t, V scores\n"
      "(logits) for the token after position t. It is chapters 04-06 stacked:\n"
      "  tokens                           (B, T)      ids in [0, V)\n"
      "  x = wte[tokens] + wpe[0..T)      (B, T, C)   token embedding + learned position\n"
      "  x = block_l(x), l = 0..L-1       (B, T, C)   pre-norm, causal attention, GELU FFN\n"
      "  x = ln_f(x)                      (B, T, C)   final LayerNorm\n"
      "  logits = x @ wte^T               (B, T, V)   output projection tied to the embedding\n");
  fmt::print("Here V = {}, C = {}, T_max = {}, L = {}, H = {} (head size {}), F = 4C = {}.\n", V,
             C, T_max, L, c.n_heads, C / c.n_heads, F);

  const std::size_t embedding = m.weights.wte.size();
  const std::size_t positions = m.weights.wpe.size();
  std::size_t blocks = 0;
  for (const attn::BlockWeights& b : m.weights.blocks) blocks += attn::parameter_count(b);
  const std::size_t final_ln = m.weights.ln_f_gamma.size() + m.weights.ln_f_beta.size();
  const std::size_t total = embedding + positions + blocks + final_ln;
  const auto row = [total](std::string_view what, std::size_t n) {
    fmt::print("  {:<44} {:>9}  {:>5}%\n", what, n,
               num(100.0 * static_cast<double>(n) / static_cast<double>(total), 1));
  };
  fmt::print("\nParameters (counted from the tensors):\n");
  row(fmt::format("token embedding wte ({}, {})", V, C), embedding);
  row(fmt::format("positions wpe ({}, {})", T_max, C), positions);
  for (std::size_t l = 0; l < L; ++l)
    row(fmt::format("block {}", l), attn::parameter_count(m.weights.blocks[l]));
  row(fmt::format("final LayerNorm ln_f, gamma and beta ({},)", C), final_ln);
  fmt::print("  {:<44} {:>9}\n", "total", total);
  fmt::print(
      "A block is 4C^2 (w_q, w_k, w_v, w_o) + 2CF + F + C (FFN) + 4C (two LayerNorms)\n"
      "= {} + {} + {} = {} (attn::block_param_count), so the blocks grow as 12 C^2\n"
      "while the embedding grows as V C.\n",
      4 * C * C, 2 * C * F + F + C, 4 * C, attn::block_param_count(C, F));
  fmt::print(
      "\nTying: there is no separate (C, V) output matrix. The logit of token v is the dot\n"
      "product of the final vector with wte[v], the very row that embeds v: one table both reads\n"
      "and writes tokens. That saves V * C = {} parameters: an untied model would be {}% larger\n"
      "than this one. In GPT-2 small (V = 50257, C = 768) it saves 38.6 million parameters on top\n"
      "of 124 million.\n",
      V * C, num(100.0 * static_cast<double>(V * C) / static_cast<double>(total), 1));
}

struct Prompt {
  std::vector<int> ids;      // the whole prompt
  std::vector<int> context;  // its last min(T, T_max) tokens: what the model sees
};

// 2. Logits for the prompt, step by step and in one call; the untrained loss.
Tensor<3> show_logits(const Kernels& k, const Model& m, const attn::Vocab& vocab,
                      const Prompt& p) {
  const attn::LmConfig& c = m.config;
  const std::size_t V = c.vocab_size, T_max = c.block_size;
  section(2, "Logits for a prompt");
  fmt::print("prompt {} ({})\n", attn::quote(chars_of(vocab, p.ids)), plural(p.ids.size(), "character"));
  if (p.ids.size() > T_max) {
    fmt::print(
        "That is longer than T_max = {}: wpe has no row for position {}, so the model reads\n"
        "the last {} characters only: {}\n",
        T_max, T_max, T_max, attn::quote(chars_of(vocab, p.context)));
  }
  const Tokens tokens = as_batch(p.context);  // (1, T)
  const std::size_t T = p.context.size();
  fmt::print("tokens (B, T) = (1, {}): {}\n", T, attn::format_ids(p.context));

  fmt::print("\nThe forward pass step by step (std = standard deviation of all the values):\n");
  Tensor<3> x = k.embed(tokens, m.weights.wte, m.weights.wpe);  // (1, T, C)
  fmt::print("  {:<26} {:<14} std {}\n", "x = wte[tokens] + wpe", shape_text(x), num(std_of(x)));
  attn::BlockConfig block_config;
  block_config.n_heads = c.n_heads;  // causal, pre-norm, GELU, eps 1e-5: the defaults
  for (std::size_t l = 0; l < c.n_layers; ++l) {
    x = attn::block_forward(x, m.weights.blocks[l], block_config).out;  // (1, T, C)
    fmt::print("  {:<26} {:<14} std {}\n", fmt::format("x = block_{}(x)", l), shape_text(x),
               num(std_of(x)));
  }
  x = attn::layer_norm(x, m.weights.ln_f_gamma, m.weights.ln_f_beta);  // (1, T, C)
  fmt::print("  {:<26} {:<14} std {}\n", "x = ln_f(x)", shape_text(x), num(std_of(x)));
  const Tensor<3> stepwise = k.tied_logits(x, m.weights.wte);  // (1, T, V)
  fmt::print("  {:<26} {:<14} std {}\n", "logits = x @ wte^T", shape_text(stepwise),
             num(std_of(stepwise)));
  const Tensor<3> logits = k.lm_forward(tokens, m.weights, m.config);  // (1, T, V)
  fmt::print("lm_forward in one call gives the same logits: max |difference| {}\n",
             difference_text(max_abs_difference(logits, stepwise)));
  attn::claim(max_abs_difference(logits, stepwise) < 1e-4, "lm_forward gives the same logits");
  if (m.untrained) {
    const double expected = 0.02 * std::sqrt(static_cast<double>(c.n_embd));
    attn::claim(std_of(stepwise) > 0.5 * expected && std_of(stepwise) < 2.0 * expected,
                "the logits have a spread of about 0.02 sqrt(C)");
    fmt::print(
        "The weights start as N(0, 0.02^2): the embeddings are tiny, each block adds a little, and\n"
        "ln_f rescales every vector to mean 0 and variance 1. Its dot product with a row of wte\n"
        "({} terms of size ~0.02) is a logit of size ~0.02 * sqrt({}) = {}: nearly equal scores.\n",
        c.n_embd, c.n_embd, num(0.02 * std::sqrt(static_cast<double>(c.n_embd)), 2));
  }

  // The next character: the last position's logits.
  const std::span<const float> last = last_row(logits);
  const attn::Vector probs = attn::probs_with_temperature(last, 1.0f);  // (V,)
  std::vector<int> order(V);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return probs(static_cast<std::size_t>(a)) > probs(static_cast<std::size_t>(b));
  });
  const char32_t last_char = vocab.char_of(p.context.back());
  fmt::print("\nlogits[0, {}] scores the character after {}. The 5 most likely:\n", T - 1,
             attn::quote(chars_of(vocab, std::span<const int>(p.context).last(std::min<std::size_t>(T, 12)))));
  for (std::size_t r = 0; r < std::min<std::size_t>(5, V); ++r) {
    const auto id = static_cast<std::size_t>(order[r]);
    fmt::print("  {:>5}  logit {:>7}  p = {}\n", char_name(vocab.char_of(order[r])),
               num(last[id]), num(probs(id)));
  }
  fmt::print("  uniform over V = {}: p = {}\n", V, num(1.0 / static_cast<double>(V)));
  if (m.untrained && vocab.char_of(order[0]) == last_char) {
    fmt::print(
        "The favourite is {}, the last character of the prompt. That is tying at work: the\n"
        "final vector is still mostly wte[{}] + wpe[{}] (the blocks only added small\n"
        "corrections), and of all the rows of wte the one most aligned with it is wte[{}]\n"
        "itself. Training will change that.\n",
        char_name(last_char), char_name(last_char), T - 1, char_name(last_char));
  }

  // The loss: position t predicts token t+1, over the T-1 positions that have a target.
  if (T >= 2) {
    const Matrix rows = xt::view(logits, 0, xt::range(0, T - 1), xt::all());  // (T-1, V)
    const std::vector<int> targets(p.context.begin() + 1, p.context.end());
    const double loss = attn::cross_entropy(rows, targets);
    fmt::print(
        "\nThe language-model loss on the prompt: position t predicts character t+1, {},\n"
        "mean -log p(target) = {}. A uniform guess scores log V = log {} = {}.\n",
        plural(T - 1, "prediction"), num(loss), V, num(std::log(static_cast<double>(V))));
    if (m.untrained) {
      const double log_v = std::log(static_cast<double>(V));
      fmt::print(
          "Small random weights give nearly equal logits, so nearly uniform probabilities and a\n"
          "loss near log V: the model knows nothing yet.\n");
      if (loss > log_v) {
        fmt::print(
            "Here it is {} above log V, as it must be on average: preferences that have\n"
            "nothing to do with the text cost more on the characters they neglect than they win\n"
            "on the ones they favour.\n",
            num(loss - log_v));
      } else {
        fmt::print(
            "Here it is {} below log V, by luck: only on average must random preferences\n"
            "cost more on the characters they neglect than they win on the ones they favour, and\n"
            "this prompt's characters happen to be among the favoured.\n",
            num(log_v - loss));
      }
      attn::claim(std::abs(loss - log_v) < 0.5, "an untrained model's loss is near log V");
      fmt::print("Training lowers it: it needs a gradient for every weight.\n");
    }
  } else {
    fmt::print("\nA one-character prompt has no target inside it, so there is no loss to show.\n");
  }
  return logits;
}

// 3. Generation with temperature and top-k.
void show_generation(const Kernels& k, const Model& m, const attn::Vocab& vocab, const Prompt& p,
                     const Tensor<3>& logits, const attn::GenerateOptions& g,
                     std::uint64_t seed, bool timing) {
  const attn::LmConfig& c = m.config;
  const std::size_t V = c.vocab_size;
  section(3, "Generation");
  fmt::print(
      "Generating is a loop: crop the text to its last T_max = {} tokens, run the model, take\n"
      "the logits of the last position, divide them by the temperature, keep the k largest\n"
      "(top-k), softmax, draw one token, append it, repeat.\n",
      c.block_size);

  // The next-token distribution under a few settings.
  const std::span<const float> last = last_row(logits);
  fmt::print(
      "\nThe distribution of the next character after the prompt under different settings\n"
      "(entropy in nats; exp(entropy) is the number of equally likely characters it is worth):\n");
  fmt::print("  {:<28} {:>8} {:>14} {:>9}\n", "setting", "entropy", "exp(entropy)", "top p");
  const auto row = [&](const std::string& name, float temperature, std::size_t top_k) {
    const std::vector<float> probs = top_k_probs(last, temperature, top_k);
    const double h = entropy(probs);
    fmt::print("  {:<28} {:>8} {:>14} {:>9}\n", name, num(h), num(std::exp(h), 1),
               num(*std::max_element(probs.begin(), probs.end())));
  };
  fmt::print("  {:<28} {:>8} {:>14} {:>9}\n", "uniform", num(std::log(static_cast<double>(V))),
             num(static_cast<double>(V), 1), num(1.0 / static_cast<double>(V)));
  for (const float t : {0.5f, 1.0f, 1.5f}) row(fmt::format("temperature {}", num(t, 1)), t, V);
  row("temperature 1.0, top-k 5", 1.0f, std::min<std::size_t>(5, V));
  row("temperature 0.1", 0.1f, V);
  if (m.untrained) {
    // The sentence below, measured: the entropies at 0.5 and 1.5 within 10% of log V, and the
    // favourite's probability at 0.1.
    const double log_v = std::log(static_cast<double>(V));
    const double h_cold = entropy(top_k_probs(last, 0.5f, V));
    const double h_hot = entropy(top_k_probs(last, 1.5f, V));
    const std::vector<float> p01 = top_k_probs(last, 0.1f, V);
    const double top01 = *std::max_element(p01.begin(), p01.end());
    if (h_cold > 0.9 * log_v && h_hot > 0.9 * log_v) {
      fmt::print(
          "The logits are so close together that temperatures of 0.5 to 1.5 barely change the\n"
          "distribution (their entropy is within 10% of log V)");
      if (top01 > 0.3) {
        fmt::print(";\nit takes a temperature as low as 0.1 to make the favourite stand out.\n");
      } else {
        fmt::print(";\neven at 0.1 the favourite has only p = {}.\n", num(top01));
      }
    } else {
      fmt::print("The logits are far enough apart that the temperature matters: the entropy goes\n"
                 "from {} at 0.5 to {} at 1.5.\n",
                 num(h_cold), num(h_hot));
    }
    fmt::print("Top-k changes it at once: k characters remain, whatever their logits.\n");
  }

  // The sample with the flags' settings.
  const auto t0 = Clock::now();
  attn::Rng rng(seed, 4);
  const std::vector<int> sample = generate(k, m.weights, c, p.ids, g, rng);
  const std::chrono::duration<double> took = Clock::now() - t0;
  attn::Rng library_rng(seed, 4);
  const std::vector<int> library = attn::lm_generate(m.weights, c, p.ids, g, library_rng);
  const std::string top_k_text = g.top_k == 0 ? "off" : std::to_string(g.top_k);
  fmt::print("\n{} new characters, temperature {}, top-k {} (--max-new-tokens, --temperature, --top-k):\n",
             g.max_new_tokens, attn::format_significant(g.temperature), top_k_text);
  fmt::print("\n{}{}\n\n", attn::terminal_safe(chars_of(vocab, p.ids)),
             attn::terminal_safe(chars_of(vocab, sample)));
  fmt::print("attn::lm_generate with the same seed draws the same {} tokens: {}\n", sample.size(),
             sample == library ? "yes" : "NO (check ex07.3 and ex07.4)");
  const std::size_t total = p.ids.size() + sample.size();
  if (total - 1 > c.block_size) {  // the last step read the first total - 1 tokens
    fmt::print(
        "The text grew to {} tokens; each step fed the model at most the last {} (the last step\n"
        "saw tokens {} to {}), so anything earlier no longer influences what comes next.\n",
        total, plural(c.block_size, "token"), total - 1 - c.block_size, total - 2);
  }
  if (m.untrained) {
    // How flat the distribution the sample was drawn from is, at these settings (first step).
    const std::vector<float> drawn = top_k_probs(last, g.temperature, g.top_k == 0 ? V : g.top_k);
    const double h = entropy(drawn);
    if (h > 0.9 * std::log(static_cast<double>(V))) {
      fmt::print(
          "It is noise, and honest noise: the weights are random, so every character is drawn\n"
          "from a nearly uniform distribution. Nothing here knows that 'q' wants a 'u'.\n");
    } else {
      fmt::print(
          "It is noise, and honest noise: the weights are random. These settings leave about {}\n"
          "equally likely characters (exp(entropy) at the first step), chosen by random\n"
          "preferences, not by the text. Nothing here knows that 'q' wants a 'u'.\n",
          num(std::exp(h), 1));
    }
  }
  if (timing) {
    fmt::print("(generation took {} ms, {} ms per token)\n", num(took.count() * 1000.0, 1),
               num(took.count() * 1000.0 / static_cast<double>(std::max<std::size_t>(sample.size(), 1)), 2));
  }

  // Same prompt, same seed, other settings.
  fmt::print("\nThe same prompt and seed with other settings ({} characters each):\n", g.max_new_tokens);
  fmt::print("  {:<26} {:>9} {:>8}  {}\n", "setting", "distinct", "repeats", "start of the sample");
  const auto compare = [&](const std::string& name, float temperature, std::size_t top_k) {
    attn::GenerateOptions other = g;
    other.temperature = temperature;
    other.top_k = top_k;
    attn::Rng r(seed, 4);
    const std::vector<int> s = generate(k, m.weights, c, p.ids, other, r);
    std::size_t repeats = 0;  // a character equal to the one before it
    for (std::size_t i = 0; i < s.size(); ++i)
      repeats += s[i] == (i == 0 ? p.ids.back() : s[i - 1]) ? 1 : 0;
    const std::vector<int> head(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(s.size(), 30)));
    fmt::print("  {:<26} {:>9} {:>8}  {}\n", name, distinct(s), repeats,
               attn::quote(chars_of(vocab, head)));
    return repeats;
  };
  compare("temperature 0.5", 0.5f, 0);
  const std::size_t repeats_hot = compare("temperature 1.5", 1.5f, 0);
  compare("temperature 1.0, top-k 5", 1.0f, std::min<std::size_t>(5, V));
  const std::size_t repeats_low = compare("temperature 0.1", 0.1f, 0);
  fmt::print(
      "distinct: how many different characters the sample uses (the vocabulary has {});\n"
      "repeats: how often a character equals the one before it.\n",
      V);
  if (m.untrained) {
    fmt::print(
        "One seed means one stream of uniform draws, so where the distributions are nearly flat\n"
        "the samples pick the same or neighbouring characters whatever the temperature. Top-k\n"
        "and a low temperature leave few candidates");
    if (repeats_low > repeats_hot) {
      fmt::print(
          ", and the favourite is often the character\n"
          "just written (section 2), hence the repeats: {} at temperature 0.1, {} at 1.5.\n",
          repeats_low, repeats_hot);
    } else {
      fmt::print(", yet here they repeat no more than the others.\n");
    }
  }
}

// 4. The weights as a folder of .npy files; a save/load round trip.
void show_weights(const Kernels& k, const Model& m, const Prompt& p, const Tensor<3>& logits,
                  const std::string& export_dir) {
  section(4, "Saving and loading the weights");
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

  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".npy") names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  std::uintmax_t bytes = 0;
  for (const std::string& n : names) bytes += fs::file_size(dir / n);
  fmt::print(
      "attn::save_lm writes one .npy file per tensor, the names of model.hpp; attn::load_lm reads\n"
      "them back. For this model, {} files, {} bytes (float32, 4 bytes a number, plus a\n"
      "header of about 128 bytes each):\n",
      names.size(), bytes);
  for (const std::string& n : names) {
    const bool other_block = n.rfind("h", 0) == 0 && n.rfind("h0.", 0) != 0;
    if (other_block) continue;
    const attn::NpyArray a = attn::read_npy(dir / n);
    fmt::print("  {:<18} {:<10} '{}'\n", n, attn::shape_str(a.shape), a.descr);
  }
  fmt::print("  {:<29} the architecture: n_layers, n_heads and the variant (chapter 09)\n",
             "model.txt");
  if (m.config.n_layers == 2) {
    fmt::print("  {:<29} the same 12 names for block 1\n", "h1.*.npy");
  } else if (m.config.n_layers > 2) {
    fmt::print("  {:<29} the same 12 names for blocks 1 to {}\n",
               fmt::format("h1.*.npy ... h{}.*.npy", m.config.n_layers - 1), m.config.n_layers - 1);
  }

  attn::LmConfig loaded_config;
  const attn::LmWeights loaded = attn::load_lm(dir, m.config.n_layers, m.config.n_heads, loaded_config);
  const Tensor<3> again = k.lm_forward(as_batch(p.context), loaded, loaded_config);  // (1, T, V)
  fmt::print(
      "\nRound trip: save_lm to a temporary folder, load_lm back (V, T_max and C are read from\n"
      "wte and wpe; L and H come from --layers and --heads), the same prompt again:\n"
      "  max |difference| of the logits: {}\n",
      difference_text(max_abs_difference(again, logits)));
  attn::claim(max_abs_difference(again, logits) == 0.0, "every bit survives the round trip");
  fmt::print(
      "float32 in, float32 out: every bit survives. From the command line, the same is\n"
      "  07_causal_lm --export DIR       then       07_causal_lm --weights DIR\n"
      "and a model exported from PyTorch runs with --weights unchanged. This course computes\n"
      "x @ W with W (in, out), as GPT-2's Conv1D layers store it; PyTorch's nn.Linear stores\n"
      "W as (out, in) and computes x @ W^T, so an exporter transposes nn.Linear weights and\n"
      "copies Conv1D ones as they are (docs/07-causal-lm.md has the script).\n");
  if (!export_dir.empty()) {
    fmt::print("\n--export: the same {} files are in '{}'.\n", names.size(), export_dir);
  }
}

// The whole model as a picture, for --svg.
std::vector<attn::DiagramNode> model_diagram(const attn::LmConfig& c) {
  using Kind = attn::DiagramNode::Kind;
  const std::string btc = "(B, T, C), C = " + std::to_string(c.n_embd);
  std::vector<attn::DiagramNode> n;
  n.push_back({Kind::text, "tokens", "(B, T) ids in [0, V), V = " + std::to_string(c.vocab_size),
               0, false});
  n.push_back({Kind::box, "x = wte[tokens] + wpe[0..T)",
               fmt::format("token ({}, {}) + position ({}, {}) tables", c.vocab_size, c.n_embd,
                           c.block_size, c.n_embd),
               0, false});
  const std::string block_note = fmt::format("pre-norm, causal, {} heads, GELU FFN", c.n_heads);
  if (c.n_layers <= 4) {
    for (std::size_t l = 0; l < c.n_layers; ++l)
      n.push_back({Kind::box, fmt::format("transformer block {} (chapter 06)", l), block_note, 0,
                   true});
  } else {
    n.push_back({Kind::box, fmt::format("transformer blocks 0 .. {} (chapter 06)", c.n_layers - 1),
                 block_note, 0, true});
  }
  n.push_back({Kind::box, "final LayerNorm ln_f", btc, 0, false});
  n.push_back({Kind::box, "logits = x @ wte^T", "tied: the embedding table scores the tokens",
               0, false});
  n.push_back({Kind::text, "logits", "(B, T, V): row t scores the token after t", 0, false});
  return n;
}

// Each head's attention in the last layer, over the prompt's context, for --svg.
std::vector<std::string> write_head_maps(const fs::path& dir, const Model& m,
                                         const attn::Vocab& vocab, const Prompt& p,
                                         const Tensor<3>& logits) {
  const attn::LmForward f = attn::lm_forward_with_weights(as_batch(p.context), m.weights, m.config);
  attn::claim(max_abs_difference(f.logits, logits) == 0.0,
              "keeping the attention weights changes no logit");
  const std::size_t L = m.config.n_layers, T = p.context.size();
  const Tensor<4>& a = f.weights[L - 1];  // (1, H, T, T)
  std::vector<std::string> labels;
  for (const int id : p.context) {
    const char32_t c = vocab.char_of(id);
    labels.push_back(c == U' ' ? "\u2423" : attn::printable(c));  // a visible space
  }
  std::vector<std::string> paths;
  for (std::size_t h = 0; h < m.config.n_heads; ++h) {
    const Matrix w = xt::view(a, 0, h, xt::all(), xt::all());  // (T, T)
    attn::HeatmapOptions o;
    o.title = fmt::format("layer {}, head {}: attention over the prompt (T = {}){}", L - 1, h, T,
                          m.untrained ? ", untrained" : "");
    o.row_labels = labels;
    o.col_labels = labels;
    o.vmin = 0.0f;
    o.vmax = 1.0f;
    o.annotate = T <= 12;
    const fs::path path = dir / fmt::format("attention_l{}_h{}.svg", L - 1, h);
    attn::write_svg(path, attn::heatmap_svg(w, o));
    paths.push_back(path.string());
  }
  return paths;
}

void run(const attn::CommonOptions& common, const Options& o) {
  const auto t_start = Clock::now();
  const Kernels k = common.mine ? learner_kernels() : reference_kernels();
  if (o.prompt_given && o.prompt.empty()) throw attn::UsageError("--prompt must not be empty");
  if (o.weights_dir.empty()) check_model_size(o);
  if (o.weights_dir.empty() && o.channels % o.heads != 0) {
    throw attn::UsageError(fmt::format(
        "--heads {} does not divide --channels {} (every head gets C / H channels)", o.heads,
        o.channels));
  }

  const attn::Corpus corpus = attn::load_corpus(common.data);
  const attn::Vocab vocab = attn::Vocab::from_text(corpus.text);
  const std::size_t V = vocab.size();
  const std::size_t top_k = parse_top_k(o, V);

  // The prompt: the flag, or the first line of the corpus with kPromptMinLength characters.
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
        throw std::runtime_error(fmt::format(
            "--prompt: character {} (U+{:04X}) is not in the vocabulary of this corpus ({} "
            "characters)",
            char_name(c), static_cast<std::uint32_t>(c), V));
      }
    }
  } else {
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
  }

  const Model m = make_model(o, V, common.seed);
  if (!o.export_dir.empty()) attn::save_lm(o.export_dir, m.weights, m.config);  // fail before the story
  Prompt p;
  p.ids = vocab.encode(attn::encode_utf8(prompt));
  const std::size_t T = std::min(p.ids.size(), m.config.block_size);
  p.context.assign(p.ids.end() - static_cast<std::ptrdiff_t>(T), p.ids.end());
  check_generation_work(m.config, p.ids.size(), o.max_new_tokens);

  fmt::print("Chapter 07: the causal language model\n");
  fmt::print("seed {}, corpus {}, functions: {}\n", common.seed, corpus.origin,
             common.mine ? "yours (ex07::, --mine)" : "the reference (attn::)");
  fmt::print("model: {}\n", m.origin);
  if (!o.weights_dir.empty()) {
    fmt::print("(V, C and T_max come from the files; --channels and --block-size are not used)\n");
  }

  show_architecture(m);
  const auto t_forward = Clock::now();
  const Tensor<3> logits = show_logits(k, m, vocab, p);
  const std::chrono::duration<double> forward_time = Clock::now() - t_forward;
  attn::GenerateOptions g;
  g.max_new_tokens = o.max_new_tokens;
  g.temperature = o.temperature;
  g.top_k = top_k;
  show_generation(k, m, vocab, p, logits, g, common.seed, common.timing);
  show_weights(k, m, p, logits, o.export_dir);
  if (common.svg_dir) {
    const fs::path model_path = *common.svg_dir / "causal_lm.svg";
    attn::write_svg(model_path,
                    attn::diagram_svg(fmt::format("The causal language model, L = {}",
                                                  m.config.n_layers),
                                      model_diagram(m.config)));
    const std::vector<std::string> maps = write_head_maps(*common.svg_dir, m, vocab, p, logits);
    fmt::print("\nwrote {}, and {} .. {}\n", model_path.string(), maps.front(), maps.back());
  }
  fmt::print(
      "\nWhat this model lacks is training: the loss of section 2 needs a gradient for every\n"
      "weight (backpropagation). docs/performance.md looks at where the time goes.\n");
  if (common.timing) {
    const std::chrono::duration<double> total = Clock::now() - t_start;
    fmt::print("(section 2: {} ms; whole run: {} ms)\n", num(forward_time.count() * 1000.0, 2),
               num(total.count() * 1000.0, 1));
  }
}

}  // namespace

int main(int argc, char** argv) {
  attn::Cli cli("07_causal_lm",
                "Chapter 07: the causal language model. Token and position embeddings, L "
                "transformer blocks, a final LayerNorm and an output projection tied to the "
                "embedding; next-character logits, generation with temperature and top-k, and "
                "the weights as a folder of .npy files. The model is untrained: its text is "
                "noise.");
  Options o;
  cli.add_size("--layers", o.layers, "L, transformer blocks", 1, kMaxLayers);
  cli.add_size("--channels", o.channels, "C, the model width", 1, kMaxChannels);
  cli.add_size("--heads", o.heads, "H, attention heads (must divide C)", 1, kMaxHeads);
  cli.add_size("--block-size", o.block_size, "T_max, the longest context (rows of wpe)", 1,
               kMaxBlockSize);
  cli.add_string("--prompt", o.prompt,
                 "text to continue (default: the first line of the corpus with at least 30 "
                 "characters, cut to 200; at most 4096)");
  cli.add_size("--max-new-tokens", o.max_new_tokens, "characters to generate", 1, kMaxNewTokens);
  cli.add_float("--temperature", o.temperature, "sampling temperature (> 0)", 0.0f);
  cli.add_string("--top-k", o.top_k_text,
                 "K: sample only among the K most likely characters, 1 <= K <= V (default: all)");
  cli.add_string("--weights", o.weights_dir,
                 "DIR: load the model from this folder of .npy files instead of drawing it");
  cli.add_string("--export", o.export_dir, "DIR: also save the model as .npy files into DIR");
  o.prompt_given = flag_given(argc, argv, "--prompt");
  o.top_k_given = flag_given(argc, argv, "--top-k");
  return cli.run(argc, argv, [&](const attn::CommonOptions& common) { run(common, o); });
}
