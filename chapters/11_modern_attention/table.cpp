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
#include <cstring>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/io/corpus.hpp"
#include "attn/term/narrate.hpp"
#include "attn/io/text.hpp"
#include "attn/model/kvcache.hpp"
#include "attn/io/data.hpp"
#include "attn/train/train.hpp"
#include "modern.hpp"

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
std::vector<std::size_t> chosen_rows(const std::string& text, const std::vector<Row>& rows) {
  std::vector<std::size_t> out;
  std::string names;
  for (const Row& r : rows) names += (names.empty() ? "" : ", ") + r.name;
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

std::vector<std::uint64_t> chosen_seeds(const std::string& text, std::uint64_t seed,
                                        std::size_t n) {
  std::vector<std::uint64_t> out;
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

// One run: trained from scratch, the val loss estimated every eval_interval steps and at the end.
struct Run {
  double best_val = std::numeric_limits<double>::infinity();
  std::size_t best_step = 0;
  std::size_t params = 0;
  double seconds = 0.0;  // the training steps only
};

Run train_row(const attn::ModelSpec& model, const TableSize& z, std::size_t steps,
              std::uint64_t seed, const attn::Split& split) {
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
      if (e.val_loss < r.best_val) {
        r.best_val = e.val_loss;
        r.best_step = s.step;
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

struct Summary {
  double mean = 0.0, lo = 0.0, hi = 0.0;
};
Summary summarise(const std::vector<double>& v) {
  Summary s{0.0, v.front(), v.front()};
  for (const double x : v) {
    s.mean += x / static_cast<double>(v.size());
    s.lo = std::min(s.lo, x);
    s.hi = std::max(s.hi, x);
  }
  return s;
}

// What the row does against the base row, chosen by the numbers: a mean below the base's range
// helps, above it hurts, else it is within the seeds' spread.
std::string verdict(const Summary& row, const Summary& base, std::size_t seeds) {
  const double d = row.mean - base.mean;
  if (seeds > 1 && row.hi < base.lo) return fmt::format("helps ({:+.4f}, beyond the spread)", d);
  if (seeds > 1 && row.lo > base.hi) return fmt::format("hurts ({:+.4f}, beyond the spread)", d);
  if (seeds > 1) return fmt::format("within the seeds' spread ({:+.4f})", d);
  return fmt::format("{:+.4f} (one seed: no spread to judge by)", d);
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
  const std::vector<std::size_t> chosen = chosen_rows(o.table_rows, rows);
  const std::vector<std::uint64_t> seeds = chosen_seeds(o.table_seeds, seed, z.seeds);
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
  const std::vector<std::size_t> chosen = chosen_rows(o.table_rows, rows);
  const std::vector<std::uint64_t> seeds = chosen_seeds(o.table_seeds, common.seed, z.seeds);
  const std::size_t steps = o.table_steps != 0 ? o.table_steps : z.steps;

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
              : "\n(The full table, C 64, H 4, L 4, T 64, B 32, 2000 steps, 3 seeds, is --table.)");
  flush_or_throw();
  std::vector<std::vector<double>> vals(rows.size());
  std::vector<Run> last(rows.size());
  std::vector<double> tokens_per_s(rows.size(), 0.0);
  for (const std::size_t r : chosen) {
    double tokens = 0.0, seconds = 0.0;
    for (const std::uint64_t seed : seeds) {
      const Run run = train_row(rows[r].model, z, steps, seed, split);
      vals[r].push_back(run.best_val);
      last[r] = run;
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

  fmt::print("\n  {:<8} {:<38} {:>7} {:>9} {:>17} {:>9}{}\n", "row", "model", "params", "best val",
             "min-max", "KV B/tok", common.timing ? "   tokens/s" : "");
  std::vector<Summary> sums(rows.size());
  for (const std::size_t r : chosen) {
    sums[r] = summarise(vals[r]);
    fmt::print(
        "  {:<8} {:<38} {:>7} {:>9} {:>17} {:>9}{}\n", rows[r].name, rows[r].what,
        attn::grouped(static_cast<double>(last[r].params)), num(sums[r].mean),
        num(sums[r].lo) + "-" + num(sums[r].hi),
        attn::grouped(static_cast<double>(kv_bytes_per_token(rows[r].model))),
        common.timing ? fmt::format(" {:>10}", attn::grouped(tokens_per_s[r])) : std::string());
  }
  // The verdicts, against the base row when it ran.
  if (std::find(chosen.begin(), chosen.end(), 0) == chosen.end()) return;
  fmt::print("\nAgainst the base row (mean best val, {} seed{}):\n", seeds.size(),
             seeds.size() == 1 ? "" : "s");
  std::size_t helped = 0, measured = 0;
  for (const std::size_t r : chosen) {
    if (r == 0) continue;
    ++measured;
    const std::string v = verdict(sums[r], sums[0], seeds.size());
    const bool helps = seeds.size() > 1 && sums[r].hi < sums[0].lo;
    attn::claim(helps == (v.rfind("helps", 0) == 0), "the verdict follows the spreads");
    if (helps) ++helped;
    std::string line = fmt::format("  {:<8} {}", rows[r].name, v);
    if (!helps && !rows[r].matters.empty())
      line += fmt::format(";\n           known to matter for {}", rows[r].matters);
    fmt::print("{}\n", line);
  }
  if (seeds.size() == 1) {
    fmt::print("One seed has no spread to judge a change by: give --table-seeds 1,2,3.\n");
  } else {
    fmt::print("{} of {} changes beat the base row by more than the seeds' spread at this size.\n",
               helped, measured);
  }
}

}  // namespace ch11
