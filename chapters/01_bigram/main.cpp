// chapters/01_bigram/main.cpp: chapter 01, the bigram language model.
// The narrated walkthrough: the task (predict the next character), context and target, a V x V
// table by counting, the same table by gradient descent, and text sampled from it. The math
// lives in common/ (text, bigram, loss, sample); this file tells the story in teaching order.

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/model/bigram.hpp"
#include "attn/core/check.hpp"
#include "attn/ops/loss.hpp"
#include "attn/io/narrate.hpp"
#include "attn/model/sample.hpp"
#include "attn/io/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/core/limits.hpp"
#include "attn/io/plot.hpp"
#include "attn/io/print.hpp"
#include "attn/core/random.hpp"
#include "attn/io/text.hpp"
#include "exercises.hpp"

namespace {

using attn::chars_of;

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

// ---- Narration helpers.

void section(int number, std::string_view title) {
  const std::string line = fmt::format("{}. {}", number, title);
  fmt::print("\n{}\n{}\n", line, std::string(line.size(), '-'));
}

std::string num(double value, int precision = 4) {
  return attn::format_number(static_cast<float>(value), precision);
}

// One character for the narration: 'a', '\n', ' '.
std::string char_name(char32_t c) {
  return c == U' ' ? attn::printable(c) : "'" + attn::printable(c) + "'";
}


// Ids of the `k` most frequent characters of `tokens`, most frequent first (ties: lower id).
std::vector<int> most_frequent(std::span<const int> tokens, std::size_t V, std::size_t k) {
  std::vector<std::size_t> freq(V, 0);
  for (int t : tokens) ++freq[static_cast<std::size_t>(t)];
  std::vector<int> ids(V);
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) {
    return freq[static_cast<std::size_t>(a)] > freq[static_cast<std::size_t>(b)];
  });
  ids.resize(std::min(k, V));
  return ids;
}

std::vector<std::string> labels_of(const attn::Vocab& vocab, std::span<const int> ids) {
  std::vector<std::string> out;
  for (int id : ids) out.push_back(attn::printable(vocab.char_of(id)));
  return out;
}

// Upper bounds of the flags (the input contract, CONTRIBUTING.md): each keeps a run within
// seconds on its own, with the other flags at their defaults.
constexpr std::size_t kMaxSteps = 100'000;
constexpr std::size_t kMaxBatch = 1024;
constexpr std::size_t kMaxBlock = 1024;
constexpr std::size_t kMaxSampleLength = 100'000;
constexpr std::size_t kMaxStartLength = 4096;  // characters of --start
constexpr float kMaxLearningRate = 1000.0f;
// Each step holds (B*T, V) logits and as many gradients: at most 2^24 numbers (64 MiB) each.
constexpr std::size_t kMaxBatchNumbers = std::size_t{1} << 24;
// Training costs about steps x B x T x V operations: at most 2^31 (some seconds).
constexpr std::size_t kMaxTrainingWork = std::size_t{1} << 31;

// The chapter's own flags, with their defaults.
struct Options {
  attn::BigramTrainConfig train;  // --steps, --batch-size, --block-size, --lr, --eval-interval
  std::size_t sample_length = 300;
  float temperature = 1.0f;
  std::string start;  // empty: the first character of the corpus
};

// Everything the flags ask of the corpus is checked before the walkthrough starts, so a bad
// value fails fast with one line instead of after the training.
void check_options(const Options& o, const attn::Vocab& vocab, const attn::Split& split) {
  const std::size_t T = o.train.block_size;
  // Each step looks up a (B*T, V) block of logits: bounded like every buffer (attn/limits.hpp).
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
      throw std::runtime_error(fmt::format(
          "--start: character {} (U+{:04X}) is not in the vocabulary of this corpus ({} characters)",
          char_name(c), static_cast<std::uint32_t>(c), vocab.size()));
    }
  }
}

// ---- The walkthrough.

// Why the step size decays: the same training at constant step sizes, each from a table of zeros
// with the same batches (the same seed). At a constant step SGD does not settle: every batch is a
// noisy estimate of the gradient, and the table jitters around the optimum by an amount that
// grows with the step.
void show_constant_steps(const attn::Split& split, std::size_t V,
                         const attn::BigramTrainConfig& train, std::uint64_t seed,
                         double floor_train, const attn::BigramReport& decayed) {
  const double log_v = std::log(static_cast<double>(V));
  fmt::print("\nWhy the step decays: the same {} steps at a constant step size, from zeros, on the\n"
             "same batches. Train loss at the end, and how far above the floor ({}) it stalls:\n",
             train.steps, num(floor_train));
  fmt::print("  step size        train loss   above the floor\n");
  struct Row {
    float lr;
    double end;
    bool blew_up;  // finite loss more than halfway back up to log V, or not finite
  };
  std::vector<Row> rows;
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
    fmt::print("  {:<16} {:>10}   {}{}\n", fmt::format("{:g} (constant)", lr),
               std::isfinite(end) ? num(end) : std::string("nan"),
               std::isfinite(end) ? "+" + num(end - floor_train) : std::string("-"),
               blew_up ? "  blown up" : "");
  }
  fmt::print("  {:<16} {:>10}   +{}\n", fmt::format("{:g} -> 0 (decay)", train.learning_rate),
             num(decayed.train_loss), num(decayed.train_loss - floor_train));
  // The best constant step, and whether every larger one stalls higher (or blows up).
  std::size_t best = 0;
  for (std::size_t i = 1; i < rows.size(); ++i)
    if (!rows[i].blew_up && (rows[best].blew_up || rows[i].end < rows[best].end)) best = i;
  bool rising = !rows[best].blew_up;
  for (std::size_t i = best + 1; i < rows.size(); ++i)
    rising = rising && (rows[i].blew_up || rows[i].end >= rows[i - 1].end);
  if (rising && best + 1 < rows.size()) {
    fmt::print("From a step of {:g} up, the larger the constant step, the higher the loss stalls: each\n"
               "step jumps as far as the noise of one batch pushes it{}.\n",
               rows[best].lr,
               rows.back().blew_up ? fmt::format(", and {:g} blows up", rows.back().lr) : "");
    if (best > 0) {
      fmt::print("Smaller steps are steadier but slower: {} steps of {:g} have not arrived yet.\n",
                 train.steps, rows[0].lr);
    }
  } else {
    fmt::print("Here the end losses do not grow steadily with the step: at {} steps they mix two\n"
               "effects, small steps that have not arrived yet and large ones that jitter.\n",
               train.steps);
  }
  if (decayed.train_loss <= rows[best].end) {
    fmt::print("The decaying step beats every constant one: big steps early travel far, small\n"
               "steps late average the noise of the batches away.\n");
  } else {
    fmt::print("Here a constant step of {:g} ends lower than the decay from {:g}: those decaying\n"
               "steps were too small to travel as far. Big steps early and small ones late work\n"
               "only if the early ones are big enough.\n",
               rows[best].lr, train.learning_rate);
  }
}

void run(const attn::CommonOptions& common, Options o) {
  using Clock = std::chrono::steady_clock;
  const auto t_start = Clock::now();
  const Functions fns = common.mine ? mine_functions() : reference_functions();

  const attn::Corpus corpus = attn::load_corpus(common.data);
  const std::u32string text = attn::decode_utf8(corpus.text);
  const attn::Vocab vocab = attn::Vocab::from_text(corpus.text);
  const std::size_t V = vocab.size();
  if (V > attn::limits::kMaxBigramVocab) {  // a property of the file: exit code 1
    throw std::runtime_error(fmt::format(
        "corpus {} has {} distinct characters, but this chapter's bigram table holds V x V "
        "numbers ({} here), so it accepts at most {} characters; chapter 07 stores V x C numbers "
        "instead and runs on this corpus",
        corpus.origin, V, attn::checked_mul(V, V, "V x V"), attn::limits::kMaxBigramVocab));
  }
  const attn::Split split = attn::train_val_split(vocab.encode(corpus.text));
  if (o.start.empty()) o.start = attn::encode_utf8(text.front());
  check_options(o, vocab, split);
  const std::size_t B = o.train.batch_size, T = o.train.block_size;

  fmt::print("Chapter 01: the bigram language model\n");
  fmt::print("seed {}, corpus {}{}\n", common.seed, corpus.origin,
             common.mine ? ", running YOUR exercises (--mine)" : "");

  // 1. ---------------------------------------------------------------------------------------
  section(1, "The task: predict the next character");
  const auto lines = std::count(text.begin(), text.end(), U'\n') + (text.back() != U'\n' ? 1 : 0);
  fmt::print("The corpus has {} characters ({} bytes of UTF-8) on {} lines.\n", text.size(),
             corpus.text.size(), lines);
  fmt::print("A model reads characters and, at every position, guesses the one that comes next.\n");
  fmt::print("\nThe vocabulary is the sorted set of characters that occur: V = {}.\n", V);
  std::string line = " ";
  for (char32_t c : vocab.chars()) {
    const std::string item = " " + attn::printable(c);
    if (line.size() + item.size() > 90) {
      fmt::print("{}\n", line);
      line = " ";
    }
    line += item;
  }
  fmt::print("{}\n", line);

  // A short phrase from the corpus: the start of its first line with at least 12 characters.
  std::u32string phrase;
  for (std::size_t begin = 0; begin < text.size() && phrase.empty();) {
    std::size_t end = text.find(U'\n', begin);
    if (end == std::u32string::npos) end = text.size();
    if (end - begin >= 12) phrase = text.substr(begin, std::min<std::size_t>(end - begin, 24));
    begin = end + 1;
  }
  if (phrase.empty()) phrase = text.substr(0, std::min<std::size_t>(text.size(), 24));
  const std::string phrase_utf8 = attn::encode_utf8(phrase);
  const std::vector<int> phrase_ids = fns.encode(vocab, phrase_utf8);
  const std::string round_trip = fns.decode(vocab, phrase_ids);
  fmt::print("\nA token is a character's position in that list. Encoding and decoding a phrase:\n");
  fmt::print("  text    {}\n", attn::quote(phrase));
  fmt::print("  encode  {}\n", attn::format_ids(phrase_ids));
  fmt::print("  decode  {}  (round trip {})\n", attn::quote(attn::decode_utf8(round_trip)),
             round_trip == phrase_utf8 ? "exact" : "DIFFERS: check ex01.1");

  const std::vector<int> tokens = fns.encode(vocab, corpus.text);
  fmt::print("\nThe whole corpus becomes {} tokens. The first 90% ({}) train the model, the last\n"
             "10% ({}) measure it on text it never saw (the validation split).\n",
             tokens.size(), split.train.size(), split.val.size());
  const std::size_t first_n = std::min<std::size_t>(split.train.size(), 9);
  const std::span<const int> first(split.train.data(), first_n);
  fmt::print("The first {} tokens of the train split: {} = {}\n", first_n, attn::format_ids(first),
             attn::quote(chars_of(vocab, first)));

  // 2. ---------------------------------------------------------------------------------------
  section(2, "Context and target");
  fmt::print("A window of T = block_size = {} tokens is not one training example but {}: at\n"
             "position t the context is x[0..t] and the target is y[t] = x[t+1].\n",
             T, T);
  const std::size_t shown = std::min<std::size_t>(T, 8);
  std::vector<std::string> contexts;
  std::size_t width = 0;
  for (std::size_t t = 0; t < shown; ++t) {
    const std::span<const int> context(split.train.data(), t + 1);
    contexts.push_back(attn::format_ids(context));
    width = std::max(width, contexts.back().size());
  }
  for (std::size_t t = 0; t < shown; ++t) {
    const std::span<const int> context(split.train.data(), t + 1);
    const int target = split.train[t + 1];
    fmt::print("  when the context is {:<{}}  the target is {:<3}  {} -> {}\n", contexts[t], width,
               target, attn::quote(chars_of(vocab, context)), char_name(vocab.char_of(target)));
  }
  if (T > shown) fmt::print("  ... {} more, up to a context of {} tokens\n", T - shown, T);
  fmt::print("The bigram model below only looks at the LAST token of each context; the chapters\n"
             "after this one learn to use the rest.\n");

  attn::Rng batch_rng(common.seed, 1);  // its own stream: showing a batch changes no other number
  const attn::Batch batch = attn::get_batch(split.train, B, T, batch_rng);
  fmt::print("\nTraining takes B = {} windows at random positions at once: x and y have shape "
             "(B, T) = {}.\n",
             B, attn::shape_str(batch.x.shape()));
  const std::size_t rows_shown = std::min<std::size_t>(B, 4);
  for (std::size_t b = 0; b < rows_shown; ++b) {
    const std::span<const int> xb(batch.x.data() + b * T, T), yb(batch.y.data() + b * T, T);
    fmt::print("  x[{}] = {}\n  y[{}] = {}\n", b, attn::quote(chars_of(vocab, xb)), b,
               attn::quote(chars_of(vocab, yb)));
  }
  if (B > rows_shown) fmt::print("  ... {} more rows\n", B - rows_shown);
  bool shifted = true;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t + 1 < T; ++t) shifted = shifted && batch.y(b, t) == batch.x(b, t + 1);
  attn::claim(shifted, "y is x shifted left by one");
  fmt::print("y is x shifted left by one (y[b, t] == x[b, t+1] for every b and t < T-1): {}.\n"
             "So one batch holds B * T = {} (context, target) examples.\n",
             shifted ? "yes" : "NO", B * T);

  // 3. ---------------------------------------------------------------------------------------
  section(3, "Counting: the best bigram table in closed form");
  const attn::Matrix counts = fns.bigram_counts(split.train, V);  // (V, V)
  fmt::print("counts[a, b] = how often b follows a in the train split: a (V, V) = ({}, {}) table\n"
             "holding {} pairs.\n",
             V, V, split.train.size() - 1);
  std::vector<std::size_t> pairs(V * V);
  std::iota(pairs.begin(), pairs.end(), std::size_t{0});
  std::stable_sort(pairs.begin(), pairs.end(), [&](std::size_t p, std::size_t q) {
    return counts.data()[p] > counts.data()[q];
  });
  fmt::print("The most frequent pairs, with P(b | a) = counts[a, b] / (sum of row a):\n");
  for (std::size_t i = 0; i < std::min<std::size_t>(10, pairs.size()); ++i) {
    const std::size_t a = pairs[i] / V, b = pairs[i] % V;
    const float row_sum = xt::sum(xt::row(counts, static_cast<std::ptrdiff_t>(a)))();
    const float c = counts(a, b);
    fmt::print("  {:>5} -> {:<5} {:>7}   P = {}\n", char_name(vocab.char_of(static_cast<int>(a))),
               char_name(vocab.char_of(static_cast<int>(b))), num(c, 0),
               num(row_sum > 0.0f ? c / row_sum : 0.0f));
  }

  const std::vector<int> top8 = most_frequent(split.train, V, 8);
  attn::Matrix sub({top8.size(), top8.size()});
  for (std::size_t i = 0; i < top8.size(); ++i)
    for (std::size_t j = 0; j < top8.size(); ++j)
      sub(i, j) = counts(static_cast<std::size_t>(top8[i]), static_cast<std::size_t>(top8[j]));
  fmt::print("\nThe counts among the {} most frequent characters (row: current, column: next):\n",
             top8.size());
  attn::MatrixFormat count_format;
  count_format.precision = 0;
  count_format.row_labels = labels_of(vocab, top8);
  count_format.col_labels = count_format.row_labels;
  fmt::print("{}", attn::format_matrix(sub, count_format));

  // The raw frequencies minimise the train loss exactly; a tiny alpha stands in for alpha = 0.
  const attn::Matrix frequencies = attn::bigram_logits_from_counts(counts, 1e-6f);  // (V, V)
  const double floor_train = attn::bigram_loss(frequencies, split.train);
  std::size_t unseen = 0;  // validation pairs that never occur in the train split
  for (std::size_t i = 0; i + 1 < split.val.size(); ++i)
    unseen += counts(static_cast<std::size_t>(split.val[i]), static_cast<std::size_t>(split.val[i + 1])) == 0.0f;
  fmt::print("\nNormalising each row gives P(b | a), and W[a, b] = log P(b | a) is a table of logits\n"
             "whose softmax is exactly those frequencies. No bigram table has a lower cross-entropy\n"
             "on the train split (the floor): {}.\n"
             "But a pair never seen in training gets probability 0, and {} of the {} validation\n"
             "pairs are unseen: each would cost -log 0 = infinity. Adding 1 to every count first\n"
             "(smoothing) keeps them possible:\n",
             num(floor_train), unseen, split.val.size() - 1);
  const attn::Matrix optimum = attn::bigram_logits_from_counts(counts, 1.0f);  // (V, V)
  const double opt_train = attn::bigram_loss(optimum, split.train);
  const double opt_val = attn::bigram_loss(optimum, split.val);
  fmt::print("  the counting model W[a, b] = log((counts[a, b] + 1) / rowsum(counts + 1)):\n"
             "    train loss {}, val loss {}  <- the number learning must approach\n",
             num(opt_train), num(opt_val));
  fmt::print("  for scale, a uniform guess over V = {} characters: log(V) = {}\n", V,
             num(std::log(static_cast<double>(V))));

  const std::vector<int> top = most_frequent(split.train, V, 16);
  attn::Matrix probs({top.size(), top.size()});  // P(next | current) on the frequent characters
  for (std::size_t i = 0; i < top.size(); ++i)
    for (std::size_t j = 0; j < top.size(); ++j)
      probs(i, j) = std::exp(optimum(static_cast<std::size_t>(top[i]), static_cast<std::size_t>(top[j])));
  attn::HeatmapOptions heat;
  heat.title = fmt::format("P(next | current), the {} most frequent characters", top.size());
  heat.row_labels = labels_of(vocab, top);
  heat.col_labels = heat.row_labels;
  heat.vmin = 0.0f;
  fmt::print("\nThe same table as probabilities, as a picture (rows: current, columns: next):\n");
  fmt::print("{}", attn::heatmap_text(probs, heat, attn::use_color(stdout)));
  if (common.svg_dir) {
    const auto path = *common.svg_dir / "bigram_counts.svg";
    attn::write_svg(path, attn::heatmap_svg(probs, heat));
    fmt::print("(written to {})\n", path.string());
  }

  // 4. ---------------------------------------------------------------------------------------
  section(4, "Learning: the same table by gradient descent");
  attn::Matrix logits = xt::zeros<float>({V, V});  // (V, V), every row uniform at the start
  fmt::print("Start from a ({}, {}) table of zeros: every row is the uniform guess, loss log(V).\n"
             "Each step draws a batch, looks up the row of every input token ((B*T, V) = ({}, {})\n"
             "logits), and moves each looked-up row against the gradient of the mean cross-entropy,\n"
             "(softmax(row) - onehot(target)) / (B*T). A row used k times gets k such terms.\n",
             V, V, B * T, V);
  fmt::print("The step size starts at {} and falls linearly toward 0 over the {} steps: big steps\n"
             "travel far early, small ones late average out the noise of random batches.\n",
             fmt::format("{:g}", o.train.learning_rate), o.train.steps);
  fmt::print("batch size {}, block size {}:\n", B, T);
  attn::Rng train_rng(common.seed);
  attn::BigramReport last{};
  std::vector<attn::BigramReport> curve;  // every report, for the loss-curve figure
  // The losses are measured more often than printed (about 60 points for the figure); measuring
  // draws no random numbers, so it changes nothing else.
  attn::BigramTrainConfig measured = o.train;
  measured.eval_interval = std::max<std::size_t>(1, o.train.steps / 60);
  const auto t_train = Clock::now();
  const auto on_report = [&](const attn::BigramReport& r) {
    curve.push_back(r);
    if (r.step == 0 && !common.mine)
      attn::claim(std::abs(r.train_loss - std::log(static_cast<double>(V))) < 1e-3,
                  "a table of zeros has loss log(V)");
    if (r.step % o.train.eval_interval != 0 && r.step != o.train.steps) return;
    fmt::print("  step {:>6}   train loss {}   val loss {}\n", r.step, num(r.train_loss),
               num(r.val_loss));
    last = r;
  };
  attn::train_bigram(logits, split, measured, train_rng, on_report, fns.cross_entropy_grad);
  const std::chrono::duration<double> train_time = Clock::now() - t_train;
  fmt::print("After {} steps the learned table has train loss {}, {} above the floor, and\n"
             "val loss {} against {} for the counting model (difference {}).\n",
             last.step, num(last.train_loss), num(last.train_loss - floor_train), num(last.val_loss),
             num(opt_val), num(last.val_loss - opt_val));
  const double gap = last.val_loss - opt_val;  // learning minus counting, on unseen text
  if (!std::isfinite(last.train_loss) || last.train_loss > std::log(static_cast<double>(V))) {
    fmt::print("Learning failed: the loss ended above log(V), the score of the table of zeros.\n"
               "A step size of {} is too large for this gradient: each step overshoots and the\n"
               "table moves away from the optimum (try a smaller --lr).\n",
               fmt::format("{:g}", o.train.learning_rate));
  } else if (gap < -0.005) {
    fmt::print("Learning beats counting on unseen text here: +1 is strong smoothing for this corpus\n"
               "({} pretend pairs added to {} real ones), and gradient descent stopped after {}\n"
               "steps never pushes an unseen pair all the way down, a gentler smoothing.\n",
               V * V, split.train.size() - 1, last.step);
  } else if (gap <= 0.02) {
    fmt::print("Learning and counting found nearly the same table, by two very different routes.\n");
  } else {
    fmt::print("Learning is still {} behind counting on unseen text: {} steps of size {} (falling\n"
               "to 0) have not travelled far enough from the table of zeros. More --steps or a\n"
               "larger --lr close the gap.\n",
               num(gap), last.step, fmt::format("{:g}", o.train.learning_rate));
  }
  if (!common.mine) {
    attn::claim(last.train_loss >= floor_train - 1e-4, "no bigram table goes below the floor");
  }
  if (common.timing)
    fmt::print("(training took {} ms)\n", num(train_time.count() * 1000.0, 1));
  if (common.svg_dir) {
    attn::Series train{"train loss", {}, {}}, val{"val loss", {}, {}};
    for (const attn::BigramReport& r : curve) {
      train.x.push_back(static_cast<double>(r.step));
      train.y.push_back(r.train_loss);
      val.x.push_back(static_cast<double>(r.step));
      val.y.push_back(r.val_loss);
    }
    const double end = static_cast<double>(o.train.steps);
    const attn::Series counting{"counting model, val", {0.0, end}, {opt_val, opt_val}, true};
    const attn::Series floor_line{"floor (best train loss)", {0.0, end}, {floor_train, floor_train},
                                  true};
    attn::LineChartOptions chart;
    chart.title = fmt::format("Learning the bigram table: loss vs step (lr {:g}, decaying)",
                              o.train.learning_rate);
    chart.x_label = "step";
    chart.y_label = "cross-entropy loss";
    chart.legend = attn::LineChartOptions::Legend::top_right;  // the curves settle at the bottom
    chart.width = 560;
    chart.height = 300;
    const auto path = *common.svg_dir / "loss_curve.svg";
    attn::write_svg(path, attn::line_chart_svg({train, val, counting, floor_line}, chart));
    fmt::print("(written to {})\n", path.string());
  }
  show_constant_steps(split, V, o.train, common.seed, floor_train, last);

  // 5. ---------------------------------------------------------------------------------------
  section(5, "Sampling: writing with the learned table");
  const std::vector<int> start_ids = fns.encode(vocab, o.start);
  attn::Rng sample_rng(common.seed, 2);
  const std::vector<int> sampled =
      attn::bigram_generate(logits, start_ids.back(), o.sample_length, o.temperature, sample_rng,
                            fns.sample_logits);
  fmt::print("Start from {}, then {} times: take the row of the last character, softmax(row / {}),\n"
             "draw the next character from it, append it.\n",
             attn::quote(attn::decode_utf8(o.start)), o.sample_length,
             attn::format_significant(o.temperature));
  fmt::print("\n{}{}\n", attn::terminal_safe(attn::decode_utf8(o.start)),
             attn::terminal_safe(attn::decode_utf8(fns.decode(vocab, sampled))));
  fmt::print("\nEach character was drawn knowing only the one before it: one character of context\n"
             "cannot hold a word together.\n"
             "Next: chapter 02 lets every position look at its whole past.\n");
  if (common.timing) {
    const std::chrono::duration<double> total = Clock::now() - t_start;
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
  cli.add_size("--sample-length", o.sample_length, "characters to sample at the end", 1,
               kMaxSampleLength);
  cli.add_float("--temperature", o.temperature, "sampling temperature (> 0)", 0.0f);
  cli.add_string("--start", o.start,
                 "first characters of the sample (default: the corpus's first character; at "
                 "most 4096)");
  return cli.run(argc, argv, [&](const attn::CommonOptions& common) { run(common, o); });
}
