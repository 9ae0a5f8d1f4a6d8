// chapters/01_bigram/show.cpp: chapter 01's narration, the functions that print what main.cpp
// computes, one per section, in teaching order (main.cpp calls compute, then show). Every
// sentence that depends on a number is chosen by that number; claims check the rest.

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/term/narrate.hpp"
#include "attn/term/plot.hpp"
#include "attn/term/print.hpp"
#include "attn/io/text.hpp"
#include "walkthrough.hpp"

namespace ch01 {

using attn::chars_of;
using attn::num;

namespace {

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

// The (k, k) block of `table` on the rows and columns `ids`, each entry through `f`.
template <class F>
attn::Matrix sub_table(const attn::Matrix& table, const std::vector<int>& ids, F f) {
  attn::Matrix sub({ids.size(), ids.size()});
  for (std::size_t i = 0; i < ids.size(); ++i)
    for (std::size_t j = 0; j < ids.size(); ++j)
      sub(i, j) = f(table(static_cast<std::size_t>(ids[i]), static_cast<std::size_t>(ids[j])));
  return sub;
}

}  // namespace

void show_task(const Data& d, const Phrase& phrase, std::size_t n_tokens) {
  attn::underlined_section(1, "The task: predict the next character");
  const std::u32string& text = d.text;
  const auto lines = std::count(text.begin(), text.end(), U'\n') + (text.back() != U'\n' ? 1 : 0);
  fmt::print("The corpus has {} characters ({} bytes of UTF-8) on {} lines.\n", text.size(),
             d.corpus.text.size(), lines);
  fmt::print("A model reads characters and, at every position, guesses the one that comes next.\n");
  fmt::print("\nThe vocabulary is the sorted set of characters that occur: V = {}.\n",
             d.vocab.size());
  std::string line = " ";
  for (char32_t c : d.vocab.chars()) {
    const std::string item = " " + attn::printable(c);
    if (line.size() + item.size() > 90) {
      fmt::print("{}\n", line);
      line = " ";
    }
    line += item;
  }
  fmt::print("{}\n", line);

  fmt::print("\nA token is a character's position in that list. Encoding and decoding a phrase:\n");
  fmt::print("  text    {}\n", attn::quote(phrase.text));
  fmt::print("  encode  {}\n", attn::format_ids(phrase.ids));
  fmt::print(
      "  decode  {}  (round trip {})\n", attn::quote(attn::decode_utf8(phrase.round_trip)),
      phrase.round_trip == attn::encode_utf8(phrase.text) ? "exact" : "DIFFERS: check ex01.1");

  fmt::print(
      "\nThe whole corpus becomes {} tokens. The first 90% ({}) train the model, the last\n"
      "10% ({}) measure it on text it never saw (the validation split).\n",
      n_tokens, d.split.train.size(), d.split.val.size());
  const std::size_t first_n = std::min<std::size_t>(d.split.train.size(), 9);
  const std::span<const int> first(d.split.train.data(), first_n);
  fmt::print("The first {} tokens of the train split: {} = {}\n", first_n, attn::format_ids(first),
             attn::quote(chars_of(d.vocab, first)));
}

// 2. Context and target: the examples hidden in one window, and a batch of B windows.
void show_context_and_target(const Data& d, const attn::Batch& batch) {
  const attn::Vocab& vocab = d.vocab;
  const std::vector<int>& train = d.split.train;
  const std::size_t B = batch.x.shape()[0], T = batch.x.shape()[1];
  attn::underlined_section(2, "Context and target");
  fmt::print(
      "A window of T = block_size = {} tokens is not one training example but {}: at\n"
      "position t the context is x[0..t] and the target is y[t] = x[t+1].\n",
      T, T);
  const std::size_t shown = std::min<std::size_t>(T, 8);
  std::vector<std::string> contexts;
  std::size_t width = 0;
  for (std::size_t t = 0; t < shown; ++t) {
    contexts.push_back(attn::format_ids(std::span<const int>(train.data(), t + 1)));
    width = std::max(width, contexts.back().size());
  }
  for (std::size_t t = 0; t < shown; ++t) {
    const std::span<const int> context(train.data(), t + 1);
    const int target = train[t + 1];
    fmt::print("  when the context is {:<{}}  the target is {:<3}  {} -> {}\n", contexts[t], width,
               target, attn::quote(chars_of(vocab, context)), char_name(vocab.char_of(target)));
  }
  if (T > shown) fmt::print("  ... {} more, up to a context of {} tokens\n", T - shown, T);
  fmt::print(
      "The bigram model below only looks at the LAST token of each context; the chapters\n"
      "after this one learn to use the rest.\n");

  fmt::print(
      "\nTraining takes B = {} windows at random positions at once: x and y have shape "
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
  fmt::print(
      "y is x shifted left by one (y[b, t] == x[b, t+1] for every b and t < T-1): {}.\n"
      "So one batch holds B * T = {} (context, target) examples.\n",
      shifted ? "yes" : "NO", B * T);
}

void show_counting(const Data& d, const Counting& c, const attn::CommonOptions& common) {
  const attn::Vocab& vocab = d.vocab;
  const std::size_t V = vocab.size();
  attn::underlined_section(3, "Counting: the best bigram table in closed form");
  fmt::print(
      "counts[a, b] = how often b follows a in the train split: a (V, V) = ({}, {}) table\n"
      "holding {} pairs.\n",
      V, V, d.split.train.size() - 1);
  std::vector<std::size_t> pairs(V * V);
  std::iota(pairs.begin(), pairs.end(), std::size_t{0});
  std::stable_sort(pairs.begin(), pairs.end(), [&](std::size_t p, std::size_t q) {
    return c.counts.data()[p] > c.counts.data()[q];
  });
  fmt::print("The most frequent pairs, with P(b | a) = counts[a, b] / (sum of row a):\n");
  for (std::size_t i = 0; i < std::min<std::size_t>(10, pairs.size()); ++i) {
    const std::size_t a = pairs[i] / V, b = pairs[i] % V;
    const float row_sum = xt::sum(xt::row(c.counts, static_cast<std::ptrdiff_t>(a)))();
    const float count = c.counts(a, b);
    fmt::print("  {:>5} -> {:<5} {:>7}   P = {}\n", char_name(vocab.char_of(static_cast<int>(a))),
               char_name(vocab.char_of(static_cast<int>(b))), num(count, 0),
               num(row_sum > 0.0f ? count / row_sum : 0.0f));
  }

  const std::vector<int> top8 = most_frequent(d.split.train, V, 8);
  fmt::print("\nThe counts among the {} most frequent characters (row: current, column: next):\n",
             top8.size());
  attn::MatrixFormat count_format;
  count_format.precision = 0;
  count_format.row_labels = labels_of(vocab, top8);
  count_format.col_labels = count_format.row_labels;
  fmt::print("{}", attn::format_matrix(sub_table(c.counts, top8, [](float n) { return n; }),
                                       count_format));

  fmt::print(
      "\nNormalising each row gives P(b | a), and W[a, b] = log P(b | a) is a table of logits\n"
      "whose softmax is exactly those frequencies. No bigram table has a lower cross-entropy\n"
      "on the train split (the floor): {}.\n"
      "But a pair never seen in training gets probability 0, and {} of the {} validation\n"
      "pairs are unseen: each would cost -log 0 = infinity. Adding 1 to every count first\n"
      "(smoothing) keeps them possible:\n",
      num(c.floor_train), c.unseen, d.split.val.size() - 1);
  fmt::print(
      "  the counting model W[a, b] = log((counts[a, b] + 1) / rowsum(counts + 1)):\n"
      "    train loss {}, val loss {}  <- the number learning must approach\n",
      num(c.opt_train), num(c.opt_val));
  fmt::print("  for scale, a uniform guess over V = {} characters: log(V) = {}\n", V,
             num(std::log(static_cast<double>(V))));

  const std::vector<int> top = most_frequent(d.split.train, V, 16);
  // P(next | current) on the frequent characters.
  const attn::Matrix probs = sub_table(c.optimum, top, [](float w) { return std::exp(w); });
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
}

void show_learning(const Data& d, const Counting& c, const Learning& l,
                   const attn::BigramTrainConfig& train, const attn::CommonOptions& common) {
  const std::size_t V = d.vocab.size(), B = train.batch_size, T = train.block_size;
  const double log_v = std::log(static_cast<double>(V));
  attn::underlined_section(4, "Learning: the same table by gradient descent");
  fmt::print(
      "Start from a ({}, {}) table of zeros: every row is the uniform guess, loss log(V).\n"
      "Each step draws a batch, looks up the row of every input token ((B*T, V) = ({}, {})\n"
      "logits), and moves each looked-up row against the gradient of the mean cross-entropy,\n"
      "(softmax(row) - onehot(target)) / (B*T). A row used k times gets k such terms.\n",
      V, V, B * T, V);
  fmt::print(
      "The step size starts at {} and falls linearly toward 0 over the {} steps: big steps\n"
      "travel far early, small ones late average out the noise of random batches.\n",
      fmt::format("{:g}", train.learning_rate), train.steps);
  fmt::print("batch size {}, block size {}:\n", B, T);
  if (!common.mine)
    attn::claim(std::abs(l.curve.front().train_loss - log_v) < 1e-3,
                "a table of zeros has loss log(V)");
  attn::BigramReport last{};
  for (const attn::BigramReport& r : printed_reports(l, train)) {
    fmt::print("  step {:>6}   train loss {}   val loss {}\n", r.step, num(r.train_loss),
               num(r.val_loss));
    last = r;
  }
  fmt::print(
      "After {} steps the learned table has train loss {}, {} above the floor, and\n"
      "val loss {} against {} for the counting model (difference {}).\n",
      last.step, num(last.train_loss), num(last.train_loss - c.floor_train), num(last.val_loss),
      num(c.opt_val), num(last.val_loss - c.opt_val));
  const double gap = last.val_loss - c.opt_val;  // learning minus counting, on unseen text
  if (!std::isfinite(last.train_loss) || last.train_loss > log_v) {
    fmt::print(
        "Learning failed: the loss ended above log(V), the score of the table of zeros.\n"
        "A step size of {} is too large for this gradient: each step overshoots and the\n"
        "table moves away from the optimum (try a smaller --lr).\n",
        fmt::format("{:g}", train.learning_rate));
  } else if (gap < -0.005) {
    fmt::print(
        "Learning beats counting on unseen text here: +1 is strong smoothing for this corpus\n"
        "({} pretend pairs added to {} real ones), and gradient descent stopped after {}\n"
        "steps never pushes an unseen pair all the way down, a gentler smoothing.\n",
        V * V, d.split.train.size() - 1, last.step);
  } else if (gap <= 0.02) {
    fmt::print(
        "Learning and counting found nearly the same table, by two very different routes.\n");
  } else {
    fmt::print(
        "Learning is still {} behind counting on unseen text: {} steps of size {} (falling\n"
        "to 0) have not travelled far enough from the table of zeros. More --steps or a\n"
        "larger --lr close the gap.\n",
        num(gap), last.step, fmt::format("{:g}", train.learning_rate));
  }
  if (!common.mine) {
    attn::claim(last.train_loss >= c.floor_train - 1e-4, "no bigram table goes below the floor");
  }
  if (common.timing) fmt::print("(training took {} ms)\n", num(l.seconds * 1000.0, 1));
  if (common.svg_dir) {
    attn::Series train_line{"train loss", {}, {}}, val_line{"val loss", {}, {}};
    for (const attn::BigramReport& r : l.curve) {
      train_line.x.push_back(static_cast<double>(r.step));
      train_line.y.push_back(r.train_loss);
      val_line.x.push_back(static_cast<double>(r.step));
      val_line.y.push_back(r.val_loss);
    }
    const double end = static_cast<double>(train.steps);
    const attn::Series counting{"counting model, val", {0.0, end}, {c.opt_val, c.opt_val}, true};
    const attn::Series floor_line{
        "floor (best train loss)", {0.0, end}, {c.floor_train, c.floor_train}, true};
    attn::LineChartOptions chart;
    chart.title = fmt::format("Learning the bigram table: loss vs step (lr {:g}, decaying)",
                              train.learning_rate);
    chart.x_label = "step";
    chart.y_label = "cross-entropy loss";
    chart.legend = attn::LineChartOptions::Legend::top_right;  // the curves settle at the bottom
    chart.width = 560;
    chart.height = 300;
    const auto path = *common.svg_dir / "loss_curve.svg";
    attn::write_svg(path,
                    attn::line_chart_svg({train_line, val_line, counting, floor_line}, chart));
    fmt::print("(written to {})\n", path.string());
  }
}

void show_constant_steps(const std::vector<ConstantStep>& rows,
                         const attn::BigramTrainConfig& train, double floor_train,
                         const attn::BigramReport& decayed) {
  fmt::print(
      "\nWhy the step decays: the same {} steps at a constant step size, from zeros, on the\n"
      "same batches. Train loss at the end, and how far above the floor ({}) it stalls:\n",
      train.steps, num(floor_train));
  fmt::print("  step size        train loss   above the floor\n");
  for (const ConstantStep& r : rows) {
    fmt::print("  {:<16} {:>10}   {}{}\n", fmt::format("{:g} (constant)", r.lr),
               std::isfinite(r.end) ? num(r.end) : std::string("nan"),
               std::isfinite(r.end) ? "+" + num(r.end - floor_train) : std::string("-"),
               r.blew_up ? "  blown up" : "");
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
    fmt::print(
        "From a step of {:g} up, the larger the constant step, the higher the loss stalls: each\n"
        "step jumps as far as the noise of one batch pushes it{}.\n",
        rows[best].lr,
        rows.back().blew_up ? fmt::format(", and {:g} blows up", rows.back().lr) : "");
    if (best > 0) {
      fmt::print("Smaller steps are steadier but slower: {} steps of {:g} have not arrived yet.\n",
                 train.steps, rows[0].lr);
    }
  } else {
    fmt::print(
        "Here the end losses do not grow steadily with the step: at {} steps they mix two\n"
        "effects, small steps that have not arrived yet and large ones that jitter.\n",
        train.steps);
  }
  if (decayed.train_loss <= rows[best].end) {
    fmt::print(
        "The decaying step beats every constant one: big steps early travel far, small\n"
        "steps late average the noise of the batches away.\n");
  } else {
    fmt::print(
        "Here a constant step of {:g} ends lower than the decay from {:g}: those decaying\n"
        "steps were too small to travel as far. Big steps early and small ones late work\n"
        "only if the early ones are big enough.\n",
        rows[best].lr, train.learning_rate);
  }
}

// 5. Sampling: from the start text, `length` times: the row of the last character, a softmax at
// the temperature, one draw, append.
void show_sample(const std::string& start, std::size_t length, float temperature,
                 const std::string& sampled) {
  attn::underlined_section(5, "Sampling: writing with the learned table");
  fmt::print(
      "Start from {}, then {} times: take the row of the last character, softmax(row / {}),\n"
      "draw the next character from it, append it.\n",
      attn::quote(attn::decode_utf8(start)), length, attn::format_significant(temperature));
  fmt::print("\n{}{}\n", attn::terminal_safe(attn::decode_utf8(start)),
             attn::terminal_safe(attn::decode_utf8(sampled)));
  fmt::print(
      "\nEach character was drawn knowing only the one before it: one character of context\n"
      "cannot hold a word together.\n"
      "Next: chapter 02 lets every position look at its whole past.\n");
}

}  // namespace ch01
