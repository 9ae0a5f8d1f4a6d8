// model_flags.cpp: --weights DIR as chapters 07 and 10 load it (attn/term/model_flags.hpp).
#include "attn/term/model_flags.hpp"

#include <fmt/format.h>

#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include "attn/io/npy.hpp"
#include "attn/term/cli.hpp"

namespace attn {

namespace fs = std::filesystem;

LmWeights load_lm_as_described(const fs::path& dir, const ArchitectureFlags& flags,
                               std::size_t default_heads, ModelSpec& spec, bool& described,
                               std::string_view shown) {
  const std::string name = shown.empty() ? dir.string() : std::string(shown);
  const auto contradicts = [&](std::string_view flag, std::size_t given, std::string_view source,
                               std::size_t found) {
    return UsageError(fmt::format("{} {} contradicts model '{}', whose {} {}: drop the flag", flag,
                                  given, name, source, found));
  };
  const std::optional<ModelChoices> file = read_model_file(dir);
  described = file.has_value();
  ModelChoices c;
  if (file) {
    c = *file;
    if (flags.n_layers && *flags.n_layers != c.n_layers) {
      throw contradicts("--n-layers", *flags.n_layers, "model.txt says n_layers", c.n_layers);
    }
    if (flags.n_heads && *flags.n_heads != c.n_heads) {
      throw contradicts("--n-heads", *flags.n_heads, "model.txt says n_heads", c.n_heads);
    }
  } else {
    const std::size_t blocks = count_blocks(dir);
    c.n_layers = flags.n_layers.value_or(blocks);
    if (blocks > 0 && c.n_layers != blocks) {
      throw UsageError(fmt::format(
          "--n-layers {} contradicts model '{}', which holds {} blocks (h0 to h{}): drop the flag",
          c.n_layers, name, blocks, blocks - 1));
    }
    c.n_heads = flags.n_heads.value_or(default_heads);
  }
  // C and T_max: the shapes of wte.npy (V, C) and wpe.npy (T_max, C), checked against the flags
  // and n_heads before every tensor is read (a broken file is left for load_lm to name).
  const auto width = [&](const char* file_name, std::size_t axis) -> std::optional<std::size_t> {
    try {
      const NpyArray a = read_npy(dir / file_name);
      if (a.shape.size() == 2 && a.shape[0] > 0 && a.shape[1] > 0) return a.shape[axis];
    } catch (const std::exception&) {
    }
    return std::nullopt;
  };
  if (const std::optional<std::size_t> C = width("wte.npy", 1)) {
    if (flags.n_embd && *flags.n_embd != *C) {
      throw contradicts("--n-embd", *flags.n_embd, "wte.npy has C =", *C);
    }
    if (!file && (c.n_heads == 0 || *C % c.n_heads != 0)) {  // model.txt's: load_lm names it
      throw UsageError(fmt::format(
          "--n-heads {} does not divide C = {} of model '{}' (every head gets C / H channels)",
          c.n_heads, *C, name));
    }
  }
  if (flags.block_size && file && c.positions != Positions::learned &&
      *flags.block_size != c.block_size) {
    throw contradicts("--block-size", *flags.block_size, "model.txt says block_size", c.block_size);
  }
  if (flags.block_size && c.positions == Positions::learned) {
    if (const std::optional<std::size_t> T_max = width("wpe.npy", 0);
        T_max && *T_max != *flags.block_size) {
      throw contradicts("--block-size", *flags.block_size, "wpe.npy has T_max =", *T_max);
    }
  }
  return load_lm(dir, c, spec);
}

void check_model_bounds(const ModelSpec& spec, const ModelBounds& bounds, std::string_view shown) {
  const bool learned = spec.learned_positions();
  for (const auto& [key, value, bound, file] :
       {std::tuple{"n_layers", spec.n_layers, bounds.n_layers, "model.txt or its h{i} blocks"},
        std::tuple{"n_heads", spec.n_heads, bounds.n_heads, "model.txt"},
        std::tuple{"n_embd", spec.n_embd, bounds.n_embd, "wte.npy"},
        std::tuple{"block_size", spec.block_size, bounds.block_size,
                   learned ? "wpe.npy" : "model.txt"}}) {
    if (value > bound) {
      std::string flag = "--";
      for (const char* c = key; *c != '\0'; ++c) flag += *c == '_' ? '-' : *c;
      throw std::runtime_error(fmt::format(
          "model '{}': {} {} ({}) is above {}, the most this chapter takes (the bound of {})",
          shown, key, value, file, bound, flag));
    }
  }
}

}  // namespace attn
