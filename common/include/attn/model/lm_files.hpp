// attn/model/lm_files.hpp: the language model (chapter 07) as a folder of .npy files plus
// model.txt, its architecture: chapter 07 loads one, chapter 09's checkpoints write them, chapter
// 10 generates from them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "attn/model/model.hpp"

namespace attn {

// Loads a model saved as a folder of .npy files named like the golden fixtures (the parameter
// table's names, attn/model/params.hpp: wte, wpe, h{i}.w_q, ..., ln_f_gamma, ln_f_beta, each +
// ".npy") and its model.txt, when it has one. The choices come from `asked`, replaced by every
// line of model.txt (whose n_layers and n_heads must agree with asked's); V, C and T_max come
// from wte.npy and wpe.npy (a model.txt that names them must agree). The choices are resolved
// once (resolve_spec) into `spec`, and exactly the tensors that spec has are read. Throws
// std::runtime_error naming the first missing or mis-shaped tensor or the broken rule:
// "model 'dir': h1.w_q.npy has shape (64, 32), expected (64, 64)".
LmWeights load_lm(const std::filesystem::path& dir, const ModelChoices& asked, ModelSpec& spec);
// The same, asking for what `spec` was resolved from (a checkpoint's model).
LmWeights load_lm(const std::filesystem::path& dir, ModelSpec& spec);
// The same for the default model with n_layers blocks of n_heads heads (or what model.txt says).
LmWeights load_lm(const std::filesystem::path& dir, std::size_t n_layers, std::size_t n_heads,
                  ModelSpec& spec);
// Writes the same layout (for tests and for exporting a model made here); empty tensors (a
// variant's unused weights) are not written.
void save_lm(const std::filesystem::path& dir, const LmWeights& w);
// The same plus model.txt (model_txt(spec)), so the folder says what it holds.
void save_lm(const std::filesystem::path& dir, const LmWeights& w, const ModelSpec& spec);
// model.txt: the whole spec as `key value` lines (attn/io/keyvalue.hpp), every choice resolved:
// vocab_size, block_size, n_embd, n_heads, n_layers, the ablations (tied_head, use_layer_norm,
// residual, use_ffn, attn_proj), ffn_hidden, activation, dropout, the parts (positions,
// rope_theta, normalization, ffn, n_kv_heads, window when there is one, bias). The one file
// format of a model's description: a training checkpoint's model/model.txt is it too.
std::string model_txt(const ModelSpec& spec);
// What a folder's model.txt says, read alone (no tensor is loaded), as choices (V, C and T_max
// stay at ModelChoices' defaults unless model.txt names them: the tensors have the final say).
// std::nullopt when the folder has no model.txt (a folder saved by save_lm without its spec:
// then n_layers is the number of blocks and n_heads must be given). Chapters 07 and 10 take the
// architecture from here, so `--weights DIR` alone runs any model a chapter saved. Files
// written before ModelSpec (no vocab_size or n_embd line, `window 0`, `ffn_hidden 0`) read as
// they always did. An unknown key is refused by name. Throws std::runtime_error naming the file
// and the line.
std::optional<ModelChoices> read_model_file(const std::filesystem::path& dir);

// What `--weights DIR` loads: DIR itself, or DIR/model when DIR is a chapter-09 run or
// checkpoint folder; resolved once through links (a running trainer switches DIR/current), so
// every file comes from one folder.
std::filesystem::path resolve_model_folder(const std::filesystem::path& dir);
// The number of blocks h0, h1, ... a model folder holds (by their h{i}.w_q.npy files): for a
// message that says which --n-layers the folder needs.
std::size_t count_blocks(const std::filesystem::path& dir);

// MANIFEST.txt: what a finished folder holds, one `name size fnv1a64` line per regular file
// (the FNV-1a 64-bit hash of its bytes, 16 hex digits). Chapter 09 writes one into each folder of
// a checkpoint, last, just before the checkpoint is renamed into place, so a load can tell a
// complete, untouched folder from a torn, mixed or edited one. A folder saved by save_lm alone
// has none and loads as before; when there is one, load_lm verifies it first. A folder with
// sub-folders (a checkpoint: model/, adam_m/, adam_v/) also lists each sub-folder's manifest
// (`model/MANIFEST.txt size fnv1a64`), so its parts cannot be swapped for another checkpoint's,
// manifests included. (Checkpoints saved before that list none, and load as before.)
inline constexpr const char* kManifestName = "MANIFEST.txt";
// FNV-1a 64 of some bytes: MANIFEST.txt's checksum, and the corpus a checkpoint records.
std::uint64_t fnv1a64(std::string_view bytes);
void write_manifest(const std::filesystem::path& dir);
// Throws std::runtime_error naming the first file that is missing, unlisted, not a regular file,
// or of another size or checksum than MANIFEST.txt says. Returns false when there is no manifest.
bool verify_manifest(const std::filesystem::path& dir);
// The bytes every .npy file of one model folder may hold together, checked before anything is
// read: the largest model a chapter builds (limits::kMaxModelParameters) stored as float64.
inline constexpr std::uintmax_t kMaxModelFolderBytes = (std::uintmax_t{1} << 25) * 8 + (1u << 20);

}  // namespace attn
