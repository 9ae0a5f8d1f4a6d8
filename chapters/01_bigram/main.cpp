// chapters/01_bigram/main.cpp: chapter 01, the bigram language model.
// The walkthrough: the task (predict the next character), context and target, a V x V table by
// counting, the same table by gradient descent, and text sampled from it. Each section computes
// here (the math itself lives in common/: text, bigram, loss, sample) and is printed by its
// show_ function in show.cpp; run() below is the lesson's order.

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/model/bigram.hpp"
#include "attn/core/check.hpp"
#include "attn/ops/loss.hpp"
#include "attn/term/narrate.hpp"
#include "attn/model/sample.hpp"
#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/core/limits.hpp"
#include "attn/core/random.hpp"
#include "attn/io/text.hpp"
#include "exercises.hpp"
#include "walkthrough.hpp"

// The reports the narration prints: declared in walkthrough.hpp, used by show.cpp too.
std::vector<attn::BigramReport> ch01::printed_reports(const Learning& l,
                                                      const attn::BigramTrainConfig& train) {
  std::vector<attn::BigramReport> out;
  for (const attn::BigramReport& r : l.curve)
    if (r.step % train.eval_interval == 0 || r.step == train.steps) out.push_back(r);
  return out;
}

namespace {

using namespace ch01;  // the sections' results and their show functions (walkthrough.hpp)
using attn::num;

// The functions the walkthrough calls: from attn:: (the reference) or, with --mine, the
// learner's ex01:: exercises. Training and sampling take the gradient and the sampler as
// parameters, so --mine runs the very same loop with the learner's pieces. The losses are always
// measured with attn::bigram_loss, so the numbers of both runs compare directly.
struct Functions {
  std::vector<int> (*encode)(const attn::Vocab&, std::string_view);  // ex01.1
  std::string (*decode)(const attn::Vocab&, std::span<const int>);   // ex01.1
  attn::Matrix (*bigram_counts)(std::span<const int>, std::size_t);  // ex01.2
  attn::CrossEntropyGradFn cross_entropy_grad;                       // ex01.3
  attn::SampleFn sample_logits;                                      // ex01.4
};

Functions reference_functions() {
  return {+[](const attn::Vocab& v, std::string_view s) { return v.encode(s); },
          +[](const attn::Vocab& v, std::span<const int> ids) { return v.decode(ids); },
          &attn::bigram_counts, &attn::cross_entropy_grad, &attn::sample_logits};
}

Functions mine_functions() {
  return {&ex01::encode, &ex01::decode, &ex01::bigram_counts, &ex01::cross_entropy_grad,
          &ex01::sample_logits};
}

// Upper bounds of the flags (the input contract, CONTRIBUTING.md): each keeps a run within
// seconds on its own, with the other flags at their defaults.
constexpr std::size_t kMaxSteps = 100'000;
constexpr std::size_t kMaxBatch = 1024;
constexpr std::size_t kMaxBlock = 1024;
constexpr std::size_t kMaxTokens = 100'000;
constexpr std::size_t kMaxStartLength = 4096;  // characters of --start
constexpr float kMaxLearningRate = 1000.0f;
// Each step holds (B*T, V) logits and as many gradients: at most 2^24 numbers (64 MiB) each.
constexpr std::size_t kMaxBatchNumbers = std::size_t{1} << 24;
// Training costs about steps x B x T x V operations: at most 2^31 (some seconds).
constexpr std::size_t kMaxTrainingWork = std::size_t{1} << 31;

// The chapter's own flags, with their defaults.
struct Options {
  attn::BigramTrainConfig train;  // --steps, --batch-size, --block-size, --lr, --eval-interval
  std::size_t tokens = 300;
  float temperature = 1.0f;
  std::string start;  // empty: the first character of the corpus
};

// Everything the flags ask of the corpus is checked before the walkthrough starts, so a bad
// value fails fast with one line instead of after the training.
void check_options(const Options& o, const attn::Vocab& vocab, const attn::Split& split) {
  const std::size_t T = o.train.block_size;
  // Each step looks up a (B*T, V) block of logits: bounded like every buffer
  // (attn/core/limits.hpp).
  const std::size_t B = o.train.batch_size, V = vocab.size();
  if (B * T > kMaxBatchNumbers / V) {  // B, T <= 1024 and V <= 2048: no overflow
    throw attn::UsageError(fmt::format(
        "--batch-size {} x --block-size {} x V = {} is {} numbers per step, more than the limit "
        "of {}: lower --batch-size or --block-size",
        B, T, V, B * T * V, kMaxBatchNumbers));
  }
  if (o.train.steps > kMaxTrainingWork / (B * T * V)) {  // steps <= 1e5: the product fits
    throw attn::UsageError(fmt::format(
        "--steps {} x --batch-size {} x --block-size {} x V = {} is {} operations, more than the "
        "limit of {}: lower one of them",
        o.train.steps, B, T, V, o.train.steps * B * T * V, kMaxTrainingWork));
  }
  const std::size_t shortest = std::min(split.train.size(), split.val.size());
  if (shortest < T + 1) {
    throw std::runtime_error(fmt::format(
        "--block-size {} needs at least {} tokens in each split, but the corpus splits into {} "
        "train and {} validation tokens",
        T, T + 1, split.train.size(), split.val.size()));
  }
  std::u32string start;
  try {
    start = attn::decode_utf8(o.start);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("--start: {}", e.what()));
  }
  if (start.size() > kMaxStartLength) {
    throw attn::UsageError(fmt::format("--start must be at most {} characters, got {}",
                                       kMaxStartLength, start.size()));
  }
  for (char32_t c : start) {
    if (!vocab.contains(c)) {
      throw std::runtime_error(
          fmt::format("--start: character {} (U+{:04X}) is not in the vocabulary of this corpus "
                      "({} characters)",
                      char_name(c), static_cast<std::uint32_t>(c), vocab.size()));
    }
  }
}

// ---- The walkthrough: one compute function and one show function per section.

Phrase encode_phrase(const Functions& fns, const Data& d) {
  std::u32string phrase;
  for (std::size_t begin = 0; begin < d.text.size() && phrase.empty();) {
    std::size_t end = d.text.find(U'\n', begin);
    if (end == std::u32string::npos) end = d.text.size();
    if (end - begin >= 12) phrase = d.text.substr(begin, std::min<std::size_t>(end - begin, 24));
    begin = end + 1;
  }
  if (phrase.empty()) phrase = d.text.substr(0, std::min<std::size_t>(d.text.size(), 24));
  Phrase p{phrase, fns.encode(d.vocab, attn::encode_utf8(phrase)), {}};
  p.round_trip = fns.decode(d.vocab, p.ids);
  return p;
}

Counting count_bigrams(const Functions& fns, const attn::Split& split, std::size_t V) {
  Counting c;
  c.counts = fns.bigram_counts(split.train, V);  // (V, V)
  // The raw frequencies minimise the train loss exactly; a tiny alpha stands in for alpha = 0.
  const attn::Matrix frequencies = attn::bigram_logits_from_counts(c.counts, 1e-6f);  // (V, V)
  c.floor_train = attn::bigram_loss(frequencies, split.train);
  c.unseen = 0;
  for (std::size_t i = 0; i + 1 < split.val.size(); ++i) {
    const auto a = static_cast<std::size_t>(split.val[i]);
    const auto b = static_cast<std::size_t>(split.val[i + 1]);
    c.unseen += c.counts(a, b) == 0.0f;
  }
  c.optimum = attn::bigram_logits_from_counts(c.counts, 1.0f);  // (V, V), +1 smoothing
  c.opt_train = attn::bigram_loss(c.optimum, split.train);
  c.opt_val = attn::bigram_loss(c.optimum, split.val);
  return c;
}

Learning learn_table(const Functions& fns, const attn::Split& split, std::size_t V,
                     const attn::BigramTrainConfig& train, std::uint64_t seed) {
  Learning l;
  l.logits = xt::zeros<float>({V, V});  // (V, V), every row uniform at the start
  attn::Rng train_rng(seed);
  // The losses are measured more often than printed (about 60 points for the figure); measuring
  // draws no random numbers, so it changes nothing else.
  attn::BigramTrainConfig measured = train;
  measured.eval_interval = std::max<std::size_t>(1, train.steps / 60);
  const auto start = std::chrono::steady_clock::now();
  attn::train_bigram(
      l.logits, split, measured, train_rng,
      [&](const attn::BigramReport& r) { l.curve.push_back(r); }, fns.cross_entropy_grad);
  l.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return l;
}

std::vector<ConstantStep> train_at_constant_steps(const attn::Split& split, std::size_t V,
                                                  const attn::BigramTrainConfig& train,
                                                  std::uint64_t seed, double floor_train) {
  const double log_v = std::log(static_cast<double>(V));
  std::vector<ConstantStep> rows;
  for (const float lr : {4.0f, 16.0f, 64.0f, 256.0f}) {
    attn::Matrix table = xt::zeros<float>({V, V});  // (V, V)
    attn::BigramTrainConfig config = train;
    config.learning_rate = lr;
    config.decay = false;
    config.eval_interval = config.steps;  // only the end matters here
    attn::Rng rng(seed);
    double end = 0.0;
    attn::train_bigram(table, split, config, rng,
                       [&](const attn::BigramReport& r) { end = r.train_loss; });
    const bool blew_up = !std::isfinite(end) || end - floor_train > 0.5 * (log_v - floor_train);
    rows.push_back({lr, end, blew_up});
  }
  return rows;
}

// Reads the corpus and checks what this chapter needs of it (a V x V table must fit).
Data load_data(const attn::CommonOptions& common) {
  attn::Corpus corpus = attn::load_corpus(common.data);
  std::u32string text = attn::decode_utf8(corpus.text);
  attn::Vocab vocab = attn::Vocab::from_text(corpus.text);
  const std::size_t V = vocab.size();
  if (V > attn::limits::kMaxBigramVocab) {  // a property of the file: exit code 1
    throw std::runtime_error(fmt::format(
        "corpus {} has {} distinct characters, but this chapter's bigram table holds V x V "
        "numbers ({} here), so it accepts at most {} characters; chapter 07 stores V x C numbers "
        "instead and runs on this corpus",
        corpus.origin, V, attn::checked_mul(V, V, "V x V"), attn::limits::kMaxBigramVocab));
  }
  attn::Split split = attn::train_val_split(vocab.encode(corpus.text));
  return Data{std::move(corpus), std::move(text), std::move(vocab), std::move(split)};
}

void run(const attn::CommonOptions& common, Options o) {
  const auto t_start = std::chrono::steady_clock::now();
  const Functions fns = common.mine ? mine_functions() : reference_functions();
  const Data d = load_data(common);
  const std::size_t V = d.vocab.size();
  if (o.start.empty()) o.start = attn::encode_utf8(d.text.front());
  check_options(o, d.vocab, d.split);

  fmt::print("Chapter 01: the bigram language model\n");
  fmt::print("seed {}, corpus {}{}\n", common.seed, d.corpus.origin,
             common.mine ? ", running YOUR exercises (--mine)" : "");

  const Phrase phrase = encode_phrase(fns, d);
  const std::vector<int> tokens = fns.encode(d.vocab, d.corpus.text);
  show_task(d, phrase, tokens.size());

  attn::Rng batch_rng(common.seed, 1);  // its own stream: showing a batch changes no other number
  const attn::Batch batch =
      attn::get_batch(d.split.train, o.train.batch_size, o.train.block_size, batch_rng);
  show_context_and_target(d, batch);

  const Counting counting = count_bigrams(fns, d.split, V);
  show_counting(d, counting, common);

  const Learning learning = learn_table(fns, d.split, V, o.train, common.seed);
  show_learning(d, counting, learning, o.train, common);
  show_constant_steps(
      train_at_constant_steps(d.split, V, o.train, common.seed, counting.floor_train), o.train,
      counting.floor_train, printed_reports(learning, o.train).back());

  const std::vector<int> start_ids = fns.encode(d.vocab, o.start);
  attn::Rng sample_rng(common.seed, 2);
  const std::vector<int> sampled = attn::bigram_generate(
      learning.logits, start_ids.back(), o.tokens, o.temperature, sample_rng, fns.sample_logits);
  show_sample(o.start, o.tokens, o.temperature, fns.decode(d.vocab, sampled));
  if (common.timing) {
    const std::chrono::duration<double> total = std::chrono::steady_clock::now() - t_start;
    fmt::print("(whole run: {} ms)\n", num(total.count() * 1000.0, 1));
  }
}

}  // namespace

int main(int argc, char** argv) {
  attn::Cli cli("01_bigram",
                "Chapter 01: the bigram language model. Predict the next character from the "
                "current one with a V x V table, built by counting and by gradient descent, "
                "then sample text from it.");
  Options o;
  cli.add_size("--steps", o.train.steps, "optimizer steps", 1, kMaxSteps);
  cli.add_size("--batch-size", o.train.batch_size, "B, windows per step", 1, kMaxBatch);
  cli.add_size("--block-size", o.train.block_size, "T, tokens per window", 1, kMaxBlock);
  cli.add_float("--lr", o.train.learning_rate, "learning rate at step 1, decaying linearly to 0",
                0.0f, kMaxLearningRate);
  cli.add_size("--eval-interval", o.train.eval_interval, "report the losses every N steps", 1,
               kMaxSteps);
  cli.add_size("--tokens", o.tokens, "characters to sample at the end", 1, kMaxTokens);
  cli.add_float("--temperature", o.temperature, "sampling temperature (> 0)", 0.0f);
  cli.add_string("--start", o.start,
                 "first characters of the sample (default: the corpus's first character; at "
                 "most 4096)");
  cli.add_alias("sample-length", "tokens");  // its name in earlier versions
  return cli.run(argc, argv, [&](const attn::CommonOptions& common) { run(common, o); });
}
