// chapters/09_training/main.cpp: chapter 09, training the character GPT.
// The narrated walkthrough: the data as the lecture prepares it, one training step taken apart,
// a run with a progress line and loss estimates, samples before and after, and what every
// trained head attends to. --ladder rebuilds the lecture's loss table row by row. The math lives
// in common/src/train/train.cpp, optim.cpp and model.cpp; this file calls it and tells the story.

#include <fmt/core.h>
#include <unistd.h>  // isatty

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/model/bigram.hpp"
#include "attn/model/block.hpp"
#include "attn/io/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/core/limits.hpp"
#include "attn/ops/loss.hpp"
#include "attn/model/model.hpp"
#include "attn/io/narrate.hpp"
#include "attn/train/optim.hpp"
#include "attn/io/plot.hpp"
#include "attn/io/print.hpp"
#include "attn/core/random.hpp"
#include "attn/model/sample.hpp"
#include "attn/io/text.hpp"
#include "attn/train/train.hpp"
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

// ---- Limits on what a user can type (the input contract: every size bounded, in --help).
constexpr std::size_t kMaxEmbd = 1024;
constexpr std::size_t kMaxHeads = 64;
constexpr std::size_t kMaxLayers = 32;
constexpr std::size_t kMaxBlock = 1024;
constexpr std::size_t kMaxBatch = 1024;
constexpr std::size_t kMaxSteps = 1000000;
constexpr std::size_t kMaxEvalIters = 10000;
constexpr std::size_t kMaxSample = 10000;
// B * T tokens of activations per step, and the model's parameters: both bounded so a typo
// cannot ask for more memory than a laptop has.
constexpr std::size_t kMaxTokensPerStep = std::size_t{1} << 17;

// ---- Ctrl-C: finish the step, save, exit 130.
std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) { g_interrupted.store(true); }

// ---- The functions the walkthrough calls: from attn:: (the reference) or, with --mine, the
// learner's ex09:: exercises.
struct Kernels {
  void (*adamw_update)(std::span<float>, std::span<const float>, std::span<float>,
                       std::span<float>, float, float, std::size_t,
                       const attn::AdamWConfig&);                                    // ex09.1
  attn::Batch (*get_batch)(std::span<const int>, std::size_t, std::size_t, attn::Rng&);  // ex09.2
  attn::EvalRecord (*estimate_loss)(const attn::LmWeights&, const attn::LmConfig&,
                                    const attn::Split&, std::size_t, std::size_t,
                                    std::uint64_t, std::size_t);                      // ex09.3
  attn::StepResult (*train_step_on)(attn::TrainState&, const attn::TrainConfig&,
                                    const Tokens&, const Tokens&);                    // ex09.4
  bool reference;  // true: the library's own step (it reuses the batch buffers)
};

Kernels reference_kernels() {
  return {&attn::adamw_update, &attn::get_batch, &attn::estimate_loss, &attn::train_step_on, true};
}
Kernels learner_kernels() {
  return {&ex09::adamw_update, &ex09::get_batch, &ex09::estimate_loss, &ex09::train_step_on,
          false};
}

// ---- The chapter's flags.
struct Options {
  std::size_t n_embd = 64;
  std::size_t n_heads = 4;
  std::size_t n_layers = 2;
  std::size_t block_size = 32;
  std::size_t batch_size = 16;
  std::size_t steps = 1500;
  float lr = 2e-3f;
  float weight_decay = 0.01f;  // torch.optim.AdamW's default, as the lecture leaves it
  float grad_clip = 0.0f;      // off, like the lecture
  std::size_t eval_interval = 250;
  std::size_t eval_iters = 50;
  std::size_t sample_length = 200;
  std::string activation = "relu";  // the lecture's FFN
  std::string init = "gpt2";
  std::string schedule = "constant";
  std::size_t warmup = 0;
  bool tied = false;  // the lecture's lm_head: a separate Linear(C, V) with bias
  std::string save_dir;
  std::string resume_dir;
  bool ladder = false;
  std::size_t ladder_steps = 0;  // 0: the lecture's 5000 (3000 for the bigram)
  std::string ladder_rows;       // "" = all; e.g. "0,5"
};


// ---- Narration helpers.


std::string num(double value, int precision = 4) {
  return attn::format_number(static_cast<float>(value), precision);
}

std::string thousands(double n) {
  if (n >= 1e6) return fmt::format("{:.2f}M", n / 1e6);
  if (n >= 1e3) return fmt::format("{:.1f}k", n / 1e3);
  return fmt::format("{:.0f}", n);
}

std::string clock_text(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}


double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---- Flag checks, before anything is printed (exit 2 with the flag named).

attn::TrainConfig config_from(const Options& o, std::size_t V, std::uint64_t seed) {
  if (o.n_embd % o.n_heads != 0) {
    throw attn::UsageError(fmt::format(
        "--n-heads {} does not divide --n-embd {} (every head gets n_embd / n_heads channels)",
        o.n_heads, o.n_embd));
  }
  if (o.batch_size * o.block_size > kMaxTokensPerStep) {
    throw attn::UsageError(fmt::format(
        "--batch-size {} x --block-size {} = {} tokens per step, at most {} are allowed",
        o.batch_size, o.block_size, o.batch_size * o.block_size, kMaxTokensPerStep));
  }
  attn::TrainConfig c;
  c.model.vocab_size = V;
  c.model.block_size = o.block_size;
  c.model.n_embd = o.n_embd;
  c.model.n_heads = o.n_heads;
  c.model.n_layers = o.n_layers;
  c.model.tied_head = o.tied;
  try {
    c.model.activation = attn::parse_activation(o.activation);
    c.init = attn::parse_init(o.init);
    c.schedule.shape = attn::parse_lr_shape(o.schedule);
  } catch (const std::invalid_argument& e) {
    throw attn::UsageError(e.what());
  }
  const std::size_t C = o.n_embd, L = o.n_layers;
  const std::size_t params = V * C * (o.tied ? 1 : 2) + o.block_size * C + L * 12 * C * C;
  if (params > attn::limits::kMaxModelParameters) {
    throw attn::UsageError(fmt::format(
        "a model of about {} parameters is too big for this chapter (at most {}): lower "
        "--n-embd or --n-layers",
        params, attn::limits::kMaxModelParameters));
  }
  // The backward keeps every layer's activations, the (B, H, T, T) attention weights the largest.
  const std::size_t kept = attn::block_activation_floats(o.batch_size, o.block_size, C,
                                                         4 * C, o.n_heads, attn::BlockConfig{});
  if (kept > attn::limits::kMaxElements / L) {
    throw attn::UsageError(fmt::format(
        "--batch-size {}, --block-size {}, --n-embd {}, --n-heads {} and --n-layers {} would keep "
        "{} of activations for the backward (at most {}): lower one of them",
        o.batch_size, o.block_size, C, o.n_heads, L,
        attn::bytes_text(static_cast<std::uint64_t>(kept) * L * sizeof(float)),
        attn::bytes_text(attn::limits::kMaxElements * sizeof(float))));
  }
  c.batch_size = o.batch_size;
  c.steps = o.steps;
  c.schedule.lr = o.lr;
  c.schedule.warmup = o.warmup;
  c.schedule.total = o.steps;
  c.schedule.min_lr = o.lr / 10.0f;
  c.adam.weight_decay = o.weight_decay;
  c.grad_clip = o.grad_clip;
  c.eval_interval = o.eval_interval;
  c.eval_iters = o.eval_iters;
  c.seed = seed;
  return c;
}


// With --resume, the checkpoint fixes the model and the optimizer: a flag that says otherwise is a
// usage error (exit 2), never silently ignored. --steps, --save and --sample-length may change.
void check_resume_flags(const Options& o, const attn::TrainConfig& c, int argc, char** argv) {
  const auto same = [&](std::string_view flag, const std::string& given, const std::string& saved) {
    if (flag_given(argc, argv, flag) && given != saved) {
      throw attn::UsageError(fmt::format(
          "{} cannot change when resuming (the checkpoint has {}, got {}): drop the flag or "
          "start a new run",
          flag, saved, given));
    }
  };
  const auto n = [](auto x) { return fmt::format("{}", x); };
  same("--n-embd", n(o.n_embd), n(c.model.n_embd));
  same("--n-heads", n(o.n_heads), n(c.model.n_heads));
  same("--n-layers", n(o.n_layers), n(c.model.n_layers));
  same("--block-size", n(o.block_size), n(c.model.block_size));
  same("--batch-size", n(o.batch_size), n(c.batch_size));
  same("--lr", n(o.lr), n(c.schedule.lr));
  same("--weight-decay", n(o.weight_decay), n(c.adam.weight_decay));
  same("--grad-clip", n(o.grad_clip), n(c.grad_clip));
  same("--eval-interval", n(o.eval_interval), n(c.eval_interval));
  same("--eval-iters", n(o.eval_iters), n(c.eval_iters));
  same("--activation", o.activation, std::string(attn::activation_name(c.model.activation)));
  same("--init", o.init, std::string(attn::init_name(c.init)));
  same("--tied", o.tied ? "on" : "off", c.model.tied_head ? "on" : "off");
  same("--schedule", o.schedule, c.schedule.shape == attn::LrShape::constant ? "constant" : "cosine");
  same("--warmup", n(o.warmup), n(c.schedule.warmup));
  if (flag_given(argc, argv, "--seed")) {
    throw attn::UsageError("--seed cannot change when resuming: the checkpoint holds the run's seed");
  }
}

// ---- The data, as the lecture prepares it.
struct Data {
  attn::Vocab vocab;
  attn::Split split;
};

Data prepare_data(const attn::Corpus& corpus) {
  attn::Vocab vocab = attn::Vocab::from_text(corpus.text);
  const std::vector<int> ids = vocab.encode(corpus.text);
  return {std::move(vocab), attn::train_val_split(ids)};
}

void check_data_fits(const Data& d, std::size_t block_size) {
  if (d.split.val.size() < block_size + 1) {
    throw std::runtime_error(fmt::format(
        "the corpus is too short for --block-size {}: its validation split (the last 10%) has "
        "{} tokens, a window needs {}",
        block_size, d.split.val.size(), block_size + 1));
  }
}

// ---- The run: steps, estimates, progress, checkpoints.

struct RunReport {
  double seconds = 0.0;
  std::size_t steps_taken = 0;
  bool interrupted = false;
};

// `taken`: the steps of this session (a resumed run started at a later step); the time left is
// the steps still to go at the pace of those.
std::string progress_line(std::size_t step, std::size_t total, std::size_t taken, double loss,
                          std::optional<double> val, double tokens_per_s, double elapsed) {
  const double left =
      taken > 0 ? elapsed * static_cast<double>(total - step) / static_cast<double>(taken) : 0.0;
  return fmt::format("step {:>5}/{} | loss {} | val {} | {} tok/s | {} elapsed | ETA {}", step,
                     total, num(loss), val ? num(*val) : std::string("  -   "),
                     thousands(tokens_per_s), clock_text(elapsed), clock_text(left));
}

RunReport run_training(const Kernels& k, attn::TrainState& s, const attn::TrainConfig& c,
                       const Data& d, const std::string& save_dir, bool timing) {
  const bool live = ::isatty(STDOUT_FILENO) != 0;
  const std::size_t tokens_per_step = c.batch_size * c.model.block_size;
  const Clock::time_point start = Clock::now();
  RunReport report;
  std::optional<double> last_val;
  if (!s.evals.empty()) last_val = s.evals.back().val_loss;
  Clock::time_point last_draw = start;

  const auto evaluate = [&](std::size_t step) {
    const attn::EvalRecord e =
        k.estimate_loss(s.weights, c.model, d.split, c.batch_size, c.eval_iters, c.seed, step);
    s.evals.push_back(e);
    last_val = e.val_loss;
    if (live) fmt::print("\r\033[K");
    std::string line = fmt::format("step {:>5}: train loss {}, val loss {}", step,
                                   num(e.train_loss), num(e.val_loss));
    if (timing && report.steps_taken > 0) {
      const double t = seconds_since(start);
      line += fmt::format("  ({} tok/s, {} elapsed)",
                          thousands(static_cast<double>(report.steps_taken * tokens_per_step) / t),
                          clock_text(t));
    }
    fmt::print("{}\n", line);
    std::fflush(stdout);  // a log file shows each estimate as it comes
    if (!save_dir.empty()) attn::save_checkpoint(save_dir, s, c, d.vocab);
  };

  if (s.step == 0 && s.evals.empty()) evaluate(0);
  while (s.step < c.steps) {
    attn::StepResult r{};
    if (k.reference) {
      r = attn::train_step(s, c, d.split.train);  // the same draws, into reused buffers
    } else {
      s.batch = k.get_batch(d.split.train, c.batch_size, c.model.block_size, s.data_rng);
      r = k.train_step_on(s, c, s.batch.x, s.batch.y);
    }
    if (!std::isfinite(r.loss)) {
      throw std::runtime_error(fmt::format(
          "the loss became {} at step {}: the learning rate {} is too high for this model "
          "(try --lr {} or --grad-clip 1)",
          num(r.loss), s.step, num(c.schedule.lr, 5), num(c.schedule.lr / 10.0f, 5)));
    }
    ++report.steps_taken;
    if (live && seconds_since(last_draw) > 0.2) {
      last_draw = Clock::now();
      const double t = seconds_since(start);
      fmt::print("\r\033[K{}", progress_line(s.step, c.steps, report.steps_taken, r.loss, last_val,
                                              static_cast<double>(report.steps_taken *
                                                                  tokens_per_step) / t,
                                              t));
      std::fflush(stdout);
    }
    const bool last = s.step == c.steps;
    if (s.step % c.eval_interval == 0 || last) evaluate(s.step);
    if (g_interrupted.load()) {
      if (!(s.step % c.eval_interval == 0 || last) && !save_dir.empty()) {
        attn::save_checkpoint(save_dir, s, c, d.vocab);
      }
      report.interrupted = true;
      break;
    }
  }
  if (live) fmt::print("\r\033[K");
  report.seconds = seconds_since(start);
  return report;
}


// The loss curve: every step's training loss (noisy) and the estimates of both splits.
std::string loss_curve_svg(const attn::TrainState& s) {
  attn::Series steps{"train loss of each step's batch", {}, {}};
  steps.dots = false;  // one point per step: a dot each would hide the estimates
  for (std::size_t i = 0; i < s.losses.size(); ++i) {
    steps.x.push_back(static_cast<double>(i + 1));
    steps.y.push_back(static_cast<double>(s.losses[i]));
  }
  attn::Series train{"train (estimate)", {}, {}}, val{"val (estimate)", {}, {}};
  for (const attn::EvalRecord& e : s.evals) {
    train.x.push_back(static_cast<double>(e.step));
    train.y.push_back(e.train_loss);
    val.x.push_back(static_cast<double>(e.step));
    val.y.push_back(e.val_loss);
  }
  attn::LineChartOptions opt;
  opt.title = "Chapter 09: the loss while training";
  opt.x_label = "step";
  opt.y_label = "cross-entropy (nats)";
  opt.dots = true;  // the estimates, every eval_interval steps
  return attn::line_chart_svg({steps, train, val}, opt);
}

// ---- Samples.

std::string sample_text(const attn::LmWeights& w, const attn::LmConfig& config,
                        const attn::Vocab& vocab, std::size_t n, std::uint64_t seed) {
  attn::Rng rng(seed, 909);
  attn::GenerateOptions g;
  g.max_new_tokens = n;
  const std::vector<int> prompt = {vocab.id_of(U'\n')};
  const std::vector<int> ids = attn::lm_generate(w, config, prompt, g, rng);
  return vocab.decode(ids);
}

// The sample line by line behind a margin, control characters escaped (the corpus may hold any).
void print_sample(std::string_view text) {
  const std::u32string chars = attn::decode_utf8(text);
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = std::min(chars.find(U'\n', begin), chars.size());
    fmt::print("  | {}\n", attn::terminal_safe(std::u32string_view(chars).substr(begin, end - begin)));
    if (end == chars.size()) break;
    begin = end + 1;
  }
}

// ---- What the heads attend to.

struct HeadStats {
  double previous = 0.0;     // attention on position t - 1
  double self = 0.0;         // on position t itself
  double same_char = 0.0;    // on earlier positions holding the same character
  double line_start = 0.0;   // on the first character of the current line (or the newline)
  double distance = 0.0;     // mean distance t - s, weighted
};

HeadStats head_stats(const attn::Tensor<4>& weights, std::size_t h, std::span<const int> ids,
                     const attn::Vocab& vocab) {
  const std::size_t T = ids.size();
  HeadStats st;
  std::size_t line_begin = 0;
  std::size_t counted_prev = 0;
  for (std::size_t t = 0; t < T; ++t) {
    if (t > 0 && vocab.char_of(ids[t - 1]) == U'\n') line_begin = t;
    const auto p = [&](std::size_t s2) { return static_cast<double>(weights(0, h, t, s2)); };
    st.self += p(t);
    if (t > 0) {
      st.previous += p(t - 1);
      ++counted_prev;
    }
    st.line_start += p(line_begin == 0 ? 0 : line_begin - 1) + (line_begin == 0 ? 0.0 : p(line_begin));
    for (std::size_t s2 = 0; s2 < t; ++s2) {
      if (ids[s2] == ids[t]) st.same_char += p(s2);
      st.distance += p(s2) * static_cast<double>(t - s2);
    }
  }
  const double n = static_cast<double>(T);
  st.self /= n;
  st.previous /= static_cast<double>(std::max<std::size_t>(counted_prev, 1));
  st.same_char /= n;
  st.line_start /= n;
  st.distance /= n;
  return st;
}

// One sentence chosen by the numbers: the head's strongest habit.
std::string describe(const HeadStats& st) {
  struct Habit {
    double share;
    std::string_view text;
  };
  const Habit habits[] = {{st.previous, "the previous character"},
                          {st.self, "its own position"},
                          {st.same_char, "earlier copies of the same character"},
                          {st.line_start, "the start of the line"}};
  const Habit* best = &habits[0];
  for (const Habit& h : habits) {
    if (h.share > best->share) best = &h;
  }
  if (best->share >= 0.5) return fmt::format("mostly {} ({}%)", best->text, num(100 * best->share, 0));
  if (best->share >= 0.25) {
    return fmt::format("leans on {} ({}%), spreads the rest over ~{} characters back",
                       best->text, num(100 * best->share, 0), num(st.distance, 1));
  }
  return fmt::format("spreads out: no habit above 25%, mean distance {} characters",
                     num(st.distance, 1));
}

void show_heads(const attn::LmWeights& w, const attn::LmConfig& config, const Data& d,
                const std::optional<fs::path>& svg_dir, int number) {
  section(number, "What the trained heads attend to");
  // The first line of the validation text with at least 24 characters, cut to at most T_max
  // (and 40) characters: one line, so "the start of the line" is position 0.
  const std::span<const int> val = d.split.val;
  const int newline = d.vocab.contains(U'\n') ? d.vocab.id_of(U'\n') : -1;
  std::size_t begin = 0, length = 0;
  for (std::size_t i = 0; i < val.size();) {
    std::size_t end = i;
    while (end < val.size() && val[end] != newline) ++end;
    if (end - i >= 24 || end == val.size()) {
      begin = i;
      length = end - i;
      break;
    }
    i = end + 1;
  }
  const std::size_t T =
      std::min<std::size_t>({config.block_size, 40, length, val.size() - begin - 1});
  const std::span<const int> ids = val.subspan(begin, T);
  const std::span<const int> next = val.subspan(begin + 1, T);
  Tokens x({1, T}), y({1, T});
  std::copy(ids.begin(), ids.end(), x.begin());
  std::copy(next.begin(), next.end(), y.begin());
  attn::LmWeights grads = attn::lm_zeros_like(w);
  attn::LmCache cache;
  const double loss = attn::lm_forward_backward(x, y, w, config, grads, cache);
  fmt::print("The line {} (loss {} on it). Rows: the query character; columns: the keys it may\n"
             "see (causal: only the past; '_' is a space). Darker = more attention.\n",
             attn::quote(chars_of(d.vocab, ids)), num(loss));
  // One glyph per character, so the columns stay one character wide: '_' marks a space.
  std::vector<std::string> labels;
  for (int id : ids) {
    const char32_t ch = d.vocab.char_of(id);
    labels.push_back(ch == U' ' ? std::string("_") : attn::printable(ch));
  }
  for (std::size_t l = 0; l < config.n_layers; ++l) {
    const attn::Tensor<4>& weights = cache.blocks[l].attn.weights;  // (1, H, T, T)
    for (std::size_t h = 0; h < config.n_heads; ++h) {
      Matrix m({T, T});
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t s2 = 0; s2 < T; ++s2) m(t, s2) = weights(0, h, t, s2);
      attn::HeatmapOptions opt;
      opt.title = fmt::format("layer {} head {}", l, h);
      opt.row_labels = labels;
      opt.col_labels = labels;
      opt.vmin = 0.0f;
      opt.vmax = 1.0f;
      opt.annotate = false;
      const HeadStats st = head_stats(weights, h, ids, d.vocab);
      fmt::print("\nlayer {} head {}: {}\n", l, h, describe(st));
      fmt::print("  previous {}%  self {}%  same character {}%  line start {}%  mean distance {}\n",
                 num(100 * st.previous, 0), num(100 * st.self, 0), num(100 * st.same_char, 0),
                 num(100 * st.line_start, 0), num(st.distance, 1));
      attn::HeatmapOptions terminal = opt;
      terminal.title.clear();  // the sentence above says which head it is
      fmt::print("{}", attn::heatmap_text(m, terminal, attn::use_color(stdout)));
      if (svg_dir) {
        attn::write_svg(*svg_dir / fmt::format("attention_l{}_h{}.svg", l, h),
                        attn::heatmap_svg(m, opt));
      }
    }
  }
}


// ---- The lecture's ladder: each row a model of its own, trained from scratch.

struct LadderRow {
  std::string_view what;
  double lecture_val;  // the val loss the lecture reports for this row
  bool bigram = false; // row 0: chapter 01's V x V table, no attention at all
  attn::LmConfig model;
};

std::vector<LadderRow> ladder_rows(std::size_t V) {
  // Every attention row: n_embd 32, block 8, the lecture's nn defaults for the initial weights
  // and a separate output head with bias (lm_head = nn.Linear(n_embd, vocab_size)).
  attn::LmConfig base;
  base.vocab_size = V;
  base.block_size = 8;
  base.n_embd = 32;
  base.n_heads = 1;
  base.n_layers = 1;
  base.tied_head = false;
  base.use_layer_norm = false;
  base.residual = false;
  base.use_ffn = false;
  base.attn_proj = false;
  base.activation = attn::Activation::relu;
  std::vector<LadderRow> rows;
  rows.push_back({"bigram table (chapter 01), AdamW", 2.49, true, base});
  attn::LmConfig m = base;
  rows.push_back({"+ positions, one head (hs 32)", 2.40, false, m});
  m.n_heads = 4;
  rows.push_back({"four heads of 8", 2.28, false, m});
  m.use_ffn = true;
  m.ffn_hidden = 32;
  rows.push_back({"+ FFN (C -> C, ReLU)", 2.24, false, m});
  m.residual = true;
  m.attn_proj = true;
  m.ffn_hidden = 0;
  m.n_layers = 3;
  rows.push_back({"+ residuals, projection, 4C FFN, 3 blocks", 2.08, false, m});
  m.use_layer_norm = true;
  rows.push_back({"+ LayerNorm", 2.06, false, m});
  return rows;
}

// The bigram row, the lecture's bigram script: logits = table[token], table (V, V) drawn N(0, 1)
// like nn.Embedding, AdamW (lr 1e-2, torch's default weight decay 0.01), B 32, T 8.
double train_bigram_row(const Data& d, std::size_t steps, std::size_t eval_iters,
                        std::uint64_t seed) {
  const std::size_t V = d.vocab.size(), B = 32, T = 8;
  attn::Rng init(seed);
  Matrix table = attn::randn(init, V, V, 1.0f);  // (V, V)
  Matrix grad = xt::zeros<float>({V, V});
  Matrix m = xt::zeros<float>({V, V}), v = xt::zeros<float>({V, V});
  Matrix logits({B * T, V});
  attn::Rng data_rng(seed, 101);
  const attn::AdamWConfig adam{0.9f, 0.999f, 1e-8f, 0.01f};
  const auto gather = [&](const Tokens& x) {
    for (std::size_t i = 0; i < B * T; ++i)
      std::copy_n(table.data() + static_cast<std::size_t>(x.data()[i]) * V, V, logits.data() + i * V);
  };
  for (std::size_t step = 1; step <= steps; ++step) {
    const attn::Batch b = attn::get_batch(d.split.train, B, T, data_rng);
    gather(b.x);
    const attn::LossGrad lg = attn::cross_entropy_with_grad(
        logits, std::span<const int>(b.y.data(), b.y.size()));
    std::fill(grad.begin(), grad.end(), 0.0f);
    // Row `token` of the table produced logits row i: its gradient collects every such row.
    for (std::size_t i = 0; i < B * T; ++i) {
      float* g = grad.data() + static_cast<std::size_t>(b.x.data()[i]) * V;
      const float* dl = lg.grad.data() + i * V;
      for (std::size_t j = 0; j < V; ++j) g[j] += dl[j];
    }
    attn::adamw_update(std::span<float>(table.data(), table.size()),
                       std::span<const float>(grad.data(), grad.size()),
                       std::span<float>(m.data(), m.size()), std::span<float>(v.data(), v.size()),
                       1e-2f, adam.weight_decay, step, adam);
  }
  attn::Rng eval_rng(seed + steps, 202);
  double sum = 0.0;
  for (std::size_t i = 0; i < eval_iters; ++i) {
    const attn::Batch b = attn::get_batch(d.split.val, B, T, eval_rng);
    gather(b.x);
    sum += attn::cross_entropy(logits, std::span<const int>(b.y.data(), b.y.size()));
  }
  return sum / static_cast<double>(eval_iters);
}

std::vector<std::size_t> parse_rows(const std::string& text, std::size_t n) {
  std::vector<std::size_t> rows;
  if (text.empty()) {
    for (std::size_t i = 0; i < n; ++i) rows.push_back(i);
    return rows;
  }
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    std::size_t used = 0;
    unsigned long r = 0;
    try {
      r = std::stoul(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || r >= n) {
      throw attn::UsageError(fmt::format(
          "--ladder-rows expects row numbers 0 to {} separated by commas, got '{}'", n - 1, text));
    }
    rows.push_back(r);
    if (end == text.size()) break;
    begin = end + 1;
  }
  return rows;
}

void run_ladder(const attn::CommonOptions& common, const Options& o) {
  const attn::Corpus corpus = attn::load_corpus(common.data);
  const Data d = prepare_data(corpus);
  const std::vector<LadderRow> rows = ladder_rows(d.vocab.size());
  const std::vector<std::size_t> chosen = parse_rows(o.ladder_rows, rows.size());
  check_data_fits(d, 8);
  const std::size_t eval_iters = 200;
  section(1, "The lecture's ladder");
  fmt::print(
      "Each row is trained from scratch on {} (V = {}): n_embd 32, block 8, batch 32, AdamW\n"
      "lr 1e-3 for {} steps (the bigram row: lr 1e-2, {} steps), then the val loss over {} batches.\n\n",
      corpus.origin, d.vocab.size(), o.ladder_steps == 0 ? 5000 : o.ladder_steps,
      o.ladder_steps == 0 ? 3000 : o.ladder_steps, eval_iters);
  fmt::print("  {:<3} {:<44} {:>8} {:>9} {:>8} {:>7}\n", "row", "model", "params", "val loss",
             "lecture", "diff");
  std::size_t within = 0;
  for (const std::size_t r : chosen) {
    const LadderRow& row = rows[r];
    const Clock::time_point start = Clock::now();
    double val = 0.0;
    std::size_t params = 0;
    if (row.bigram) {
      val = train_bigram_row(d, o.ladder_steps == 0 ? 3000 : o.ladder_steps, eval_iters, common.seed);
      params = d.vocab.size() * d.vocab.size();
    } else {
      attn::TrainConfig c;
      c.model = row.model;
      c.init = attn::InitScheme::pytorch;
      c.batch_size = 32;
      c.steps = o.ladder_steps == 0 ? 5000 : o.ladder_steps;
      c.schedule.lr = 1e-3f;
      c.adam.weight_decay = 0.01f;  // torch.optim.AdamW's default, as the lecture leaves it
      c.seed = common.seed;
      attn::TrainState s = attn::train_init(c);
      params = attn::lm_parameter_count(s.weights);
      while (s.step < c.steps) attn::train_step(s, c, d.split.train);
      val = attn::estimate_loss(s.weights, c.model, d.split, 32, eval_iters, c.seed, s.step).val_loss;
    }
    const double diff = val - row.lecture_val;
    if (std::abs(diff) <= 0.05) ++within;
    fmt::print("  {:<3} {:<44} {:>8} {:>9} {:>8} {:>+7.3f}{}\n", r, row.what, params, num(val),
               num(row.lecture_val, 2), diff,
               common.timing ? fmt::format("  ({:.1f} s)", seconds_since(start)) : std::string());
    std::fflush(stdout);
  }
  fmt::print("\n{} of {} rows within 0.05 of the lecture's number.\n", within, chosen.size());
  if (const char* check = std::getenv("ATTN_LADDER_CHECK"); check != nullptr && *check == '1' &&
      within != chosen.size()) {
    throw std::runtime_error("a ladder row is further than 0.05 from the lecture's number");
  }
}

// ---- The walkthrough.

void run(const attn::CommonOptions& common, Options o, int argc, char** argv) {
  if (o.ladder) {
    run_ladder(common, o);
    return;
  }
  const Kernels k = common.mine ? learner_kernels() : reference_kernels();
  const attn::Corpus corpus = attn::load_corpus(common.data);
  const Data d = prepare_data(corpus);
  const std::size_t V = d.vocab.size();

  // A run starts fresh, or from a checkpoint.
  attn::TrainConfig c;
  attn::TrainState s;
  if (!o.resume_dir.empty()) {
    attn::Checkpoint ck = attn::load_checkpoint(o.resume_dir);
    if (ck.vocab.chars() != d.vocab.chars()) {
      throw std::runtime_error(fmt::format(
          "checkpoint '{}' was trained on another corpus ({} characters, this one has {}): use "
          "--data with the corpus it was made with",
          o.resume_dir, ck.vocab.size(), V));
    }
    c = ck.config;
    check_resume_flags(o, c, argc, argv);
    if (o.steps < ck.state.step) {
      throw attn::UsageError(fmt::format(
          "--steps {} is before the checkpoint's step {}: --steps counts from the start of the "
          "run", o.steps, ck.state.step));
    }
    c.steps = o.steps;
    c.schedule.total = o.steps;
    s = std::move(ck.state);
    if (o.save_dir.empty()) o.save_dir = o.resume_dir;  // a resumed run keeps saving where it was
  } else {
    c = config_from(o, V, common.seed);
    s = attn::train_init(c);
  }
  check_data_fits(d, c.model.block_size);

  const bool fresh = s.step == 0;

  section(1, "The data");
  fmt::print("{}: {} characters, V = {}.\n", corpus.origin,
             d.split.train.size() + d.split.val.size(), V);
  fmt::print(
      "Encoded once, then split like the lecture: the first 90% trains ({} tokens), the last 10%\n"
      "measures ({} tokens). The model never sees the validation text, so its loss there tells\n"
      "learning apart from memorising.\n",
      d.split.train.size(), d.split.val.size());
  {
    attn::Rng demo(c.seed, 7);
    const attn::Batch b = k.get_batch(d.split.train, 2, std::min<std::size_t>(c.model.block_size, 24), demo);
    const std::size_t T = b.x.shape()[1];
    fmt::print(
        "A batch is B windows of T + 1 tokens from random places; x is the first T, y the last T.\n"
        "Two of them (T = {}):\n", T);
    for (std::size_t r = 0; r < 2; ++r) {
      fmt::print("  x[{}] = {}\n  y[{}] = {}\n", r,
                 attn::quote(chars_of(d.vocab, std::span<const int>(b.x.data() + r * T, T))), r,
                 attn::quote(chars_of(d.vocab, std::span<const int>(b.y.data() + r * T, T))));
    }
    bool shifted = true;
    for (std::size_t r = 0; r < 2; ++r)
      for (std::size_t t = 0; t + 1 < T; ++t) shifted = shifted && b.y(r, t) == b.x(r, t + 1);
    attn::claim(shifted, "y is x shifted by one");
    fmt::print(
        "Every position is an example: after x[0][0..t] the answer is y[0][t]. One window of T\n"
        "tokens teaches T predictions at once, with 1 to T characters of context.\n");
  }

  section(2, "The model, before training");
  const std::size_t params = attn::lm_parameter_count(s.weights);
  fmt::print("C = {}, H = {} (head size {}), L = {}, T = {}, {} activation, {} output head,\n"
             "{} initialisation: {} parameters. B = {} windows a step: {} tokens.\n",
             c.model.n_embd, c.model.n_heads, c.model.n_embd / c.model.n_heads, c.model.n_layers,
             c.model.block_size, attn::activation_name(c.model.activation),
             c.model.tied_head ? "tied (wte^T)" : "separate", attn::init_name(c.init), params,
             c.batch_size, c.batch_size * c.model.block_size);
  const double log_v = std::log(static_cast<double>(V));
  // The bigram's best: chapter 01's counting table on the train split, measured on val.
  const Matrix bigram = attn::bigram_logits_from_counts(attn::bigram_counts(d.split.train, V));
  const double bigram_val = attn::bigram_loss(bigram, d.split.val);
  if (fresh) {
    const attn::EvalRecord e0 = k.estimate_loss(s.weights, c.model, d.split, c.batch_size,
                                                c.eval_iters, c.seed, 0);
    fmt::print(
        "Untrained, its val loss is {}; guessing uniformly over V = {} characters scores log V =\n"
        "{}. {}\n",
        num(e0.val_loss), V, num(log_v),
        std::abs(e0.val_loss - log_v) < 0.1
            ? "Random weights give nearly uniform predictions, so the two are close."
            : "The random weights already prefer some characters, so the two differ.");
    fmt::print("The bar to beat: chapter 01's bigram table, counted on the train split, scores {}\n"
               "on val. It sees one character of context; this model sees up to {}.\n",
               num(bigram_val), c.model.block_size);
    fmt::print("A sample from the untrained model (seed {}):\n", c.seed);
    print_sample(sample_text(s.weights, c.model, d.vocab, std::min<std::size_t>(o.sample_length, 80),
                             c.seed));
  } else {
    fmt::print("Resumed from '{}' at step {} of {}.\n", o.resume_dir, s.step, c.steps);
  }

  if (fresh) {
    section(3, "One step, taken apart");
    attn::TrainState probe = s;  // a copy: the real run starts from the same weights
    attn::Rng demo(c.seed, 8);
    const attn::Batch b = k.get_batch(d.split.train, c.batch_size, c.model.block_size, demo);
    const attn::StepResult r = k.train_step_on(probe, c, b.x, b.y);
    const double after = attn::lm_loss(b.x, b.y, probe.weights, c.model);
    // "Every weight moves by about lr": on the first step m / sqrt(v) is g / (|g| + eps), so no
    // weight moves by more than lr (plus its decay), and those with a gradient move by nearly lr.
    double largest_move = 0.0, largest_weight = 0.0;
    {
      std::vector<attn::NamedTensor> before = attn::lm_parameters(s.weights);
      std::vector<attn::NamedTensor> moved = attn::lm_parameters(probe.weights);
      for (std::size_t i = 0; i < before.size(); ++i)
        for (std::size_t j = 0; j < before[i].values.size(); ++j) {
          const double w0 = static_cast<double>(before[i].values[j]);
          largest_move = std::max(largest_move, std::abs(static_cast<double>(moved[i].values[j]) - w0));
          largest_weight = std::max(largest_weight, std::abs(w0));
        }
    }
    const double lr = static_cast<double>(r.lr);
    attn::claim(largest_move <= lr * (1.0 + 1e-3) +
                                    lr * static_cast<double>(c.adam.weight_decay) * largest_weight &&
                    largest_move >= 0.5 * lr,
                "on the first step every weight moves by about lr, never more");
    fmt::print(
        "  1. zero the gradients                 {} tensors, shaped like the weights\n"
        "  2. forward and backward on one batch  loss {}\n"
        "  3. clip the global gradient norm      norm {} {}\n"
        "  4. AdamW at lr {}                 every weight moves by about lr\n"
        "The same batch after the step: loss {} ({} {}).\n",
        attn::lm_parameters(probe.grads).size(), num(r.loss), num(r.grad_norm),
        c.grad_clip <= 0.0f ? std::string("(clipping off)")
        : r.grad_norm > static_cast<double>(c.grad_clip)
            ? fmt::format("> {}: scaled down to {}", num(c.grad_clip, 2), num(c.grad_clip, 2))
            : fmt::format("<= {}: left alone", num(c.grad_clip, 2)),
        num(r.lr, 5), num(after), after < r.loss ? "down by" : "up by", num(std::abs(after - r.loss)));
  }

  section(fresh ? 4 : 3, "Training");
  fmt::print("{} steps, estimates every {} steps over {} batches per split{}.\n", c.steps - s.step,
             c.eval_interval, c.eval_iters,
             o.save_dir.empty() ? "" : fmt::format(", a checkpoint in '{}' at each", o.save_dir));
  std::signal(SIGINT, on_sigint);
  const RunReport r = run_training(k, s, c, d, o.save_dir, common.timing);
  if (r.interrupted) {
    fmt::print("Interrupted at step {}{}.\n", s.step,
               o.save_dir.empty() ? "" : fmt::format(": saved to '{}'", o.save_dir));
    std::fflush(stdout);
    std::exit(130);
  }
  if (!o.save_dir.empty()) attn::save_checkpoint(o.save_dir, s, c, d.vocab);
  if (common.timing) {
    fmt::print("{} steps in {} ({} tokens/s).\n", r.steps_taken, clock_text(r.seconds),
               thousands(static_cast<double>(r.steps_taken * c.batch_size * c.model.block_size) /
                         std::max(r.seconds, 1e-9)));
  }
  const auto best = std::min_element(s.evals.begin(), s.evals.end(),
                                     [](const attn::EvalRecord& a, const attn::EvalRecord& b2) {
                                       return a.val_loss < b2.val_loss;
                                     });
  const attn::EvalRecord& final_eval = s.evals.back();
  fmt::print("Best val loss {} at step {}; the bigram table's is {}: {}.\n", num(best->val_loss),
             best->step, num(bigram_val),
             best->val_loss < bigram_val
                 ? fmt::format("{} lower, what attention over {} characters buys",
                               num(bigram_val - best->val_loss), c.model.block_size)
                 : std::string("not lower yet: train longer or with a higher --lr"));
  if (final_eval.val_loss > best->val_loss + 0.02 &&
      final_eval.train_loss < final_eval.val_loss - 0.1) {
    fmt::print(
        "The val loss rose from {} to {} while the train loss kept falling ({}): the model is\n"
        "memorising its {} training characters. A bigger corpus (--data, see the page) cures it.\n",
        num(best->val_loss), num(final_eval.val_loss), num(final_eval.train_loss),
        d.split.train.size());
  }
  if (common.svg_dir) {
    attn::write_svg(*common.svg_dir / "loss_curve.svg", loss_curve_svg(s));
  }

  section(fresh ? 5 : 4, "A sample after training");
  print_sample(sample_text(s.weights, c.model, d.vocab, o.sample_length, c.seed));

  show_heads(s.weights, c.model, d, common.svg_dir, fresh ? 6 : 5);
}

}  // namespace

int main(int argc, char** argv) {
  attn::Cli cli("09_training",
                "Chapter 09: training the character GPT. AdamW on the decoder of chapter 07, "
                "loss estimates on both splits, checkpoints that survive kill -9, samples before "
                "and after, and what every trained head attends to. --ladder rebuilds the "
                "lecture's loss table step by step.");
  Options o;
  cli.add_size("--n-embd", o.n_embd, "C, the model width", 1, kMaxEmbd);
  cli.add_size("--n-heads", o.n_heads, "H, attention heads, must divide C", 1, kMaxHeads);
  cli.add_size("--n-layers", o.n_layers, "L, transformer blocks", 1, kMaxLayers);
  cli.add_size("--block-size", o.block_size, "T, the context length", 1, kMaxBlock);
  cli.add_size("--batch-size", o.batch_size, "B, windows per step", 1, kMaxBatch);
  cli.add_size("--steps", o.steps, "the run's last step, counted from its start", 1, kMaxSteps);
  cli.add_float("--lr", o.lr, "AdamW learning rate", 0.0f, 1.0f);
  cli.add_float("--weight-decay", o.weight_decay, "AdamW decoupled weight decay (>= 0)", -1e-30f, 1.0f);
  cli.add_float("--grad-clip", o.grad_clip, "max global gradient norm (0 = off)", -1e-30f, 1e6f);
  cli.add_size("--eval-interval", o.eval_interval, "estimate the losses every N steps", 1, kMaxSteps);
  cli.add_size("--eval-iters", o.eval_iters, "batches per split per estimate", 1, kMaxEvalIters);
  cli.add_size("--sample-length", o.sample_length, "characters to sample", 0, kMaxSample);
  cli.add_string("--activation", o.activation, "FFN activation: gelu, gelu_tanh or relu");
  cli.add_string("--init", o.init, "initial weights: gpt2 (N(0, 0.02)) or pytorch (nn defaults)");
  cli.add_string("--schedule", o.schedule, "learning rate: constant, or cosine (warmup, then down to lr/10)");
  cli.add_size("--warmup", o.warmup, "warmup steps of the cosine schedule", 0, kMaxSteps);
  cli.add_flag("--tied", o.tied, "tie the output head to the embedding (logits = x @ wte^T, GPT-2) "
               "instead of the lecture's separate Linear(C, V) with bias");
  cli.add_string("--save", o.save_dir, "DIR: write a checkpoint at every estimate and at the end");
  cli.add_string("--resume", o.resume_dir, "DIR: continue the run saved in DIR (it keeps saving there)");
  cli.add_flag("--ladder", o.ladder, "rebuild the lecture's loss table (use the full corpus: --data)");
  cli.add_size("--ladder-steps", o.ladder_steps, "steps per ladder row (0: the lecture's 5000 and 3000)", 0, kMaxSteps);
  cli.add_string("--ladder-rows", o.ladder_rows, "only these ladder rows, e.g. 0,5 (default: all six)");
  return cli.run(argc, argv, [&](const attn::CommonOptions& common) { run(common, o, argc, argv); });
}
