// attn/model/gpt2.hpp: a Hugging Face GPT-2 folder as the course's model (chapter 14).
// The folder as downloaded: config.json (the sizes), model.safetensors (the tensors), and the
// tokenizer's vocab.json and merges.txt (chapter 13). GPT-2 is the course's default model plus
// one part, attention biases (ModelSpec::attn_bias): learned positions, pre-norm LayerNorm with
// biases, the MLP with gelu_tanh ("gelu_new"), the tied head.
//
// The checkpoint's names, and where each tensor goes (prefix "transformer." or none, as the
// hub's file and save_pretrained each write them; Conv1D stores (in, out), the course's layout):
//   wte.weight (V, C)                 -> wte
//   wpe.weight (T_max, C)             -> wpe
//   h.{l}.ln_1.weight, .bias (C,)     -> h{l}.ln1_gamma, ln1_beta (ln_2: ln2_...)
//   h.{l}.attn.c_attn.weight (C, 3C)  -> h{l}.w_q | w_k | w_v, its three column blocks
//   h.{l}.attn.c_attn.bias (3C,)      -> h{l}.b_q | b_k | b_v
//   h.{l}.attn.c_proj.weight, .bias   -> h{l}.w_o (C, C), b_o (C,)
//   h.{l}.mlp.c_fc.weight, .bias      -> h{l}.w1 (C, F), b1 (F,)
//   h.{l}.mlp.c_proj.weight, .bias    -> h{l}.w2 (F, C), b2 (C,)
//   ln_f.weight, .bias (C,)           -> ln_f_gamma, ln_f_beta
//   lm_head.weight (V, C), optional   -> nothing: it must equal wte (the tied head)
//   h.{l}.attn.bias, .masked_bias     -> skipped: the causal mask, stored by older files
#pragma once

#include <array>
#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/model/model.hpp"
#include "attn/model/spec.hpp"

namespace attn {

// One line naming the file and the field: "gpt2/config.json: activation_function 'swish' is not
// one the course runs (gelu_new, gelu, relu)".
class Gpt2Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// config.json as the course reads it: the model's choices (attn_bias on), or Gpt2Error naming the
// key. Refused by name: a layer_norm_epsilon other than 1e-5 (the course's LayerNorm epsilon),
// an activation other than gelu_new / gelu / relu, cross-attention, attention scaled by the layer
// index, and sizes the course cannot hold (resolve_spec's rules, at most
// limits::kMaxLoadedParameters parameters).
ModelSpec read_gpt2_config(const std::filesystem::path& config_json);

// c_attn's fused matrix (C, 3C), x @ it = [q | k | v], cut into its three column blocks: w_q, w_k,
// w_v, each (C, C) (the heads inside each are column blocks of hs, the course's split_heads).
// Throws std::invalid_argument unless the matrix is (C, 3C) with C >= 1. (ex14.1)
std::array<Matrix, 3> split_qkv(const Matrix& fused);
// Its bias (3C,) cut the same way into b_q, b_k, b_v (C,).
std::array<Vector, 3> split_qkv_bias(const Vector& fused);

// One row of the name map: a tensor of the checkpoint and what the course made of it.
struct Gpt2Tensor {
  std::string file_name;    // as stored, e.g. "transformer.h.0.attn.c_attn.weight"
  std::string shape;        // "(64, 192)"
  std::string course_name;  // "h0.w_q | h0.w_k | h0.w_v", "skipped (causal mask buffer)", ...
};

struct Gpt2Model {
  ModelSpec spec;
  LmWeights weights;
  std::vector<Gpt2Tensor> tensors;  // every tensor of the file, in the file's order
  bool prefixed = false;            // names start with "transformer."
  std::string dtype;                // "F32", "F16", "BF16" (F16 and BF16 converted to float)
  std::size_t file_bytes = 0;       // model.safetensors
};

// Loads DIR/config.json and DIR/model.safetensors. Every tensor's shape is checked against the
// config, every value must be finite, missing and unexpected tensors are named: Gpt2Error or
// SafetensorsError, one line naming the file and the field.
Gpt2Model load_gpt2(const std::filesystem::path& dir);

}  // namespace attn
