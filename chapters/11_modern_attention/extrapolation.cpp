// chapters/11_modern_attention/extrapolation.cpp: section 7 (--extrapolate), train short, test
// long. Five models that differ only in how they know positions (a learned table, RoPE, RoPE
// with a window, ALiBi, none at all) are trained on windows of T tokens, then read validation
// text of 8T tokens; the loss at each position, averaged over the windows and the seeds, says
// which of them still predict well where they never trained.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/io/corpus.hpp"
#include "attn/io/data.hpp"
#include "attn/io/text.hpp"
#include "attn/model/model.hpp"
#include "attn/term/narrate.hpp"
#include "attn/term/plot.hpp"
#include "attn/train/train.hpp"
#include "modern.hpp"

namespace ch11 {

attn::Batch val_windows(const std::vector<int>& val, std::size_t length, std::size_t count) {
  attn::Batch w{xt::xtensor<int, 2>({count, length}), xt::xtensor<int, 2>({count, length})};
  const std::size_t room = val.size() - length - 1;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t start = count == 1 ? 0 : room * i / (count - 1);
    for (std::size_t t = 0; t < length; ++t) {
      w.x(i, t) = val[start + t];
      w.y(i, t) = val[start + t + 1];
    }
  }
  return w;
}

std::vector<double> loss_by_position(const attn::LmWeights& w, const attn::ModelSpec& m,
                                     const attn::Batch& win) {
  const attn::Tensor<3> logits = attn::lm_forward(win.x, w, m);  // (count, length, V)
  const std::size_t count = win.x.shape()[0], length = win.x.shape()[1], V = m.vocab_size;
  std::vector<double> loss(length, 0.0);
  for (std::size_t i = 0; i < count; ++i)
    for (std::size_t t = 0; t < length; ++t) {
      const float* row = &logits(i, t, 0);
      const double top = *std::max_element(row, row + V);
      double sum = 0.0;
      for (std::size_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(row[v]) - top);
      const double target = static_cast<double>(row[static_cast<std::size_t>(win.y(i, t))]);
      loss[t] += (std::log(sum) + top - target) / static_cast<double>(count);
    }
  return loss;
}

namespace {

using attn::num;
using attn::section;

// The model every variant shares: C 32, H 4, L 2, trained at T = 32, B 16.
constexpr std::size_t kT = 32, kLong = 8 * kT, kWindows = 16;

struct Variant {
  std::string name;
  attn::ModelSpec model;
};

std::vector<Variant> variants(std::size_t V) {
  attn::ModelChoices c;
  c.vocab_size = V;
  c.block_size = kT;
  c.n_embd = 32;
  c.n_heads = 4;
  c.n_layers = 2;
  std::vector<Variant> out;
  const auto add = [&](std::string name, attn::Positions p, std::optional<std::size_t> window) {
    attn::ModelChoices m = c;
    m.positions = p;
    m.window = window;
    out.push_back({std::move(name), attn::resolve_spec(m)});
  };
  add("learned table", attn::Positions::learned, std::nullopt);
  add("RoPE", attn::Positions::rope, std::nullopt);
  add(fmt::format("RoPE, window {}", kT / 4), attn::Positions::rope, kT / 4);
  add("ALiBi", attn::Positions::alibi, std::nullopt);
  add("no positions", attn::Positions::none, std::nullopt);
  return out;
}

double mean_over(const std::vector<double>& v, std::size_t begin, std::size_t end) {
  double s = 0.0;
  for (std::size_t t = begin; t < end; ++t) s += v[t];
  return s / static_cast<double>(end - begin);
}

// The buckets of positions: the trained positions with the most context (T/2..T) first.
struct Bucket {
  std::size_t begin, end;
};
constexpr Bucket kBuckets[] = {{kT / 2, kT}, {kT, 2 * kT}, {2 * kT, 4 * kT}, {4 * kT, 8 * kT}};

// The verdict rule, the same for every row: a model "holds" at a length when its loss there is
// within kHold nats of its loss at T/2..T in every seed, "breaks" when it is worse by more than
// that in every seed, and is "mixed" otherwise.
constexpr double kHold = 0.05;

}  // namespace

double extrapolation_seconds(const Options& o) {
  double seconds = 0.0;
  for (const Variant& v : variants(65)) {  // V: Tiny Shakespeare's, for the estimate
    // Training (B 16, no estimates), then a forward over the long windows (counted as one step).
    seconds += static_cast<double>(o.extrapolate_seeds) *
               (training_seconds(v.model, 16, o.extrapolate_steps, 0, 0) +
                training_seconds(v.model, kWindows * kLong / kT / 3, 1, 0, 0));
  }
  return seconds;
}

void run_extrapolation(const attn::CommonOptions& common, const Options& o) {
  const attn::Corpus corpus = attn::load_corpus(common.data);
  const attn::Vocab vocab = attn::Vocab::from_text(corpus.text);
  const std::vector<int> ids = vocab.encode(corpus.text);
  const attn::Split split = attn::train_val_split(ids);
  const std::vector<int>& val = split.val;
  if (val.size() < kLong + kWindows + 1) {
    throw std::runtime_error(
        fmt::format("corpus {} is too short: section 7 reads validation windows of {} tokens",
                    corpus.origin, kLong + 1));
  }
  const std::size_t steps = o.extrapolate_steps, n_seeds = o.extrapolate_seeds;
  section(7, "Train short, test long");
  fmt::print(
      "Five models differ only in how they know where a token is: a learned table of T = {}\n"
      "rows, RoPE, RoPE with a window of {}, ALiBi, and no positions at all. Each is trained on\n"
      "windows of T = {} tokens ({} steps of B 16, C 32, H 4, L 2, lr 1e-3), then reads the\n"
      "same {} validation windows of 8T = {} tokens.\nCorpus {}; {} seeds from {}.\n\n",
      kT, kT / 4, kT, steps, kWindows, kLong, corpus.origin, n_seeds, common.seed);
  const attn::Batch short_win = val_windows(val, kT, kWindows),
                    long_win = val_windows(val, kLong, kWindows);
  const std::vector<Variant> rows = variants(vocab.size());
  // loss[row][seed][bucket], and each row's loss by position averaged over the seeds.
  std::vector<std::vector<std::vector<double>>> loss(rows.size());
  std::vector<std::vector<double>> curve(rows.size());
  std::string table_error;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t s = 0; s < n_seeds; ++s) {
      attn::TrainConfig c;
      c.model = rows[r].model;
      c.batch_size = 16;
      c.steps = steps;
      c.schedule.lr = 1e-3f;
      c.seed = common.seed + s;
      attn::TrainState st = attn::train_init(c);
      while (st.step < c.steps) attn::train_step(st, c, split.train);
      std::vector<double> by_pos;
      if (rows[r].model.learned_positions()) {
        by_pos = loss_by_position(st.weights, c.model, short_win);
        try {  // what the table says past its last row
          (void)loss_by_position(st.weights, c.model, long_win);
        } catch (const std::invalid_argument& e) {
          table_error = e.what();
        }
      } else {
        by_pos = loss_by_position(st.weights, c.model, long_win);
      }
      std::vector<double> buckets;
      for (const Bucket& b : kBuckets) {
        buckets.push_back(b.end <= by_pos.size() ? mean_over(by_pos, b.begin, b.end)
                                                 : std::numeric_limits<double>::quiet_NaN());
      }
      loss[r].push_back(buckets);
      curve[r].resize(by_pos.size(), 0.0);
      for (std::size_t t = 0; t < by_pos.size(); ++t)
        curve[r][t] += by_pos[t] / static_cast<double>(n_seeds);
    }
  }

  // The table: each bucket's mean over the seeds, and how much worse than T/2..T it is.
  fmt::print(
      "Validation loss by position (mean of {} seeds; in brackets: minus the loss at\n"
      "positions {}..{}, the trained positions with the most context):\n",
      n_seeds, kT / 2, kT - 1);
  fmt::print("  {:<16}", "");
  for (const Bucket& b : kBuckets) fmt::print(" {:>18}", fmt::format("{}..{}", b.begin, b.end - 1));
  fmt::print("\n");
  for (std::size_t r = 0; r < rows.size(); ++r) {
    fmt::print("  {:<16}", rows[r].name);
    for (std::size_t k = 0; k < std::size(kBuckets); ++k) {
      double mean = 0.0, gap = 0.0;
      for (const std::vector<double>& seed : loss[r]) {
        mean += seed[k] / static_cast<double>(n_seeds);
        gap += (seed[k] - seed[0]) / static_cast<double>(n_seeds);
      }
      if (std::isnan(mean)) {
        fmt::print(" {:>18}", "(no table row)");
      } else if (k == 0) {
        fmt::print(" {:>18}", num(mean, 3));
      } else {
        fmt::print(" {:>18}", fmt::format("{} ({:+.3f})", num(mean, 3), gap));
      }
    }
    fmt::print("\n");
  }
  if (!table_error.empty()) {
    fmt::print("The learned table cannot read 8T tokens at all; lm_forward says:\n  {}\n",
               table_error);
  }

  // The verdicts, by the rule stated.
  fmt::print(
      "\nThe rule: a model holds at a length when its loss there is within {} nats of its "
      "loss\nat {}..{} in every seed, breaks when it is worse by more in every seed, and "
      "is mixed\notherwise. At 4T..8T ({}..{}):\n",
      kHold, kT / 2, kT - 1, 4 * kT, 8 * kT - 1);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].model.learned_positions()) {
      fmt::print("  {:<16} cannot go past T = {}: its table has no row {}.\n", rows[r].name, kT,
                 kT);
      continue;
    }
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const std::vector<double>& seed : loss[r]) {
      lo = std::min(lo, seed[3] - seed[0]);
      hi = std::max(hi, seed[3] - seed[0]);
    }
    const char* verdict = hi <= kHold ? "holds" : lo > kHold ? "breaks" : "mixed";
    fmt::print("  {:<16} {:<6} (worse by {:+.3f} to {:+.3f} over the seeds)\n", rows[r].name,
               verdict, lo, hi);
  }

  if (common.svg_dir) {
    std::vector<attn::Series> series;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      attn::Series s{rows[r].name, {}, {}};
      for (std::size_t t = 0; t + 8 <= curve[r].size(); t += 8) {  // 8 positions a point
        s.x.push_back(static_cast<double>(t) + 3.5);
        s.y.push_back(mean_over(curve[r], t, t + 8));
      }
      series.push_back(std::move(s));
    }
    attn::LineChartOptions opt;
    opt.title = fmt::format(
        "Trained at T = {}, read at 8T: validation loss by position ({} seeds "
        "from {}, {})",
        kT, n_seeds, common.seed, corpus.origin);
    opt.x_label = "position in the window (T = 32 is the training length)";
    opt.y_label = "loss (nats), mean of 8 positions";
    opt.x_ticks = {0, 32, 64, 128, 256};
    const std::filesystem::path path = *common.svg_dir / "extrapolation.svg";
    attn::write_svg(path, attn::line_chart_svg(series, opt));
    fmt::print("\nWrote {}.\n", path.string());
  }
}

}  // namespace ch11
