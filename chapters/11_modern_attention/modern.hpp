// chapters/11_modern_attention/modern.hpp: what the chapter's two files share. main.cpp is the
// lesson (sections 1-5: each part computed, then shown); table.cpp the measured table (section
// 6: the model trained with each part alone and all together, over seeds).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attn/io/data.hpp"
#include "attn/term/cli.hpp"
#include "attn/model/model.hpp"

namespace ch11 {

// ---- The chapter's flags.
struct Options {
  std::size_t head_size = 8;    // hs of section 1's rotation
  float rope_theta = 10000.0f;  // RoPE's base, > 0
  std::size_t n_kv_heads = 2;   // K/V heads of the gqa rows and sections 4-5; divides H = 4
  std::size_t window = 0;       // W of the window row and section 5; 0: T / 4 of the table
  bool table = false;           // the full table (C 64, H 4, L 4, T 64, B 32, 2000 steps, 5 seeds)
  std::string table_rows;       // "" = all; names, e.g. "base,llama"
  std::string table_seeds;      // "" = the table's own (from --seed)
  bool table_rows_given = false;        // --table-rows was given (an empty list is refused)
  bool table_seeds_given = false;       // --table-seeds was given (likewise)
  std::size_t table_steps = 0;          // 0 = the table's own
  bool extrapolate = false;             // section 7: train short, test long
  std::size_t extrapolate_steps = 600;  // its training steps per model
  std::size_t extrapolate_seeds = 5;    // and its seeds, from --seed
};

// The model every row of the table starts from, and its training budget.
struct TableSize {
  std::size_t n_embd, n_heads, n_layers, block_size, batch_size, steps, seeds, eval_interval,
      eval_iters;
};
TableSize table_size(bool full);

// The model of the table's size with the window of Options (section 5 and the window row).
std::size_t table_window(const Options& o, const TableSize& z);

// Throws attn::UsageError (exit 2) for flags that do not fit together, before any work.
void check_options(const Options& o);

// --table-rows and --table-seeds: attn::UsageError (exit 2) for an unknown row or a bad seed,
// or for a table (or section 7, --extrapolate) that would train longer than kMaxTrainingSeconds.
void check_table_flags(const Options& o, std::uint64_t seed);

// ---- The time a command trains, estimated before it starts: each training step costs three
// forwards over B windows of T tokens (the forward, and a backward of about twice its work),
// each estimate 2 x eval_iters forwards, a forward being attn::lm_token_flops_uncached(T) FLOPs
// and T positions. Measured on this course's 2-vCPU machine, one thread, a run takes about
//   seconds = FLOPs / 62e9 + 1.05e-6 x the positions pushed through the model
// (the full table's run, C 64 L 4, about 140 s; the default table's 40 runs, C 32 L 2, about
// 70 s: small models spend more of their time per position than per FLOP). A command is held to
// kMaxTrainingSeconds, one run of the full table.
inline constexpr double kMaxTrainingSeconds = 150.0;
double training_seconds(const attn::ModelSpec& model, std::size_t batch_size, std::size_t steps,
                        std::size_t eval_interval, std::size_t eval_iters);
// Section 7's estimate: every variant, seed and its reading of the long windows.
double extrapolation_seconds(const Options& o);

// Section 6: the table, trained and printed.
void run_table(const attn::CommonOptions& common, const Options& o);
// Section 7 (--extrapolate, extrapolation.cpp): five ways of knowing positions, trained at T and
// read at 8T, over --extrapolate-seeds seeds.
void run_extrapolation(const attn::CommonOptions& common, const Options& o);

// ---- Loss by position, which sections 6 and 7 read (extrapolation.cpp).
// `count` windows of `length` + 1 tokens spread evenly over `val` (which must hold at least
// length + 1): x (count, length), and y the same shifted by one.
attn::Batch val_windows(const std::vector<int>& val, std::size_t length, std::size_t count);
// The cross-entropy at each position, averaged over the windows: (length,).
std::vector<double> loss_by_position(const attn::LmWeights& w, const attn::ModelSpec& m,
                                     const attn::Batch& win);

}  // namespace ch11
