// attn/term/model_flags.hpp: what `--weights DIR` loads in chapters 07 and 10, the folder's own
// description of the model checked against the architecture flags a learner typed. It sits in
// the terminal layer because it speaks in flags (a contradiction is an attn::UsageError, exit 2);
// the loading itself is attn::load_lm (attn/model/lm_files.hpp).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string_view>

#include "attn/model/lm_files.hpp"

namespace attn {

// The architecture flags of chapters 07 and 10 (--n-layers, --n-heads, --n-embd, --block-size),
// each std::nullopt when it was not typed.
struct ArchitectureFlags {
  std::optional<std::size_t> n_layers, n_heads, n_embd, block_size;
};
// Loads the model folder `dir` (resolved) as the folder describes it: n_layers, n_heads and the
// variant from its model.txt; V, C and T_max from wte.npy and wpe.npy. A folder without model.txt
// has as many layers as h{i} blocks on disk and n_heads from the flag or `default_heads`. Flags
// only override what the files leave open: one that contradicts the files throws
// attn::UsageError naming both values ("--n-layers 1 contradicts model 'DIR', whose model.txt
// says n_layers 2: drop the flag"); anything broken in the folder, std::runtime_error naming the
// file. `described` is set to whether the folder had a model.txt. `shown` names the folder in
// those messages as the user typed it (default: `dir`).
LmWeights load_lm_as_described(const std::filesystem::path& dir, const ArchitectureFlags& flags,
                               std::size_t default_heads, ModelSpec& spec, bool& described,
                               std::string_view shown = {});

// The largest model a chapter takes, flag by flag (its --help's bounds): a folder's model is held
// to the same ones as the flags that would have made it.
struct ModelBounds {
  std::size_t n_layers, n_heads, n_embd, block_size;
};
// Throws std::runtime_error naming the folder (as `shown`), the file the value comes from
// (model.txt, or wte.npy and wpe.npy for C and a learned T_max), the value, the bound and its
// flag, e.g. "model 'DIR': block_size 1048576 (model.txt) is above 4096, the most this chapter
// takes (the bound of --block-size)".
void check_model_bounds(const ModelSpec& spec, const ModelBounds& bounds, std::string_view shown);

}  // namespace attn
