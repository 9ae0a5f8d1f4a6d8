// attn/train/checkpoint.hpp: a training run on disk (chapter 09), written so that a run killed at
// any moment resumes from its last checkpoint bit for bit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "attn/io/text.hpp"
#include "attn/train/train.hpp"

namespace attn {

// DIR/ckpt-NNNNNN/ holds one complete checkpoint:
//   model/      the weights as an `lm` folder (07_causal_lm --weights DIR/model reads it)
//   adam_m/, adam_v/   the moments, same file names
//   train.txt   the config, the step and the data generator's state (key value lines)
//   losses.npy  every step's training loss;  evals.tsv  step, train and val loss
//   vocab.txt   the characters in id order (UTF-8), so generating needs no corpus
//   train.txt also records the corpus (corpus_path, corpus_bytes, corpus_fnv1a64), so a resume
//   without --data reads the same file and a different corpus is refused by name.
// DIR/current is a symlink to the newest complete one; DIR/model a symlink to current/model.
// DIR/checkpoints.txt lists every name the run made in DIR (its checkpoints, and the temporary
// names of a save in progress), written before the folder it names: a save deletes only what the
// list names, never another file, so a user's ckpt-000200.keep or ckpt-notes/ stays. A run saved
// before the list existed owns the checkpoint `current` names.
// Each folder of a checkpoint (the checkpoint itself, model/, adam_m/, adam_v/) ends with a
// MANIFEST.txt (attn/model/lm_files.hpp): every file's size and checksum, written last, before
// the rename. A load verifies them, so a torn, mixed or edited checkpoint is refused by name.
// Writing is atomic: the new folder is written and fsync'ed under a temporary name, renamed, and
// only then `current` is switched (rename of a new symlink over it), after which the previous
// checkpoint is deleted. Killed at any moment, DIR/current names a complete checkpoint.
// The corpus a run trains on: where it was read and what it held (its size and FNV-1a 64 hash,
// attn::fnv1a64), so a resumed run can read it again and tell it from any other text.
struct CorpusRecord {
  std::string path;         // absolute, as it was read, e.g. "/home/me/data/tinyshakespeare.txt"
  std::uint64_t bytes = 0;  // its size
  std::uint64_t fnv1a64 = 0;
};
// The record of a corpus's text read from `path` (made absolute, not resolved through links).
CorpusRecord record_corpus(const std::filesystem::path& path, std::string_view text);
// "fnv1a64 0123456789abcdef, 37550 bytes": for messages.
std::string corpus_fingerprint(const CorpusRecord& r);

void save_checkpoint(const std::filesystem::path& dir, const TrainState& state,
                     const TrainConfig& config, const Vocab& vocab,
                     const std::optional<CorpusRecord>& corpus = std::nullopt);
struct Checkpoint {
  TrainState state;
  TrainConfig config;
  Vocab vocab;
  // The corpus it was trained on; std::nullopt for a checkpoint saved before the record existed
  // (it resumes on the corpus --data names, checked by its vocabulary only).
  std::optional<CorpusRecord> corpus;
};
// Reads DIR/current (or DIR itself if it is a checkpoint folder), resolved once: every file comes
// from the one checkpoint `current` named at that instant. Throws std::runtime_error naming
// the file for anything missing, corrupt or inconsistent.
Checkpoint load_checkpoint(const std::filesystem::path& dir);
// The vocabulary file of a checkpoint or model folder: vocab.txt beside or above `model_dir`.
// Returns false when there is none (out is then unchanged). A broken one throws, naming the
// folder as `kind` ("checkpoint", or "model folder" for a loose model folder).
bool find_vocab(const std::filesystem::path& model_dir, Vocab& out,
                std::string_view kind = "checkpoint");

// The bounds of a training config, the same for a flag and for train.txt: throws
// std::invalid_argument with one line naming the key (train.txt's name), the value and the bound,
// e.g. "eval_interval is 0, expected at least 1".
void check_train_config(const TrainConfig& c);
namespace train_limits {
inline constexpr std::size_t kMaxEmbd = 1024;
inline constexpr std::size_t kMaxHeads = 64;
inline constexpr std::size_t kMaxLayers = 32;
inline constexpr std::size_t kMaxBlock = 1024;
inline constexpr std::size_t kMaxBatch = 1024;
inline constexpr std::size_t kMaxSteps = 1000000;
inline constexpr std::size_t kMaxEvalIters = 10000;
inline constexpr std::size_t kMaxTokensPerStep = std::size_t{1} << 17;  // B * T
// The activations a step keeps for its backward, over all layers (block_activation_floats x L):
// 4 GiB of floats, room for the lecture's final model (B 64, T 256, C 384, 6 heads, 6 layers,
// dropout: 2.8 GiB).
inline constexpr std::size_t kMaxKeptFloats = std::size_t{1} << 30;
}  // namespace train_limits

// The run folder a --resume path stands for: DIR itself, or DIR for DIR/current, DIR/ckpt-N,
// DIR/model or any other path inside the run (a resumed run always saves to its run folder, never
// inside a checkpoint).
std::filesystem::path run_folder_of(const std::filesystem::path& path);
// True when DIR holds a run (DIR/current exists).
bool holds_run(const std::filesystem::path& dir);
// Removes what the run made: the checkpoints DIR/checkpoints.txt lists, `current`, `model` and
// the list (--overwrite); the lock and every other file stay.
void remove_run(const std::filesystem::path& dir);
// Where a run (--save) or a model (07's --export) may be written: never inside a run folder (its
// checkpoints, `current`, `model` and any other folder in it belong to that run) and never into a
// saved checkpoint or model folder, one with a MANIFEST.txt (a new file there would contradict
// it). Throws std::invalid_argument, one line naming `flag`, DIR and the folder that holds it:
// "--save 'runs/a/current' is inside the run folder 'runs/a', ...".
void check_save_folder(const std::filesystem::path& dir, std::string_view flag);

// One owner per run folder: DIR/lock, flock'ed for as long as this object lives (the kernel
// releases it when the process dies, so kill -9 leaves no stale lock). A second trainer on the
// folder gets a one-line std::runtime_error naming the holder's pid.
class RunLock {
 public:
  explicit RunLock(const std::filesystem::path& dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace attn
