// attn/train/checkpoint.hpp: a training run on disk (chapter 09), written so that a run killed at
// any moment resumes from its last checkpoint bit for bit.
#pragma once

#include <filesystem>

#include "attn/io/text.hpp"
#include "attn/train/train.hpp"

namespace attn {

// DIR/ckpt-NNNNNN/ holds one complete checkpoint:
//   model/      the weights as an `lm` folder (07_causal_lm --weights DIR/model reads it)
//   adam_m/, adam_v/   the moments, same file names
//   train.txt   the config, the step and the data generator's state (key value lines)
//   losses.npy  every step's training loss;  evals.tsv  step, train and val loss
//   vocab.txt   the characters in id order (UTF-8), so generating needs no corpus
// DIR/current is a symlink to the newest complete one; DIR/model a symlink to current/model.
// Writing is atomic: the new folder is written and fsync'ed under a temporary name, renamed, and
// only then `current` is switched (rename of a new symlink over it), after which the previous
// checkpoint is deleted. Killed at any moment, DIR/current names a complete checkpoint.
void save_checkpoint(const std::filesystem::path& dir, const TrainState& state,
                     const TrainConfig& config, const Vocab& vocab);
struct Checkpoint {
  TrainState state;
  TrainConfig config;
  Vocab vocab;
};
// Reads DIR/current (or DIR itself if it is a checkpoint folder). Throws std::runtime_error naming
// the file for anything missing, corrupt or inconsistent.
Checkpoint load_checkpoint(const std::filesystem::path& dir);
// The vocabulary file of a checkpoint or model folder: vocab.txt beside or above `model_dir`.
// Returns false when there is none (out is then unchanged).
bool find_vocab(const std::filesystem::path& model_dir, Vocab& out);

}  // namespace attn
