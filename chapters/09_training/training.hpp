// chapters/09_training/training.hpp: what the chapter's files share. main.cpp is the lesson
// (each section computed there, then printed by show.cpp); run.cpp the run around it (flags to a
// config, resuming, the training loop with its progress line, estimates and checkpoints);
// ladder.cpp the lecture's loss table (--ladder).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/io/text.hpp"
#include "attn/train/checkpoint.hpp"
#include "attn/io/data.hpp"
#include "attn/train/train.hpp"

namespace ch09 {

using Tokens = xt::xtensor<int, 2>;

// ---- The functions the walkthrough calls: from attn:: (the reference) or, with --mine, the
// learner's ex09:: exercises.
struct Kernels {
  void (*adamw_update)(std::span<float>, std::span<const float>, std::span<float>, std::span<float>,
                       float, float, std::size_t,
                       const attn::AdamWConfig&);                                        // ex09.1
  attn::Batch (*get_batch)(std::span<const int>, std::size_t, std::size_t, attn::Rng&);  // ex09.2
  attn::EvalRecord (*estimate_loss)(const attn::LmWeights&, const attn::ModelSpec&,
                                    const attn::Split&, std::size_t, std::size_t, std::uint64_t,
                                    std::size_t);  // ex09.3
  attn::StepResult (*train_step_on)(attn::TrainState&, const attn::TrainConfig&, const Tokens&,
                                    const Tokens&);                    // ex09.4
  float (*learning_rate)(const attn::LrSchedule&, std::size_t);        // ex09.5
  double (*clip_grad_norm)(std::span<const std::span<float>>, float);  // ex09.6
  bool reference;  // true: the library's own step (it reuses the batch buffers)
};

// One training step written out (main.cpp): zero the gradients, forward and backward, clip,
// update, from the kernels' update, schedule and clipping. The run takes it with --mine.
attn::StepResult step_by_hand(const Kernels& k, attn::TrainState& s, const attn::TrainConfig& c,
                              const Tokens& x, const Tokens& y);

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
  std::size_t tokens = 200;         // characters sampled after training
  std::string activation = "relu";  // the lecture's FFN
  std::string init = "gpt2";
  std::string schedule = "constant";
  std::size_t warmup = 0;
  bool tied = false;                // the lecture's lm_head: a separate Linear(C, V) with bias
  float dropout = 0.0f;             // p in [0, 1); the lecture's scaled-up model uses 0.2
  std::string optimizer = "adamw";  // or sgd, for the comparison on the page
  std::string save_dir;
  std::string resume_dir;
  bool overwrite = false;  // --save DIR may replace a run already in DIR
  // The parts (chapter 11): each default is the lecture's model.
  std::string positions = "learned";        // or rope
  float rope_theta = 10000.0f;              // RoPE's base (> 0), with --positions rope
  std::string normalization = "layernorm";  // or rmsnorm
  std::string ffn = "mlp";                  // or swiglu
  std::size_t n_kv_heads = 0;               // K/V heads, divides n_heads; 0 = n_heads
  std::size_t window = 0;                   // sliding-window attention, 1..block_size; 0 = none
  bool no_bias = false;                     // no FFN, LayerNorm or output-head biases
  bool attn_bias = false;                   // attention biases (GPT-2's, chapter 14)
  bool activation_given = false;            // --activation typed (it sets the MLP's only)
  bool rope_theta_given = false;            // --rope-theta typed (it needs --positions rope)
  bool ladder = false;
  std::size_t ladder_steps = 0;  // 0: the lecture's 5000 (3000 for the bigram)
  std::string ladder_rows;       // "" = all; e.g. "0,5"
};

// ---- The data, as the lecture prepares it.
struct Data {
  attn::Vocab vocab;
  attn::Split split;
  attn::CorpusRecord corpus;  // where the text came from and its hash: every checkpoint records it
};
Data prepare_data(const attn::Corpus& corpus);
// The corpus a resumed run trains on: --data when given (exit 2 when the checkpoint recorded
// another text), else the file the checkpoint recorded (exit 1 when it is gone or changed since;
// $ATTN_DATA does not apply), else, for a checkpoint saved before the record existed, --data,
// $ATTN_DATA or the shipped corpus as for a fresh run, checked by its vocabulary. `note` says
// which, for the narration.
attn::Corpus resume_corpus(const attn::Checkpoint& ck, const std::string& resume_dir,
                           const std::optional<std::string>& data_flag, std::string& note);
// Throws (exit 1) when the validation split has no window of block_size + 1 tokens.
void check_data_fits(const Data& d, std::size_t block_size);

// The config a fresh run trains with; attn::UsageError (exit 2) naming the flag for a model or
// batch that cannot be built or would not fit in memory.
attn::TrainConfig config_from(const Options& o, std::size_t V, std::uint64_t seed);
// --dropout outside [0, 1) or an unknown --optimizer: attn::UsageError (exit 2), before any file
// is read.
void check_flag_values(const Options& o);
// The parts' flags (--positions, --rope-theta, --normalization, --ffn, --n-kv-heads, --window,
// --no-bias) against each other and the sizes: attn::UsageError (exit 2) naming the flags.
void check_part_flags(const Options& o);
// With --resume, the checkpoint fixes the model and the optimizer: a flag that says otherwise is
// a usage error (exit 2), never silently ignored.
void check_resume_flags(const Options& o, const attn::TrainConfig& c, int argc, char** argv);

// ---- The run: steps until config.steps, an estimate every eval_interval steps (with a
// checkpoint in save_dir, if any), a progress line on a terminal; Ctrl-C stops after the step.
struct RunReport {
  double seconds = 0.0;
  std::size_t steps_taken = 0;
  bool interrupted = false;  // by a signal: SIGINT (Ctrl-C) or SIGTERM
  int signal = 0;            // its number: the exit code is 128 + signal
};
RunReport run_training(const Kernels& k, attn::TrainState& s, const attn::TrainConfig& c,
                       const Data& d, const std::string& save_dir, bool timing);
// Installs the handlers run_training watches: SIGINT and SIGTERM stop the run after the step (a
// second one exits at once); SIGXFSZ is ignored, so a file above `ulimit -f` is a write error.
void stop_on_ctrl_c();
std::string clock_text(double seconds);  // "1:05"
// `text` broken at spaces into lines of at most `width` columns; lines after the first start
// with `indent` spaces (the first line's own prefix is part of text).
std::string wrap_text(const std::string& text, std::size_t width, std::size_t indent = 0);
// The loss curve: every step's training loss (noisy) and the estimates of both splits.
// The losses of a run against two bars: log V (a uniform guess) and the bigram table's val loss.
// `scope` says which run it is (seed, corpus), for the title.
std::string loss_curve_svg(const attn::TrainState& s, double log_v, double bigram_val,
                           const std::string& scope);

// --ladder: each of the lecture's six models trained from scratch, its val loss beside the
// lecture's (ladder.cpp).
void run_ladder(const attn::CommonOptions& common, std::size_t steps, const std::string& rows);

}  // namespace ch09
