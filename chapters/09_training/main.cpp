// chapters/09_training/main.cpp: chapter 09, training the character GPT.
// The lesson in six sections, each computed by a function here and printed by one of show.cpp
// (the structs between them in show.hpp): the data as the lecture prepares it, the model before
// training, one training step written out here (step_by_hand, checked against the library's
// attn::train_step_on bit for bit), a run with loss estimates, a sample after training, and what
// every trained head attends to. --ladder rebuilds the lecture's loss table row by row. The library
// pieces: common/src/train/ (train.cpp, optim.cpp, data.cpp, checkpoint.cpp) and
// common/src/model/model.cpp.

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/term/narrate.hpp"
#include "attn/term/plot.hpp"
#include "attn/model/bigram.hpp"
#include "exercises.hpp"
#include "show.hpp"
#include "training.hpp"

namespace {

using namespace ch09;
using attn::section;
namespace fs = std::filesystem;
using attn::Matrix;

// ---- Limits on what a user can type (the input contract: every size bounded, in --help). The
// training config's bounds are the library's (attn::check_train_config), so train.txt of a
// checkpoint is held to the same.
using attn::train_limits::kMaxBatch;
using attn::train_limits::kMaxBlock;
using attn::train_limits::kMaxEmbd;
using attn::train_limits::kMaxEvalIters;
using attn::train_limits::kMaxHeads;
using attn::train_limits::kMaxLayers;
using attn::train_limits::kMaxSteps;
constexpr std::size_t kMaxTokens = 10000;

std::string sample_text(const attn::LmWeights& w, const attn::ModelSpec& config,
                        const attn::Vocab& vocab, std::size_t n, std::uint64_t seed) {
  attn::Rng rng(seed, 909);
  attn::GenerateOptions g;
  g.max_new_tokens = n;
  // The lecture starts from a newline (id 0 of its vocabulary); a corpus without one starts from
  // its own id 0, the smallest character.
  const std::vector<int> prompt = {vocab.contains(U'\n') ? vocab.id_of(U'\n') : 0};
  return vocab.decode(attn::lm_generate(w, config, prompt, g, rng));
}

// ---- 1. The data: two windows of a batch, and y is x shifted by one.

DataDemo data_demo(const Kernels& k, const Data& d, std::uint64_t seed, std::size_t block_size) {
  attn::Rng demo(seed, 7);
  DataDemo r{k.get_batch(d.split.train, 2, std::min<std::size_t>(block_size, 24), demo), true};
  const std::size_t T = r.batch.x.shape()[1];
  for (std::size_t row = 0; row < 2; ++row)
    for (std::size_t t = 0; t + 1 < T; ++t)
      r.shifted = r.shifted && r.batch.y(row, t) == r.batch.x(row, t + 1);
  return r;
}

// ---- 2. The model before training, and the bar to beat.

Before measure_before(const Kernels& k, const attn::TrainState& s, const attn::TrainConfig& c,
                      const Data& d, bool fresh) {
  const std::size_t V = d.vocab.size();
  const Matrix bigram = attn::bigram_logits_from_counts(attn::bigram_counts(d.split.train, V));
  const double val =
      fresh ? k.estimate_loss(s.weights, c.model, d.split, c.batch_size, c.eval_iters, c.seed, 0)
                  .val_loss
            : 0.0;
  return {attn::lm_parameter_count(s.weights), val, std::log(static_cast<double>(V)),
          attn::bigram_loss(bigram, d.split.val)};
}

// ---- 3. One training step, written out: what attn::train_step_on does.

}  // namespace

namespace ch09 {

// One training step, written out: what attn::train_step_on does. With --mine the run takes this
// step, from the learner's update (ex09.1), schedule (ex09.5) and clipping (ex09.6).
attn::StepResult step_by_hand(const Kernels& k, attn::TrainState& s, const attn::TrainConfig& c,
                              const Tokens& x, const Tokens& y) {
  std::vector<attn::NamedTensor> p = attn::lm_parameters(s.weights);
  std::vector<attn::NamedTensor> g = attn::lm_parameters(s.grads);
  std::vector<attn::NamedTensor> m = attn::lm_parameters(s.adam_m);
  std::vector<attn::NamedTensor> v = attn::lm_parameters(s.adam_v);
  std::vector<std::span<float>> grads;
  for (attn::NamedTensor& t : g) grads.push_back(t.values);
  const std::size_t t = s.step + 1;
  // 1. Zero the gradients: the backward adds into them.
  for (std::span<float> grad : grads) std::fill(grad.begin(), grad.end(), 0.0f);
  // (With --dropout, this step's masks come from a generator of their own, as in the library.)
  if (c.model.dropout > 0.0f) {
    s.cache.dropout_rng = attn::dropout_rng_for(c.seed, t);
    s.cache.fixed_dropout_masks = false;
  }
  // 2. Forward (keeping what the backward needs) and backward: the batch's mean cross-entropy,
  //    and the gradient of every weight.
  const double loss = attn::lm_forward_backward(x, y, s.weights, c.model, s.grads, s.cache);
  // 3. The global norm of all gradients together, clipped to --grad-clip (0: off).
  const double norm = k.clip_grad_norm(grads, c.grad_clip);
  // 4. AdamW on every tensor at the schedule's lr; weight decay only on matrices and embeddings.
  //    (--optimizer sgd: p -= lr * g instead.)
  const float lr = k.learning_rate(c.schedule, t);
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (c.optimizer == attn::Optimizer::sgd) {
      for (std::size_t j = 0; j < p[i].values.size(); ++j) p[i].values[j] -= lr * g[i].values[j];
      continue;
    }
    const float decay = attn::decays(p[i].rank) ? c.adam.weight_decay : 0.0f;
    k.adamw_update(p[i].values, g[i].values, m[i].values, v[i].values, lr, decay, t, c.adam);
  }
  s.step = t;
  s.losses.push_back(static_cast<float>(loss));
  return {loss, norm, lr};
}

}  // namespace ch09

namespace {

OneStep take_one_step(const Kernels& k, const attn::TrainState& start, const attn::TrainConfig& c,
                      const Data& d) {
  attn::Rng demo(c.seed, 8);
  const attn::Batch b = k.get_batch(d.split.train, c.batch_size, c.model.block_size, demo);
  attn::TrainState s = start;  // a copy: the real run starts from the same weights
  const attn::StepResult step = step_by_hand(k, s, c, b.x, b.y);
  const std::vector<attn::NamedTensor> p = attn::lm_parameters(s.weights);
  const double loss = step.loss, norm = step.grad_norm;
  const float lr = step.lr;

  // The library's step from the same state on the same batch must give the same weights.
  attn::TrainState library = start;
  (void)k.train_step_on(library, c, b.x, b.y);
  attn::LmWeights w0 = start.weights;
  const std::vector<attn::NamedTensor> lib = attn::lm_parameters(library.weights);
  const std::vector<attn::NamedTensor> before = attn::lm_parameters(w0);
  OneStep out{p.size(), loss, norm, lr, attn::lm_loss(b.x, b.y, s.weights, c.model), 0, 0, 0};
  const std::vector<attn::NamedTensor> g = attn::lm_parameters(s.grads);  // this step's gradients
  const std::size_t C = c.model.n_embd;
  for (std::size_t i = 0; i < p.size(); ++i) {
    out.library_diff = std::max(out.library_diff, attn::max_abs_diff(p[i].values, lib[i].values));
    for (std::size_t j = 0; j < p[i].values.size(); ++j) {
      const double mine = p[i].values[j], theirs = lib[i].values[j];
      out.library_rel_diff =
          std::max(out.library_rel_diff,
                   std::abs(mine - theirs) / (1.0 + std::max(std::abs(mine), std::abs(theirs))));
    }
    for (std::size_t j = 0; j < p[i].values.size(); ++j) {
      const double moved =
          std::abs(static_cast<double>(p[i].values[j]) - static_cast<double>(before[i].values[j]));
      out.largest_move = std::max(out.largest_move, moved);
      out.largest_weight =
          std::max(out.largest_weight, std::abs(static_cast<double>(before[i].values[j])));
      ++out.weights;
      if (moved >= 0.5 * static_cast<double>(lr)) ++out.near_lr;
      if (g[i].values[j] == 0.0f) {
        ++out.zero_grad;
        out.zero_grad_move = std::max(out.zero_grad_move, moved);
      } else if (moved < 0.5 * static_cast<double>(lr)) {
        ++out.slow;
        out.slow_grad = std::max(out.slow_grad, std::abs(static_cast<double>(g[i].values[j])));
      }
    }
    if (p[i].name == "wte") {  // (V, C): a row per character
      for (std::size_t row = 0; row * C < g[i].values.size(); ++row) {
        const std::span<const float> r = g[i].values.subspan(row * C, C);
        out.absent_rows += std::all_of(r.begin(), r.end(), [](float x) { return x == 0.0f; });
      }
    }
  }
  return out;
}

// ---- 4. Training: steps, estimates, a progress line, checkpoints.

// ---- 6. What the trained heads attend to: a window of validation text through the model.

// The habits of one head, from its (T, T) causal attention `p(t, s)` over the window `ids`. The
// window starts at a line start, so position 0 is one.
template <class Weight>
HeadStats head_stats(const Weight& p, std::span<const int> ids, const attn::Vocab& vocab) {
  const std::size_t T = ids.size();
  HeadStats st;
  std::size_t line_begin = 0;
  for (std::size_t t = 0; t < T; ++t) {
    if (t > 0 && vocab.char_of(ids[t - 1]) == U'\n') line_begin = t;
    st.self += p(t, t);
    if (t > 0) st.previous += p(t, t - 1);
    st.line_start += p(t, line_begin) + (line_begin == 0 ? 0.0 : p(t, line_begin - 1));
    for (std::size_t s2 = 0; s2 < t; ++s2) {
      if (ids[s2] == ids[t]) st.same_char += p(t, s2);
      st.distance += p(t, s2) * static_cast<double>(t - s2);
    }
  }
  const double n = static_cast<double>(T);
  st.self /= n;
  st.previous /= static_cast<double>(std::max<std::size_t>(T - 1, 1));
  st.same_char /= n;
  st.line_start /= n;
  st.distance /= n;
  return st;
}

HeadMaps measure_heads(const attn::LmWeights& w, const attn::ModelSpec& config, const Data& d) {
  // A window of the validation text that starts at a real line start (right after the first
  // newline: the split itself begins mid-line) and holds T = min(T_max, 40) characters, so it
  // crosses line starts of its own.
  const std::span<const int> val = d.split.val;
  const int newline = d.vocab.contains(U'\n') ? d.vocab.id_of(U'\n') : -1;
  std::size_t begin = 0;
  while (begin + 1 < val.size() && val[begin] != newline) ++begin;
  while (begin + 1 < val.size() && val[begin] == newline) ++begin;  // past empty lines too
  if (begin + 1 >= val.size()) begin = 0;  // no line start at all: the window starts at 0
  const std::size_t T = std::min<std::size_t>({config.block_size, 40, val.size() - begin - 1});
  HeadMaps out{val.subspan(begin, T), 0.0, {}, {}};
  out.chance = head_stats(
      [](std::size_t t, std::size_t s) { return s <= t ? 1.0 / static_cast<double>(t + 1) : 0.0; },
      out.ids, d.vocab);
  Tokens x({1, T}), y({1, T});
  std::copy_n(val.begin() + static_cast<std::ptrdiff_t>(begin), T, x.begin());
  std::copy_n(val.begin() + static_cast<std::ptrdiff_t>(begin + 1), T, y.begin());
  attn::LmWeights grads = attn::lm_zeros_like(w);
  attn::LmCache cache;  // keeps every layer's attention weights (chapter 08)
  // The trained model as it is used: dropout is for training only.
  const attn::ModelSpec eval =
      attn::with_choices(config, [](attn::ModelChoices& m) { m.dropout = 0; });
  out.loss = attn::lm_forward_backward(x, y, w, eval, grads, cache);
  for (std::size_t l = 0; l < config.n_layers; ++l) {
    // (1, H, T, T): kept by the attention of every part (chapter 05's or grouped-query)
    const attn::Tensor<4>& weights = cache.blocks[l].attn.weights;
    for (std::size_t h = 0; h < config.n_heads; ++h) {
      Matrix m({T, T});
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t s = 0; s < T; ++s) m(t, s) = weights(0, h, t, s);
      const HeadStats st =
          head_stats([&m](std::size_t t, std::size_t s) { return static_cast<double>(m(t, s)); },
                     out.ids, d.vocab);
      out.heads.push_back({l, h, std::move(m), st});
    }
  }
  return out;
}

// ---- The walkthrough.

Kernels reference_kernels() {
  return {&attn::adamw_update,
          &attn::get_batch,
          &attn::estimate_loss,
          &attn::train_step_on,
          &attn::learning_rate,
          &attn::clip_grad_norm,
          true};
}
Kernels learner_kernels() {
  return {&ex09::adamw_update,
          &ex09::get_batch,
          &ex09::estimate_loss,
          &ex09::train_step_on,
          &ex09::learning_rate,
          &ex09::clip_grad_norm,
          false};
}

void run(const attn::CommonOptions& common, Options o, int argc, char** argv) {
  o.activation_given = attn::flag_given(argc, argv, "--activation");
  o.rope_theta_given = attn::flag_given(argc, argv, "--rope-theta");
  check_flag_values(o);
  if (common.mine && attn::parse_optimizer(o.optimizer) != attn::Optimizer::adamw) {
    throw attn::UsageError(fmt::format(
        "--mine trains with your AdamW step (ex09.1, ex09.4), not with --optimizer {}: drop one "
        "of the two",
        o.optimizer));
  }
  // The ladder's own flags without --ladder would be ignored without a word (issue 29).
  for (const char* flag : {"--ladder-steps", "--ladder-rows"}) {
    if (!o.ladder && attn::flag_given(argc, argv, flag)) {
      throw attn::UsageError(fmt::format("{} sets up the ladder: it needs --ladder", flag));
    }
  }
  if (o.ladder) return run_ladder(common, o.ladder_steps, o.ladder_rows);
  const Kernels k = common.mine ? learner_kernels() : reference_kernels();
  const bool resuming = !o.resume_dir.empty();
  // A fresh run reads its corpus before any folder is made; a resumed one after its checkpoint,
  // which names the corpus.
  std::optional<attn::Corpus> fresh_corpus;
  if (!resuming) fresh_corpus = attn::load_corpus(common.data);

  // One trainer per run folder: a resumed run saves to its run folder (never inside one of its
  // checkpoints), and holds the folder's lock before it reads anything from it. A run folder
  // holds only what its run wrote: no --save inside a run or into a saved checkpoint.
  const bool save_given = !o.save_dir.empty();
  if (resuming && !save_given) o.save_dir = attn::run_folder_of(o.resume_dir).string();
  if (!o.save_dir.empty()) {
    try {
      attn::check_save_folder(o.save_dir, "--save");
    } catch (const std::invalid_argument& e) {
      if (save_given) throw attn::UsageError(e.what());
      throw attn::UsageError(fmt::format(
          "--resume '{}' is a checkpoint outside any run folder, and a run cannot save inside "
          "it: give --save DIR, a folder for the run to go on in",
          o.resume_dir));
    }
  }
  if (resuming && !fs::is_directory(o.resume_dir)) {
    attn::load_checkpoint(o.resume_dir);  // says what is missing
  }
  std::optional<attn::RunLock> lock;
  if (!o.save_dir.empty()) lock.emplace(o.save_dir);
  std::error_code ec;
  const bool same_folder =
      resuming && fs::equivalent(attn::run_folder_of(o.resume_dir), o.save_dir, ec);
  if (!same_folder && attn::holds_run(o.save_dir)) {
    if (!o.overwrite) {
      throw attn::UsageError(fmt::format(
          "'{}' already holds a run: continue it with --resume {}, or pass --overwrite to start "
          "over",
          o.save_dir, o.save_dir));
    }
    attn::remove_run(o.save_dir);
  }

  // A run starts fresh, or from a checkpoint (with the corpus it recorded).
  std::optional<attn::Checkpoint> ck;
  std::string corpus_note;
  if (resuming) ck = attn::load_checkpoint(o.resume_dir);
  const attn::Corpus corpus = resuming ? resume_corpus(*ck, o.resume_dir, common.data, corpus_note)
                                       : std::move(*fresh_corpus);
  const Data d = prepare_data(corpus);
  const std::size_t V = d.vocab.size();
  attn::TrainConfig c;
  attn::TrainState s;
  if (resuming) {
    c = ck->config;
    check_resume_flags(o, c, argc, argv);
    // Without --steps the run goes on to the target it was started with.
    if (attn::flag_given(argc, argv, "--steps")) {
      if (o.steps < ck->state.step) {
        throw attn::UsageError(fmt::format(
            "--steps {} is before the checkpoint's step {}: --steps counts from the start of the "
            "run",
            o.steps, ck->state.step));
      }
      // A cosine schedule decays over the run's steps: another target would re-shape it.
      if (o.steps != c.steps && c.schedule.shape == attn::LrShape::cosine) {
        throw attn::UsageError(fmt::format(
            "--steps {} would re-shape the checkpoint's cosine schedule, which decays over {} "
            "steps: drop --steps to finish the run as configured, or start a new run",
            o.steps, c.schedule.total));
      }
      c.steps = o.steps;
      if (c.schedule.shape == attn::LrShape::constant) c.schedule.total = o.steps;
    }
    s = std::move(ck->state);
  } else {
    c = config_from(o, V, common.seed);
    s = attn::train_init(c);
  }
  check_data_fits(d, c.model.block_size);
  const bool fresh = s.step == 0;

  // Like the other chapters: the chapter, its seed, its corpus and whose functions run, so every
  // number below says where it comes from.
  show_header(c.seed, corpus.origin, common.mine);
  show_data(data_demo(k, d, c.seed, c.model.block_size), corpus, d);
  const Before before = measure_before(k, s, c, d, fresh);
  show_before(before, c, V, fresh);
  if (fresh) {
    fmt::print("A sample from the untrained model (seed {}):\n", c.seed);
    print_sample(
        sample_text(s.weights, c.model, d.vocab, std::min<std::size_t>(o.tokens, 80), c.seed));
    show_one_step(take_one_step(k, s, c, d), c, common.mine);
  } else {
    fmt::print("Resumed from '{}' at step {} of {}.\n{}", o.resume_dir, s.step, c.steps,
               corpus_note);
  }

  section(fresh ? 4 : 3, "Training");
  fmt::print("{} steps, estimates every {} steps over {} batches per split{}.\n", c.steps - s.step,
             c.eval_interval, c.eval_iters,
             o.save_dir.empty() ? "" : fmt::format(", a checkpoint in '{}' at each", o.save_dir));
  stop_on_ctrl_c();
  const RunReport r = run_training(k, s, c, d, o.save_dir, common.timing);
  if (r.interrupted) {
    fmt::print("Interrupted at step {}{}.\n", s.step,
               o.save_dir.empty() ? "" : fmt::format(": saved to '{}'", o.save_dir));
    std::fflush(stdout);
    std::exit(128 + r.signal);  // 130 for SIGINT, 143 for SIGTERM
  }
  if (!o.save_dir.empty()) attn::save_checkpoint(o.save_dir, s, c, d.vocab, d.corpus);
  show_training(s, r, c, d, before.bigram_val, common.timing);
  if (common.svg_dir) {
    attn::write_svg(*common.svg_dir / "loss_curve.svg",
                    loss_curve_svg(s, before.log_v, before.bigram_val,
                                   fmt::format("seed {}, {}", c.seed, corpus.origin)));
  }

  section(fresh ? 5 : 4, "A sample after training");
  print_sample(sample_text(s.weights, c.model, d.vocab, o.tokens, c.seed));
  show_heads(measure_heads(s.weights, c.model, d), d.vocab, common.svg_dir, fresh ? 6 : 5);
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
  cli.add_float("--weight-decay", o.weight_decay, "AdamW decoupled weight decay (>= 0)", -1e-30f,
                1.0f);
  cli.add_float("--grad-clip", o.grad_clip, "max global gradient norm (0 = off)", -1e-30f, 1e6f);
  cli.add_size("--eval-interval", o.eval_interval, "estimate the losses every N steps", 1,
               kMaxSteps);
  cli.add_size("--eval-iters", o.eval_iters, "batches per split per estimate", 1, kMaxEvalIters);
  cli.add_size("--tokens", o.tokens, "N, characters to sample after training", 0, kMaxTokens);
  cli.add_alias("--sample-length", "--tokens");  // its name before chapter 10's --tokens
  cli.add_string("--activation", o.activation, "FFN activation: gelu, gelu_tanh or relu");
  cli.add_string("--init", o.init, "initial weights: gpt2 (N(0, 0.02)) or pytorch (nn defaults)");
  cli.add_string("--schedule", o.schedule,
                 "learning rate: constant, or cosine (warmup, then down to lr/10)");
  cli.add_size("--warmup", o.warmup, "warmup steps of the cosine schedule", 0, kMaxSteps);
  cli.add_flag("--tied", o.tied,
               "tie the output head to the embedding (logits = x @ wte^T, GPT-2) "
               "instead of the lecture's separate Linear(C, V) with bias");
  cli.add_float("--dropout", o.dropout,
                "P in [0, 1): zero each attention and FFN output with probability P in training "
                "(the lecture's big model: 0.2)");
  cli.add_string("--optimizer", o.optimizer,
                 "adamw (the lecture's) or sgd (plain p -= lr * g, for the comparison)");
  cli.add_string("--positions", o.positions,
                 "learned (a table of T positions, the lecture's), rope (q and k rotated by "
                 "their position), alibi (a penalty on each score, growing with distance) or "
                 "none");
  cli.add_float("--rope-theta", o.rope_theta, "RoPE's base (> 0), with --positions rope", -1e30f,
                1e9f);
  cli.add_string("--normalization", o.normalization, "layernorm (the lecture's) or rmsnorm");
  cli.add_string("--ffn", o.ffn,
                 "mlp (two layers and --activation, the lecture's) or swiglu (F = 2/3 of 4C, up "
                 "to a multiple of 8)");
  cli.add_size("--n-kv-heads", o.n_kv_heads,
               "K/V heads shared by groups of query heads, must divide --n-heads (0: one per "
               "head)",
               0, kMaxHeads);
  cli.add_size("--window", o.window,
               "sliding-window attention: each query sees the last W keys, W <= T (0: all)", 0,
               kMaxBlock);
  cli.add_flag("--no-bias", o.no_bias, "no FFN, LayerNorm or output-head biases (Llama's)");
  cli.add_flag("--attn-bias", o.attn_bias,
               "attention biases b_q, b_k, b_v, b_o (GPT-2's c_attn and c_proj; chapter 14)");
  cli.add_string("--save", o.save_dir, "DIR: write a checkpoint at every estimate and at the end");
  cli.add_string(
      "--resume", o.resume_dir,
      "DIR: continue the run saved in DIR, DIR/current or DIR/ckpt-N (it keeps saving to DIR), "
      "on the corpus the checkpoint recorded (--data only to point at a copy of it)");
  cli.add_flag(
      "--overwrite", o.overwrite,
      "with --save: start over in a folder that already holds a run (its checkpoints are deleted)");
  cli.add_flag("--ladder", o.ladder,
               "rebuild the lecture's loss table (use the full corpus: --data)");
  cli.add_size("--ladder-steps", o.ladder_steps,
               "steps per ladder row (0: the lecture's 5000 and 3000)", 0, kMaxSteps);
  cli.add_string("--ladder-rows", o.ladder_rows,
                 "only these ladder rows, e.g. 0,5 (default: all six)");
  return cli.run(argc, argv,
                 [&](const attn::CommonOptions& common) { run(common, o, argc, argv); });
}
