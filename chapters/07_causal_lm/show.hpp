// chapters/07_causal_lm/show.hpp: what each section of chapter 07 computes (the structs that
// main.cpp fills, in the page's order) and the functions of show.cpp that print them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "attn/io/text.hpp"
#include "attn/term/narrate.hpp"
#include "attn/model/model.hpp"

namespace ch07 {

using attn::Matrix;
using attn::Tensor;

// The last position's logits of a (1, T, V) tensor: the only row generation needs.
inline std::span<const float> last_row(const Tensor<3>& logits) {
  const std::size_t T = logits.shape()[1], V = logits.shape()[2];
  return {logits.data() + (T - 1) * V, V};
}

struct Model {
  attn::ModelSpec config;
  attn::LmWeights weights;
  std::string origin;      // for the narration
  bool untrained = true;   // false with --weights: the files may hold a trained model
  bool described = false;  // --weights: the folder has a model.txt
  bool own_vocab = false;  // --weights: the folder has a vocab.txt
};

struct Prompt {
  std::vector<int> ids;      // the whole prompt
  std::vector<int> context;  // its last min(T, T_max) tokens: what the model sees
};

// 1. The whole decoder and where its parameters are, counted from the tensors.
struct Parameters {
  std::size_t embedding = 0, positions = 0, final_ln = 0, total = 0;
  std::size_t head = 0;             // lm_head and its bias: 0 for a tied head
  std::vector<std::size_t> blocks;  // per block
};
void show_architecture(const Model& m, const Parameters& r);

// 2. Logits for the prompt, step by step and in one call.
struct ForwardStep {
  std::string what;  // "x = block_0(x)"
  std::string shape;
  double std = 0.0;  // of all the values
};
struct Logits {
  std::vector<ForwardStep> steps;
  Tensor<3> stepwise;  // (1, T, V): the steps above
  Tensor<3> logits;    // (1, T, V): lm_forward in one call
  double loss = 0.0;   // position t predicts token t+1 (T >= 2 only)
};
void show_logits(const Model& m, const attn::Vocab& vocab, const Prompt& p, const Logits& r);

// 3. Generation: the flags' sample, lm_generate's, and four other settings, same seed.
struct Sample {
  std::string setting;
  std::vector<int> ids;  // the new tokens only
};
struct Generation {
  attn::GenerateOptions options;
  std::vector<int> sample, library;  // the chapter's loop and attn::lm_generate
  double seconds = 0.0;              // the chapter's loop
  std::vector<Sample> others;
};
void show_generation(const Model& m, const attn::Vocab& vocab, const Prompt& p,
                     const Tensor<3>& logits, const Generation& r, bool timing);

// 4. The weights as a folder of .npy files, and a save/load round trip.
struct NpyFile {
  std::string name;
  std::vector<std::size_t> shape;
  std::string descr;  // '<f4'
};
struct RoundTrip {
  std::vector<NpyFile> files;  // sorted by name; block 0's and the others
  std::uintmax_t bytes = 0;
  Tensor<3> again;  // (1, T, V): the logits of the loaded model
};
void show_weights(const Model& m, const Tensor<3>& logits, const RoundTrip& r,
                  const std::string& export_dir);

// --svg: the model as a diagram, and each head's attention of the last layer over the prompt.
void write_svgs(const std::filesystem::path& dir, const Model& m, const attn::Vocab& vocab,
                const Prompt& p, const Tensor<3>& logits);

using attn::char_name;  // 'a', '\n', ' ' (attn/term/narrate.hpp)

}  // namespace ch07
