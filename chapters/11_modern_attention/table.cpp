// chapters/11_modern_attention/table.cpp: section 6, the measured table. The CPU model trained
// from scratch with each of chapter 11's parts alone, then all together (the Llama recipe), on
// the same data, steps and seeds; the best validation loss of each run, averaged over the seeds
// with its spread, beside the parameters, the KV-cache bytes per token and (with --timing) the
// training speed. Training is the library's (attn::train_step, attn::estimate_loss), the same
// step chapter 09 runs.
#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/io/corpus.hpp"
#include "attn/term/narrate.hpp"
#include "attn/io/text.hpp"
#include "attn/model/kvcache.hpp"
#include "attn/model/model.hpp"
#include "attn/io/data.hpp"
#include "attn/train/train.hpp"
#include "modern.hpp"
#include "verdict.hpp"

namespace ch11 {

namespace {

using attn::num;
using attn::section;
using Clock = std::chrono::steady_clock;

// One row: a name to pick it by (--table-rows), what it changes, and the model.
struct Row {
  std::string name;
  std::string what;
  attn::ModelSpec model;
  std::string matters;  // where the change is known to matter (said when it does not help here)
};

std::vector<Row> table_rows(const TableSize& z, std::size_t V, const Options& o) {
  attn::ModelChoices base;  // chapter 07's model: learned positions, LayerNorm, GELU MLP, biases
  base.vocab_size = V;
  base.block_size = z.block_size;
  base.n_embd = z.n_embd;
  base.n_heads = z.n_heads;
  base.n_layers = z.n_layers;
  const double theta = o.rope_theta;
  const std::size_t kv = o.n_kv_heads, W = table_window(o, z);
  const auto with = [&](auto change) {
    attn::ModelChoices m = base;
    change(m);
    return attn::resolve_spec(m);
  };
  const auto llama = [&](attn::ModelChoices& m) {
    m.positions = attn::Positions::rope;
    m.rope_theta = theta;
    m.normalization = attn::Normalization::rmsnorm;
    m.ffn = attn::FfnKind::swiglu;
    m.n_kv_heads = kv;
    m.bias = false;
  };
  std::vector<Row> rows;
  rows.push_back({"base", "GPT-2's parts (chapter 07)", attn::resolve_spec(base), ""});
  rows.push_back({"rope", "+ RoPE instead of the position table", with([&](attn::ModelChoices& m) {
                    m.positions = attn::Positions::rope;
                    m.rope_theta = theta;
                  }),
                  "long-range retrieval inside the trained length (past it RoPE breaks: section 7, "
                  "--extrapolate)"});
  rows.push_back({"rmsnorm", "+ RMSNorm instead of LayerNorm", with([](attn::ModelChoices& m) {
                    m.normalization = attn::Normalization::rmsnorm;
                  }),
                  "the speed of large models (one reduction less per token)"});
  rows.push_back({"swiglu", "+ SwiGLU instead of the GELU MLP",
                  with([](attn::ModelChoices& m) { m.ffn = attn::FfnKind::swiglu; }),
                  "quality at scale (lower perplexity at equal parameters, Shazeer 2020)"});
  rows.push_back({"gqa", fmt::format("+ {} K/V heads for {}", kv, z.n_heads),
                  with([&](attn::ModelChoices& m) { m.n_kv_heads = kv; }),
                  "the cache of long contexts and large batches (memory, not loss)"});
  rows.push_back({"no-bias", "+ no biases", with([](attn::ModelChoices& m) { m.bias = false; }),
                  "the training stability of large models (PaLM, Llama)"});
  rows.push_back({"llama", "all five: the Llama recipe", with(llama),
                  "the scale these parts were chosen at (billions of parameters, long contexts)"});
  rows.push_back({"window", fmt::format("Llama + a window of {}", W),
                  with([&](attn::ModelChoices& m) {
                    llama(m);
                    m.window = W;
                  }),
                  "contexts far longer than the window (Mistral: 4096 of 32k)"});
  return rows;
}

// "base,llama" -> the rows' indices, in the order given; UsageError naming an unknown name.
std::vector<std::size_t> chosen_rows(const std::string& text, bool given,
                                     const std::vector<Row>& rows) {
  std::vector<std::size_t> out;
  std::string names;
  for (const Row& r : rows) names += (names.empty() ? "" : ", ") + r.name;
  if (text.empty() && given) {
    throw attn::UsageError(
        fmt::format("--table-rows is empty: give row names separated by commas ({})", names));
  }
  if (text.empty()) {
    for (std::size_t i = 0; i < rows.size(); ++i) out.push_back(i);
    return out;
  }
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    const auto it =
        std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.name == item; });
    if (it == rows.end()) {
      throw attn::UsageError(fmt::format(
          "--table-rows expects row names separated by commas ({}), got '{}'", names, text));
    }
    out.push_back(static_cast<std::size_t>(it - rows.begin()));
    if (end == text.size()) break;
    begin = end + 1;
  }
  return out;
}

std::vector<std::uint64_t> chosen_seeds(const std::string& text, bool given, std::uint64_t seed,
                                        std::size_t n) {
  std::vector<std::uint64_t> out;
  if (text.empty() && given) {
    throw attn::UsageError(
        "--table-seeds is empty: give up to 16 seeds (whole numbers >= 0) separated by commas, "
        "e.g. 1,2");
  }
  if (text.empty()) {
    for (std::size_t i = 0; i < n; ++i) out.push_back(seed + i);
    return out;
  }
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    std::size_t used = 0;
    unsigned long long s = 0;
    try {
      s = std::stoull(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || item[0] == '-' || out.size() == 16) {
      throw attn::UsageError(fmt::format(
          "--table-seeds expects up to 16 seeds (whole numbers >= 0) separated by commas, got "
          "'{}'",
          text));
    }
    out.push_back(s);
    if (end == text.size()) break;
    begin = end + 1;
  }
  return out;
}

// The validation windows where section 6 reads each run's loss by position: the same for every
// row and seed.
constexpr std::size_t kWindows = 64;

// One run: trained from scratch, the val loss estimated every eval_interval steps and at the end.
// At the best estimate it also keeps the train loss of the same estimate and the val loss by
// position over the fixed windows (what section 6 compares the window row with the full model by).
struct Run {
  double best_val = std::numeric_limits<double>::infinity();
  double train_at_best = 0.0;
  std::vector<double> by_position;  // (T,), at the best estimate
  std::vector<double> val_curve;    // the val loss of every estimate, in step order
  std::size_t best_step = 0;
  std::size_t params = 0;
  double seconds = 0.0;  // the training steps only
};

Run train_row(const attn::ModelSpec& model, const TableSize& z, std::size_t steps,
              std::uint64_t seed, const attn::Split& split, const attn::Batch& windows) {
  attn::TrainConfig c;
  c.model = model;
  c.batch_size = z.batch_size;
  c.steps = steps;
  c.schedule.lr = 1e-3f;
  c.eval_interval = z.eval_interval;
  c.eval_iters = z.eval_iters;
  c.seed = seed;
  attn::TrainState s = attn::train_init(c);
  Run r;
  r.params = attn::lm_parameter_count(s.weights);
  double seconds = 0.0;
  while (s.step < c.steps) {
    const Clock::time_point start = Clock::now();
    attn::train_step(s, c, split.train);
    seconds += std::chrono::duration<double>(Clock::now() - start).count();
    if (s.step % c.eval_interval == 0 || s.step == c.steps) {
      const attn::EvalRecord e =
          attn::estimate_loss(s.weights, c.model, split, c.batch_size, c.eval_iters, seed, s.step);
      r.val_curve.push_back(e.val_loss);
      if (e.val_loss < r.best_val) {
        r.best_val = e.val_loss;
        r.train_at_best = e.train_loss;
        r.best_step = s.step;
        r.by_position = loss_by_position(s.weights, c.model, windows);
      }
    }
  }
  r.seconds = seconds;
  return r;
}

// K and V of one token, every layer, float32: 2 L KV hs 4 bytes.
std::size_t kv_bytes_per_token(const attn::ModelSpec& m) {
  const std::size_t hs = m.n_embd / m.n_heads;
  const std::size_t formula = 2 * m.n_layers * m.n_kv_heads * hs * sizeof(float);
  if (attn::uses_rolling_cache(m)) {
    const std::size_t capacity = m.window.value_or(m.block_size);
    const std::size_t held = attn::rolling_cache_floats(m, 1) * sizeof(float) / capacity;
    attn::claim(held == formula, "the rolling cache holds 2 L KV hs floats per position");
  }
  return formula;
}

// Everything printed must reach its destination: a run with stdout on a full disk stops before
// it trains for a minute (Cli::run would report it only at the end).
void flush_or_throw() {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    throw std::runtime_error(fmt::format("cannot write the output (stdout): {}",
                                         errno != 0 ? std::strerror(errno) : "write error"));
  }
}

double mean(std::span<const double> v) {
  double s = 0.0;
  for (const double x : v) s += x / static_cast<double>(v.size());
  return s;
}
double mean_over(std::span<const double> v, std::size_t begin, std::size_t end) {
  return mean(v.subspan(begin, end - begin));
}

std::size_t index_of(const std::vector<Row>& rows, std::string_view name) {
  return static_cast<std::size_t>(
      std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.name == name; }) -
      rows.begin());
}

// Every row against the base row, by the one rule of verdict.hpp, stated first.
void show_verdicts(const std::vector<Row>& rows, const std::vector<std::size_t>& chosen,
                   const std::vector<std::vector<Run>>& runs, std::size_t n_seeds) {
  const auto best_vals = [&](std::size_t r) {
    std::vector<double> v;
    for (const Run& run : runs[r]) v.push_back(run.best_val);
    return v;
  };
  fmt::print(
      "\nAgainst the base row, seed by seed (the same seed gives both rows the same batches and\n"
      "the same validation batches). The rule, the same for every row: a change helps when its\n"
      "best val is below the base row's in every seed and its mean is lower by more than the\n"
      "base row's own spread over the seeds (max - min); it hurts when both hold the other way;\n"
      "else it is within the seeds' spread. It judges with {} seeds or more.\n",
      kVerdictSeeds);
  const std::vector<double> base = best_vals(0);
  std::size_t helped = 0, hurt = 0, measured = 0;
  for (const std::size_t r : chosen) {
    if (r == 0) continue;
    ++measured;
    const Verdict v = judge(best_vals(r), base);
    if (v.effect == Effect::helps) ++helped;
    if (v.effect == Effect::hurts) ++hurt;
    std::string line = fmt::format("  {:<8} {}", rows[r].name, verdict_text(v));
    if (v.effect != Effect::helps && !rows[r].matters.empty())
      line += fmt::format(";\n           known to matter for {}", rows[r].matters);
    fmt::print("{}\n", line);
  }
  if (n_seeds == 1) {
    fmt::print("One seed has no spread to judge a change by: give --table-seeds 1,2,3,4,5.\n");
  } else if (n_seeds < kVerdictSeeds) {
    fmt::print(
        "{} seeds are fewer than the rule's {}: no verdicts; give --table-seeds 1,2,3,4,5.\n",
        n_seeds, kVerdictSeeds);
  } else {
    fmt::print("By this rule, {} of {} changes help and {} hurt{} at this size.\n", helped,
               measured, hurt, hurt == 1 ? "s" : "");
  }
}

// The premise of the comparison by position, checked: the window row's weights run with and
// without the window give the same logits at positions 0..W-1 (no key is out of reach there) and
// other ones from W on. Fresh weights from the seed; the largest differences, (0..W-1, W..T-1).
struct SameKeys {
  double near = 0.0, far = 0.0;
};
SameKeys same_keys(const attn::ModelSpec& windowed, const attn::ModelSpec& full,
                   const attn::Batch& windows, std::uint64_t seed) {
  attn::Rng rng(seed, 1107);
  const attn::LmWeights w = attn::lm_init(rng, windowed);
  const attn::Tensor<3> a = attn::lm_forward(windows.x, w, windowed);  // (kWindows, T, V)
  const attn::Tensor<3> b = attn::lm_forward(windows.x, w, full);
  const std::size_t T = windows.x.shape()[1], W = *windowed.window, V = windowed.vocab_size;
  SameKeys d;
  for (std::size_t i = 0; i < kWindows; ++i)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t v = 0; v < V; ++v) {
        const double diff =
            std::abs(static_cast<double>(a(i, t, v)) - static_cast<double>(b(i, t, v)));
        double& into = t < W ? d.near : d.far;
        into = std::max(into, diff);
      }
  return d;
}

// The window row against the full Llama row (the same model, attending to every earlier
// position): best val, the train loss of the same estimate, and the val loss by position: at
// 0..W-1 both attend to exactly the same keys; from W on the full model sees more of them.
void show_window_against_full(const std::vector<Run>& full, const std::vector<Run>& windowed,
                              std::size_t W, const SameKeys& check) {
  const std::size_t n = full.size(), T = full.front().by_position.size();
  struct Side {
    std::vector<double> val, train, near, far;
  };
  const auto side = [&](const std::vector<Run>& runs) {
    Side s;
    for (const Run& r : runs) {
      s.val.push_back(r.best_val);
      s.train.push_back(r.train_at_best);
      s.near.push_back(mean_over(r.by_position, 0, W));
      s.far.push_back(W < T ? mean_over(r.by_position, W, T) : 0.0);
    }
    return s;
  };
  const Side a = side(full), b = side(windowed);
  const auto lower = [&](const std::vector<double>& x, const std::vector<double>& y) {
    std::size_t k = 0;
    for (std::size_t i = 0; i < n; ++i) k += y[i] < x[i] ? 1 : 0;
    return k;
  };
  const std::size_t T0 = full.front().by_position.size();
  attn::claim(check.near < 1e-5, "with and without the window, the same logits at 0..W-1");
  fmt::print(
      "\nThe window row against the full model (llama), mean of {} seed{}, each run read at its\n"
      "best estimate: the train loss of that estimate, and the val loss by position over {} fixed\n"
      "validation windows. At 0..{} both models attend to the same keys (the window row's "
      "weights,\n"
      "run with and without the window: logits that differ by {} there{}).\n",
      n, n == 1 ? "" : "s", kWindows, W - 1, attn::rounding_text(check.near),
      W < T0 ? fmt::format(",\nby up to {} from {} on", num(check.far), W) : "");
  fmt::print("  {:<16} {:>9} {:>10} {:>11} {:>11} {:>11}\n", "", "best val", "train loss",
             "val - train", fmt::format("val 0..{}", W - 1),
             W < T ? fmt::format("val {}..{}", W, T - 1) : std::string("-"));
  const auto line = [&](std::string_view name, const Side& s) {
    std::vector<double> gap(n);
    for (std::size_t i = 0; i < n; ++i) gap[i] = s.val[i] - s.train[i];
    fmt::print("  {:<16} {:>9} {:>10} {:>11} {:>11} {:>11}\n", name, num(mean(s.val)),
               num(mean(s.train)), num(mean(gap)), num(mean(s.near)),
               W < T ? num(mean(s.far)) : std::string("-"));
  };
  line("llama", a);
  line("window", b);
  std::vector<double> first(n), last(n);  // window - llama at the first and the last estimate
  for (std::size_t i = 0; i < n; ++i) {
    first[i] = windowed[i].val_curve.front() - full[i].val_curve.front();
    last[i] = windowed[i].val_curve.back() - full[i].val_curve.back();
  }
  const double d_val = mean(b.val) - mean(a.val), d_train = mean(b.train) - mean(a.train);
  const double d_near = mean(b.near) - mean(a.near);
  fmt::print("  window - llama   {:>+9.4f} {:>+10.4f} {:>11} {:>+11.4f} {:>11}\n", d_val, d_train,
             "", d_near, W < T ? fmt::format("{:+.4f}", mean(b.far) - mean(a.far)) : "-");
  fmt::print(
      "  (the window lower in {} of {} seed{} by best val, {} by train loss, {} at 0..{}{})\n",
      lower(a.val, b.val), n, n == 1 ? "" : "s", lower(a.train, b.train), lower(a.near, b.near),
      W - 1, W < T ? fmt::format(", {} at {}..{}", lower(a.far, b.far), W, T - 1) : "");
  fmt::print("By the table's rule, with llama in the base row's place, the window is\n  {}.\n",
             verdict_text(judge(b.val, a.val), "llama"));
  if (d_val >= 0.0) {
    fmt::print("The window row is not below the full model here ({:+.4f}).\n", d_val);
    return;
  }
  // What each measurement says, chosen by its sign.
  fmt::print(
      "The window's best val is {:.4f} lower.\n{}\n{}\n"
      "At the first estimate the window was {:+.4f} from the full model, at the last {:+.4f}.\n",
      -d_val,
      d_train < 0.0
          ? fmt::format("Its train loss is lower too ({:+.4f}): it fits the training text better, "
                        "so it is\nnot acting as a regulariser (one trades a higher train loss "
                        "for a lower val loss).",
                        d_train)
          : fmt::format("Its train loss is not lower ({:+.4f}): it fits the training text no "
                        "better and the\nvalidation text better, as a regulariser does.",
                        d_train),
      d_near < 0.0
          ? fmt::format("At 0..{}, where both attend to the same keys, it is lower as well "
                        "({:+.4f}): the gain is\nin what its weights learned, not in keys it "
                        "leaves out.",
                        W - 1, d_near)
          : fmt::format("At 0..{}, where both attend to the same keys, it is not lower "
                        "({:+.4f}): the gain\nis where the full model attends to more keys.",
                        W - 1, d_near),
      mean(first), mean(last));
}

}  // namespace

double training_seconds(const attn::ModelSpec& model, std::size_t batch_size, std::size_t steps,
                        std::size_t eval_interval, std::size_t eval_iters) {
  const double T = static_cast<double>(model.block_size), B = static_cast<double>(batch_size);
  const double estimates =
      eval_interval == 0 ? 0.0 : static_cast<double>(steps / eval_interval + 1);
  const double forwards =
      B * (3.0 * static_cast<double>(steps) + 2.0 * static_cast<double>(eval_iters) * estimates);
  return forwards * (attn::lm_token_flops_uncached(model, model.block_size) / 62e9 + T * 1.05e-6);
}

void check_table_flags(const Options& o, std::uint64_t seed) {
  const TableSize z = table_size(o.table);
  const std::vector<Row> rows = table_rows(z, 65, o);  // V: Tiny Shakespeare's, for the estimate
  const std::vector<std::size_t> chosen = chosen_rows(o.table_rows, o.table_rows_given, rows);
  const std::vector<std::uint64_t> seeds =
      chosen_seeds(o.table_seeds, o.table_seeds_given, seed, z.seeds);
  // The time it would train, up front: past the budget, refused with the flags to lower.
  if (o.extrapolate) {
    const double seconds = extrapolation_seconds(o);
    if (seconds > kMaxTrainingSeconds) {
      throw attn::UsageError(fmt::format(
          "--extrapolate with --extrapolate-steps {} and --extrapolate-seeds {} would train 5 "
          "models x {} seeds for about {:.0f} s here, more than the limit of {:.0f} s: lower "
          "--extrapolate-steps or --extrapolate-seeds",
          o.extrapolate_steps, o.extrapolate_seeds, o.extrapolate_seeds, seconds,
          kMaxTrainingSeconds));
    }
    return;
  }
  const std::size_t steps = o.table_steps != 0 ? o.table_steps : z.steps;
  double seconds = 0.0;
  for (const std::size_t r : chosen) {
    seconds += static_cast<double>(seeds.size()) *
               training_seconds(rows[r].model, z.batch_size, steps, z.eval_interval, z.eval_iters);
  }
  if (seconds > kMaxTrainingSeconds) {
    throw attn::UsageError(fmt::format(
        "the table{} would train {} run{} ({} row{} x {} seed{}) of {} steps for about {:.0f} s "
        "here, more than the limit of {:.0f} s: lower --table-steps, or train fewer rows and "
        "seeds at a time (--table-rows, --table-seeds)",
        o.table ? " (--table)" : "", chosen.size() * seeds.size(),
        chosen.size() * seeds.size() == 1 ? "" : "s", chosen.size(), chosen.size() == 1 ? "" : "s",
        seeds.size(), seeds.size() == 1 ? "" : "s", steps, seconds, kMaxTrainingSeconds));
  }
}

void run_table(const attn::CommonOptions& common, const Options& o) {
  const TableSize z = table_size(o.table);
  const attn::Corpus corpus = attn::load_corpus(common.data);
  const attn::Vocab vocab = attn::Vocab::from_text(corpus.text);
  const std::vector<int> ids = vocab.encode(corpus.text);
  const attn::Split split = attn::train_val_split(ids);
  if (split.val.size() < z.block_size + 1) {
    throw std::runtime_error(
        fmt::format("corpus {} is too short: its validation split needs at least {} characters",
                    corpus.origin, z.block_size + 1));
  }
  const std::vector<Row> rows = table_rows(z, vocab.size(), o);
  const std::vector<std::size_t> chosen = chosen_rows(o.table_rows, o.table_rows_given, rows);
  const std::vector<std::uint64_t> seeds =
      chosen_seeds(o.table_seeds, o.table_seeds_given, common.seed, z.seeds);
  const std::size_t steps = o.table_steps != 0 ? o.table_steps : z.steps;
  const attn::Batch windows = val_windows(split.val, z.block_size, kWindows);

  section(6, o.table ? "The measured table" : "The measured table (a small one)");
  fmt::print(
      "Each row trains the model from scratch on {} (V = {}):\n"
      "C {}, H {}, L {}, T {}, B {}, {} step{} of AdamW at lr 1e-3, the val loss over {} batches\n"
      "every {} steps; its best estimate counts. {} {}.{}\n\n",
      corpus.origin, vocab.size(), z.n_embd, z.n_heads, z.n_layers, z.block_size, z.batch_size,
      steps, steps == 1 ? "" : "s", z.eval_iters, z.eval_interval,
      seeds.size() == 1 ? "Seed" : "Seeds",
      [&] {
        std::string s;
        for (const std::uint64_t x : seeds) s += (s.empty() ? "" : ", ") + std::to_string(x);
        return s;
      }(),
      o.table ? ""
              : "\n(The full table, C 64, H 4, L 4, T 64, B 32, 2000 steps, 5 seeds, is --table.)");
  flush_or_throw();
  std::vector<std::vector<Run>> runs(rows.size());
  std::vector<double> tokens_per_s(rows.size(), 0.0);
  for (const std::size_t r : chosen) {
    double tokens = 0.0, seconds = 0.0;
    for (const std::uint64_t seed : seeds) {
      const Run run = train_row(rows[r].model, z, steps, seed, split, windows);
      runs[r].push_back(run);
      tokens += static_cast<double>(steps * z.batch_size * z.block_size);
      seconds += run.seconds;
      fmt::print(
          "  run {:<8} seed {:<6} best val {} (step {}){}\n", rows[r].name, seed, num(run.best_val),
          run.best_step,
          common.timing
              ? fmt::format(", {} tokens/s",
                            attn::grouped(static_cast<double>(steps * z.batch_size * z.block_size) /
                                          run.seconds))
              : std::string());
      flush_or_throw();
    }
    tokens_per_s[r] = tokens / seconds;
  }
  const auto best_vals = [&](std::size_t r) {
    std::vector<double> v;
    for (const Run& run : runs[r]) v.push_back(run.best_val);
    return v;
  };

  fmt::print("\n  {:<8} {:<38} {:>7} {:>9} {:>17} {:>9}{}\n", "row", "model", "params", "best val",
             "min-max", "KV B/tok", common.timing ? "   tokens/s" : "");
  for (const std::size_t r : chosen) {
    const std::vector<double> v = best_vals(r);
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    fmt::print(
        "  {:<8} {:<38} {:>7} {:>9} {:>17} {:>9}{}\n", rows[r].name, rows[r].what,
        attn::grouped(static_cast<double>(runs[r].front().params)), num(mean(v)),
        num(*lo) + "-" + num(*hi),
        attn::grouped(static_cast<double>(kv_bytes_per_token(rows[r].model))),
        common.timing ? fmt::format(" {:>10}", attn::grouped(tokens_per_s[r])) : std::string());
  }
  const auto ran = [&](std::string_view name) {
    return std::find_if(chosen.begin(), chosen.end(),
                        [&](std::size_t r) { return rows[r].name == name; }) != chosen.end();
  };
  if (ran("base") && chosen.size() > 1) show_verdicts(rows, chosen, runs, seeds.size());
  if (ran("llama") && ran("window")) {
    const std::size_t llama = index_of(rows, "llama"), window = index_of(rows, "window");
    show_window_against_full(
        runs[llama], runs[window], table_window(o, z),
        same_keys(rows[window].model, rows[llama].model, windows, common.seed));
  }
}

}  // namespace ch11
