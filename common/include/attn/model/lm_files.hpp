// attn/model/lm_files.hpp: the language model (chapter 07) as a folder of .npy files plus
// model.txt, its architecture: chapter 07 loads one, chapter 09's checkpoints write them, chapter
// 10 generates from them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

#include "attn/model/model.hpp"

namespace attn {

// Loads a model saved as a folder of .npy files named like the golden fixtures: wte, wpe,
// h{i}.w_q, h{i}.w_k, h{i}.w_v, h{i}.w_o, h{i}.ln1_gamma, h{i}.ln1_beta, h{i}.ln2_gamma,
// h{i}.ln2_beta, h{i}.w1, h{i}.b1, h{i}.w2, h{i}.b2, ln_f_gamma, ln_f_beta (each + ".npy").
// V, T_max and C come from wte and wpe; n_layers and n_heads are given. Throws
// std::runtime_error naming the first missing or mis-shaped tensor:
// "model 'dir': h1.w_q.npy has shape (64, 32), expected (64, 64)".
LmWeights load_lm(const std::filesystem::path& dir, std::size_t n_layers, std::size_t n_heads,
                  LmConfig& config_out);
// The same for any variant (chapter 09's checkpoints): the caller fills config's n_layers,
// n_heads and variant fields (tied_head, use_layer_norm, use_ffn, attn_proj, ffn_hidden, ...);
// load_lm reads exactly the tensors that variant has (lm_head.npy and lm_head_bias.npy when the
// head is untied) and sets vocab_size, block_size and n_embd from wte and wpe.
LmWeights load_lm(const std::filesystem::path& dir, LmConfig& config);
// Writes the same layout (for tests and for exporting a model made here); empty tensors (a
// variant's unused weights) are not written.
void save_lm(const std::filesystem::path& dir, const LmWeights& w);
// The same plus model.txt, the architecture as `key value` lines (n_layers, n_heads and the
// variant fields), so the folder says what it holds: both load_lm overloads read model.txt when
// it is there, take the variant from it, and refuse an n_layers or n_heads that contradicts it.
void save_lm(const std::filesystem::path& dir, const LmWeights& w, const LmConfig& config);
// What a folder's model.txt says, read alone (no tensor is loaded): n_layers, n_heads and the
// variant fields, with V, T_max and C left at LmConfig's defaults (they come from wte.npy and
// wpe.npy). std::nullopt when the folder has no model.txt (a folder saved by save_lm without its
// config: then n_layers is the number of blocks and n_heads must be given). Chapters 07 and 10
// take the architecture from here, so `--weights DIR` alone runs any model a chapter saved.
// Keys that only matter while training (dropout) are accepted and ignored; any other unknown key
// is refused by name. Throws std::runtime_error naming the file and the line.
std::optional<LmConfig> read_model_file(const std::filesystem::path& dir);

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
// has none and loads as before; when there is one, load_lm verifies it first.
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
