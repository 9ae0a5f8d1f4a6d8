// chapters/09_training/run.cpp: the run around chapter 09's lesson: the flags as a training
// config, the checks of a resumed run, and the training loop with its estimates, progress line,
// checkpoints and Ctrl-C (see training.hpp).
#include <fmt/core.h>
#include <unistd.h>  // isatty

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "attn/core/limits.hpp"
#include "attn/term/narrate.hpp"
#include "attn/term/plot.hpp"
#include "attn/term/print.hpp"
#include "attn/model/block.hpp"
#include "training.hpp"

namespace ch09 {

namespace {

using attn::flag_given;
using attn::num;
using attn::thousands;
using Clock = std::chrono::steady_clock;

// B * T tokens of activations per step, and the activations a step keeps for its backward:
// bounded so a typo cannot ask for more than a laptop has (train.txt is held to the same bounds,
// attn::check_train_config).
using attn::train_limits::kMaxKeptFloats;
using attn::train_limits::kMaxTokensPerStep;

// ---- Ctrl-C (SIGINT) or SIGTERM: finish the step (or cut the estimate short), save, exit
// 128 + the signal's number (130, 143). A second signal exits at once: the checkpoint of the
// last complete save stays, since a save only ever renames a complete folder into place.
std::atomic<int> g_signal{0};
extern "C" void on_stop_signal(int sig) {
  if (g_signal.exchange(sig) != 0) ::_exit(128 + sig);  // async-signal-safe, unlike std::exit
}
bool stop_requested() { return g_signal.load() != 0; }

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

std::string clock_text(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string wrap_text(const std::string& text, std::size_t width, std::size_t indent) {
  std::string out;
  std::size_t column = 0;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find(' ', begin);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(begin, end - begin);
    if (column > indent && column + 1 + word.size() > width) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
    } else if (!out.empty()) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    begin = end + 1;
  }
  return out;
}

void stop_on_ctrl_c() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  // A file above `ulimit -f` would kill the process (SIGXFSZ) without a word; ignored, the write
  // fails with EFBIG instead and the save reports it as the error it is.
  std::signal(SIGXFSZ, SIG_IGN);
}

Data prepare_data(const attn::Corpus& corpus) {
  attn::Vocab vocab = attn::Vocab::from_text(corpus.text);
  const std::vector<int> ids = vocab.encode(corpus.text);
  return {std::move(vocab), attn::train_val_split(ids),
          attn::record_corpus(corpus.path, corpus.text)};
}

attn::Corpus resume_corpus(const attn::Checkpoint& ck, const std::string& resume_dir,
                           const std::optional<std::string>& data_flag, std::string& note) {
  if (!ck.corpus) {  // saved before checkpoints recorded their corpus
    attn::Corpus corpus = attn::load_corpus(data_flag);
    const attn::Vocab vocab = attn::Vocab::from_text(corpus.text);
    if (ck.vocab.chars() != vocab.chars()) {
      throw std::runtime_error(fmt::format(
          "checkpoint '{}' was trained on another corpus ({} characters, {} has {}): use --data "
          "with the corpus it was made with",
          resume_dir, ck.vocab.size(), corpus.origin, vocab.size()));
    }
    note = fmt::format(
        "This checkpoint does not record its corpus (it was saved before checkpoints did): it\n"
        "goes on with {}, whose characters match its vocabulary. Its next save records it.\n",
        corpus.origin);
    return corpus;
  }
  const attn::CorpusRecord& want = *ck.corpus;
  const bool shipped = want.path == attn::record_corpus(attn::shipped_corpus_path(), "").path;
  if (data_flag) {
    attn::Corpus corpus = attn::read_corpus(*data_flag);  // exit 1 for a missing or bad file
    const attn::CorpusRecord got = attn::record_corpus(corpus.path, corpus.text);
    if (got.bytes != want.bytes || got.fnv1a64 != want.fnv1a64) {
      throw attn::UsageError(fmt::format(
          "--data '{}' is not the corpus checkpoint '{}' was trained on ('{}', {}; this file: "
          "{}): drop --data to go on with the recorded corpus, or start a new run",
          *data_flag, resume_dir, want.path, attn::corpus_fingerprint(want),
          attn::corpus_fingerprint(got)));
    }
    corpus.origin = *data_flag + " (--data)";
    note = fmt::format("{} holds the very text the checkpoint recorded ({}).\n", corpus.origin,
                       attn::corpus_fingerprint(want));
    return corpus;
  }
  attn::Corpus corpus;
  try {
    corpus = attn::read_corpus(want.path);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format(
        "checkpoint '{}' was trained on a corpus that cannot be read now: {} (pass --data with a "
        "copy of it)",
        resume_dir, e.what()));
  }
  const attn::CorpusRecord got = attn::record_corpus(corpus.path, corpus.text);
  if (got.bytes != want.bytes || got.fnv1a64 != want.fnv1a64) {
    throw std::runtime_error(fmt::format(
        "corpus '{}' changed since checkpoint '{}' was saved (then {}, now {}): restore it, or "
        "pass --data with a copy of the original",
        want.path, resume_dir, attn::corpus_fingerprint(want), attn::corpus_fingerprint(got)));
  }
  // The shipped corpus by the name every page uses; another by its recorded path.
  corpus.origin = shipped ? std::string("data/sonnets.txt (shipped, recorded in the checkpoint)")
                          : fmt::format("{} (recorded in the checkpoint)", want.path);
  note = fmt::format("The checkpoint recorded its corpus; the file is unchanged ({}).\n",
                     attn::corpus_fingerprint(want));
  return corpus;
}

void check_data_fits(const Data& d, std::size_t block_size) {
  if (d.split.val.size() < block_size + 1) {
    throw std::runtime_error(fmt::format(
        "the corpus is too short for --block-size {}: its validation split (the last 10%) has "
        "{} tokens, a window needs {}",
        block_size, d.split.val.size(), block_size + 1));
  }
}

void check_flag_values(const Options& o) {
  if (!(o.dropout >= 0.0f && o.dropout < 1.0f)) {
    throw attn::UsageError(fmt::format(
        "--dropout must be in [0, 1), the probability of zeroing a value, got {}", o.dropout));
  }
  try {
    (void)attn::parse_optimizer(o.optimizer);
  } catch (const std::invalid_argument& e) {
    throw attn::UsageError(fmt::format("--optimizer: {}", e.what()));
  }
}

// The parts' flags against each other and the sizes: one line, exit 2.
void check_part_flags(const Options& o) {
  const auto parsed = [](std::string_view flag, auto parse, const std::string& value) {
    try {
      return parse(value);
    } catch (const std::invalid_argument& e) {
      throw attn::UsageError(fmt::format("{}: {}", flag, e.what()));
    }
  };
  const attn::Positions positions = parsed("--positions", attn::parse_positions, o.positions);
  const attn::FfnKind ffn = parsed("--ffn", attn::parse_ffn_kind, o.ffn);
  (void)parsed("--normalization", attn::parse_normalization, o.normalization);
  // Each word-valued flag is named in its own message ("--init: unknown init 'x': ...").
  (void)parsed("--activation", attn::parse_activation, o.activation);
  (void)parsed("--init", attn::parse_init, o.init);
  (void)parsed("--schedule", attn::parse_lr_shape, o.schedule);
  if (o.rope_theta_given && positions != attn::Positions::rope) {
    throw attn::UsageError("--rope-theta sets RoPE's base: it needs --positions rope");
  }
  if (o.activation_given && ffn == attn::FfnKind::swiglu) {
    throw attn::UsageError(
        "--activation sets the MLP's activation; --ffn swiglu gates with its own (silu): drop "
        "one of them");
  }
}

attn::ModelChoices model_choices(const Options& o, std::size_t V) {
  attn::ModelChoices m;
  m.vocab_size = V;
  m.block_size = o.block_size;
  m.n_embd = o.n_embd;
  m.n_heads = o.n_heads;
  m.n_layers = o.n_layers;
  m.ablations.tied_head = o.tied;
  m.dropout = o.dropout;
  // --n-kv-heads 0 and --window 0 are the flags' way of saying "not asked for".
  if (o.n_kv_heads != 0) m.n_kv_heads = o.n_kv_heads;
  if (o.window != 0) m.window = o.window;
  m.bias = !o.no_bias;
  m.attn_bias = o.attn_bias;
  // The flag is a float: its shortest decimal (500.1, not 500.100006103515625) is the base.
  m.rope_theta = std::stod(fmt::format("{}", o.rope_theta));
  try {
    m.activation = attn::parse_activation(o.activation);
    m.positions = attn::parse_positions(o.positions);
    m.normalization = attn::parse_normalization(o.normalization);
    m.ffn = attn::parse_ffn_kind(o.ffn);
  } catch (const std::invalid_argument& e) {
    throw attn::UsageError(e.what());
  }
  return m;
}

attn::TrainConfig config_from(const Options& o, std::size_t V, std::uint64_t seed) {
  check_flag_values(o);
  check_part_flags(o);
  attn::TrainConfig c;
  try {  // every rule of the model, named by its flag
    c.model = attn::resolve_spec(model_choices(o, V), attn::SpecNames::flags);
  } catch (const attn::SpecError& e) {
    throw attn::UsageError(e.what());
  }
  if (o.batch_size * o.block_size > kMaxTokensPerStep) {
    throw attn::UsageError(fmt::format(
        "--batch-size {} x --block-size {} = {} tokens per step, at most {} are allowed",
        o.batch_size, o.block_size, o.batch_size * o.block_size, kMaxTokensPerStep));
  }
  try {
    c.optimizer = attn::parse_optimizer(o.optimizer);
    c.init = attn::parse_init(o.init);
    c.schedule.shape = attn::parse_lr_shape(o.schedule);
  } catch (const std::invalid_argument& e) {
    throw attn::UsageError(e.what());
  }
  const std::size_t C = o.n_embd, L = o.n_layers;
  // The backward keeps every layer's activations, the (B, H, T, T) attention weights the largest
  // (and with dropout its masks).
  const std::size_t kept = attn::block_activation_floats(
      o.batch_size, o.block_size, C, c.model.ffn_hidden, o.n_heads, attn::lm_block_config(c.model));
  if (kept > kMaxKeptFloats / L) {
    throw attn::UsageError(fmt::format(
        "--batch-size {}, --block-size {}, --n-embd {}, --n-heads {} and --n-layers {} would keep "
        "{} of activations for the backward (at most {}): lower one of them",
        o.batch_size, o.block_size, C, o.n_heads, L,
        attn::bytes_text(static_cast<std::uint64_t>(kept) * L * sizeof(float)),
        attn::bytes_text(kMaxKeptFloats * sizeof(float))));
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
  try {  // the bounds train.txt is held to as well (attn/train/checkpoint.hpp)
    attn::check_train_config(c);
  } catch (const std::invalid_argument& e) {
    throw attn::UsageError(e.what());
  }
  return c;
}

// --steps, --save and --tokens may change when resuming.
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
  same("--tied", o.tied ? "on" : "off", c.model.ablations.tied_head ? "on" : "off");
  same("--dropout", n(o.dropout), n(c.model.dropout));
  same("--optimizer", o.optimizer, std::string(attn::optimizer_name(c.optimizer)));
  same("--schedule", o.schedule,
       c.schedule.shape == attn::LrShape::constant ? "constant" : "cosine");
  same("--warmup", n(o.warmup), n(c.schedule.warmup));
  same("--positions", o.positions, std::string(attn::positions_name(c.model.positions)));
  // The flag is a float and the spec keeps a double: compare as the flag reads (500.1 was saved
  // as 500.100006103515625).
  same("--rope-theta", n(o.rope_theta), n(static_cast<float>(c.model.rope_theta)));
  same("--normalization", o.normalization,
       std::string(attn::normalization_name(c.model.normalization)));
  same("--ffn", o.ffn, std::string(attn::ffn_kind_name(c.model.ffn)));
  same("--n-kv-heads", n(o.n_kv_heads == 0 ? c.model.n_heads : o.n_kv_heads),
       n(c.model.n_kv_heads));
  same("--window", n(o.window), n(c.model.window.value_or(0)));
  same("--no-bias", o.no_bias ? "on" : "off", c.model.bias ? "off" : "on");
  same("--attn-bias", o.attn_bias ? "on" : "off", c.model.attn_bias ? "on" : "off");
  if (flag_given(argc, argv, "--seed")) {
    throw attn::UsageError(
        "--seed cannot change when resuming: the checkpoint holds the run's seed");
  }
}

namespace {

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

}  // namespace

RunReport run_training(const Kernels& k, attn::TrainState& s, const attn::TrainConfig& c,
                       const Data& d, const std::string& save_dir, bool timing) {
  const bool live = ::isatty(STDOUT_FILENO) != 0;
  const std::size_t tokens_per_step = c.batch_size * c.model.block_size;
  const Clock::time_point start = Clock::now();
  RunReport report;
  std::optional<double> last_val;
  if (!s.evals.empty()) last_val = s.evals.back().val_loss;
  Clock::time_point last_draw = start;

  // false: a signal cut the estimate short (the library's estimate stops at the next batch; a
  // learner's ex09::estimate_loss runs to its end).
  const auto evaluate = [&](std::size_t step) {
    const std::optional<attn::EvalRecord> estimate =
        k.reference ? attn::estimate_loss_unless(s.weights, c.model, d.split, c.batch_size,
                                                 c.eval_iters, c.seed, step, stop_requested)
                    : k.estimate_loss(s.weights, c.model, d.split, c.batch_size, c.eval_iters,
                                      c.seed, step);
    if (!estimate) {
      if (live) fmt::print("\r\033[K");
      fmt::print("step {:>5}: the estimate was cut short by the signal\n", step);
      return false;
    }
    const attn::EvalRecord& e = *estimate;
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
    if (!save_dir.empty()) attn::save_checkpoint(save_dir, s, c, d.vocab, d.corpus);
    return true;
  };
  const auto stop = [&] {
    // The last complete step is saved (with its estimate, if that one finished).
    if (!save_dir.empty()) attn::save_checkpoint(save_dir, s, c, d.vocab, d.corpus);
    report.interrupted = true;
    report.signal = g_signal.load();
  };

  // The estimate of this step, unless it is there already (a run cut short in that estimate and
  // resumed does it now).
  const std::size_t first_step = s.step;  // > 0: a resumed run
  const bool estimated = !s.evals.empty() && s.evals.back().step == s.step;
  if (!estimated && s.step % c.eval_interval == 0 && !evaluate(s.step)) {
    stop();
  }
  while (!report.interrupted && s.step < c.steps) {
    attn::StepResult r{};
    if (k.reference) {
      r = attn::train_step(s, c, d.split.train);  // the same draws, into reused buffers
    } else {
      // --mine: the step written out in main.cpp, from the learner's update (ex09.1), schedule
      // (ex09.5) and clipping (ex09.6), on the learner's batches (ex09.2).
      s.batch = k.get_batch(d.split.train, c.batch_size, c.model.block_size, s.data_rng);
      r = step_by_hand(k, s, c, s.batch.x, s.batch.y);
    }
    if (!std::isfinite(r.loss)) {
      // A resumed run keeps its --lr (check_resume_flags): advise what it accepts.
      throw std::runtime_error(fmt::format(
          "the loss became {} at step {}: the learning rate {} is too high for this model ({} "
          "--lr {} or --grad-clip 1)",
          num(r.loss), s.step, num(c.schedule.lr, 5),
          first_step > 0 ? "a resumed run keeps its --lr: start a new run with" : "try",
          num(c.schedule.lr / 10.0f, 5)));
    }
    ++report.steps_taken;
    if (live && seconds_since(last_draw) > 0.2) {
      last_draw = Clock::now();
      const double t = seconds_since(start);
      fmt::print("\r\033[K{}",
                 progress_line(s.step, c.steps, report.steps_taken, r.loss, last_val,
                               static_cast<double>(report.steps_taken * tokens_per_step) / t, t));
      std::fflush(stdout);
    }
    const bool last = s.step == c.steps;
    const bool estimate = s.step % c.eval_interval == 0 || last;
    if (estimate && !evaluate(s.step)) {
      stop();  // cut short: the step is saved without its estimate
      break;
    }
    if (stop_requested()) {
      if (!estimate && !save_dir.empty()) attn::save_checkpoint(save_dir, s, c, d.vocab, d.corpus);
      report.interrupted = true;
      report.signal = g_signal.load();
      break;
    }
  }
  if (live) fmt::print("\r\033[K");
  report.seconds = seconds_since(start);
  return report;
}

std::string loss_curve_svg(const attn::TrainState& s, double log_v, double bigram_val,
                           const std::string& scope) {
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
  // The two bars the chapter measures the run against, as dashed levels across the run.
  const double last = static_cast<double>(std::max<std::size_t>(s.step, 1));
  const auto level = [last](std::string name, double y) {
    attn::Series line{std::move(name), {0.0, last}, {y, y}};
    line.dashed = true;
    line.dots = false;
    return line;
  };
  attn::LineChartOptions opt;
  opt.title = "Chapter 09: the loss while training (" + scope + ")";
  opt.x_label = "step";
  opt.y_label = "cross-entropy (nats)";
  opt.dots = true;  // the estimates, every eval_interval steps
  return attn::line_chart_svg(
      {steps, train, val, level(fmt::format("uniform guess, log V = {:.2f}", log_v), log_v),
       level(fmt::format("bigram table (chapter 01), val {:.2f}", bigram_val), bigram_val)},
      opt);
}

}  // namespace ch09
