// attn/model/spec.hpp: the model, described once (chapters 06-11).
//
// A person asks for a model with flags or a model.txt: some sizes, some parts, perhaps an
// ablation. ModelChoices holds what was asked, with std::nullopt where nothing was (the default
// then applies). resolve_spec turns the choices into a ModelSpec: every default applied, every
// rule checked, once. Everything downstream (init, forward, backward, save, load, the cache,
// the fast kernels) takes the spec and neither re-defaults nor re-checks it.
//
//   flags or model.txt -> ModelChoices --resolve_spec--> ModelSpec -> lm_init, lm_forward, ...
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "attn/core/limits.hpp"
#include "attn/ops/attention_ref.hpp"
#include "attn/ops/ffn.hpp"

namespace attn {

// ---- The parts a model is built from (chapter 11). Each has the course's GPT-2 part as its
// default, so a model that names no part computes exactly what chapters 06-10 compute, bit for
// bit; another part swaps one piece for its modern replacement.
// Positions: a learned table added to the token embeddings (GPT-2); RoPE, q and k rotated by
// their absolute position inside attention (Llama); ALiBi, a penalty on each score growing
// with the distance between query and key (Press et al. 2022: "Train Short, Test Long"); or
// none at all (a causal model can still tell positions apart: a query at t sees t + 1 keys).
// Only the table limits the context; the others still only know the distances they were
// trained on: chapter 11 measures what each does past its training length.
enum class Positions { learned, rope, alibi, none };
// The norm of each sub-layer and of the final one: LayerNorm (gamma, beta) or RMSNorm (gamma).
enum class Normalization { layernorm, rmsnorm };
// The FFN: the two-layer MLP with an activation (relu, gelu, gelu_tanh), or SwiGLU (three
// matrices, no biases: silu(x w_gate) * (x w_up) @ w_down).
enum class FfnKind { mlp, swiglu };
// "learned" | "rope" | "alibi" | "none", "layernorm" | "rmsnorm", "mlp" | "swiglu": parse throws
// std::invalid_argument listing the accepted names (choice_names: those names in words, by the
// model.txt key, "positions", "normalization" or "ffn"; empty for any other key).
Positions parse_positions(std::string_view name);
std::string_view positions_name(Positions p);
Normalization parse_normalization(std::string_view name);
std::string_view normalization_name(Normalization n);
FfnKind parse_ffn_kind(std::string_view name);
std::string_view ffn_kind_name(FfnKind f);
std::string_view choice_names(std::string_view key);
// SwiGLU's default width: 2/3 of the MLP's 4C, so its three matrices hold about as many
// parameters as the MLP's two, rounded up to a multiple of 8 (Llama's multiple_of rule, with 8
// in place of Llama's 256, which would swamp a model of C = 64):
//   F = 8 * ceil(floor(8 C / 3) / 8)         C = 64: 176;  C = 384: 1024
std::size_t swiglu_width(std::size_t C);

// Chapter 09's ladder rebuilds the lecture's model piece by piece: each switch set to false
// takes one piece of the full model away. The defaults are the full model.
struct Ablations {
  bool tied_head = true;   // false: logits = h @ lm_head + lm_head_bias, lm_head (C, V)
  bool layer_norm = true;  // false: no ln1, ln2 or ln_f
  bool residual = true;    // false: no skip connections
  bool ffn = true;         // false: attention-only blocks
  bool attn_proj = true;   // false: no w_o (the heads' outputs are only concatenated)
  bool operator==(const Ablations&) const = default;
};

// What a person asked for. Every field has the default model's value, except the three whose
// default depends on other fields: those are std::nullopt until asked for.
struct ModelChoices {
  std::size_t vocab_size = 65;  // V
  std::size_t block_size = 64;  // T_max: rows of the position table, the longest context
  std::size_t n_embd = 64;      // C, the model's width
  std::size_t n_heads = 4;      // H, divides C
  std::size_t n_layers = 2;     // L
  Ablations ablations;
  Activation activation = Activation::gelu;  // the MLP's
  // Dropout p in [0, 1) on each block's attention output and FFN output, in the training
  // forward only: lm_forward, lm_loss and generation never drop.
  float dropout = 0.0f;
  // The parts (chapter 11). The Llama recipe: positions rope, normalization rmsnorm, ffn swiglu,
  // n_kv_heads < n_heads, no bias.
  Positions positions = Positions::learned;
  double rope_theta = 10000.0;  // RoPE's base (Llama 2's 10000)
  Normalization normalization = Normalization::layernorm;
  FfnKind ffn = FfnKind::mlp;
  bool bias = true;  // false: no FFN biases, no LayerNorm beta, no lm_head_bias
  // true: attention biases b_q, b_k, b_v, b_o (GPT-2's c_attn and c_proj have them; the course's
  // attention, like nanoGPT's bias = False and Llama's, has none). Chapter 14 loads GPT-2.
  bool attn_bias = false;
  std::optional<std::size_t> n_kv_heads;  // K/V heads (grouped-query attention); unset: n_heads
  std::optional<std::size_t> ffn_hidden;  // F; unset: 4 C (mlp) or swiglu_width(C)
  std::optional<std::size_t> window;      // sliding window W: query t sees keys t-W+1..t
  bool operator==(const ModelChoices&) const = default;
};

// The on/off parts of a model as model.txt names them, in the file's order: the spec's one table
// of part switches, which parse_model_txt and model_txt (model/lm_files.cpp) walk, so a new
// switch is a row here and lm_files never names a part. `written_off`: false for a switch that
// came after folders existed, written only when on (such a folder's model.txt stays the same,
// byte for byte, and one without the key reads as off).
struct PartSwitch {
  std::string_view key;
  bool ModelChoices::*choice;
  bool written_off;
};
std::span<const PartSwitch> part_switches();

// How an error names what was wrong: by the file key / field ("n_kv_heads 3 does not divide
// n_heads 4"), or by the flag a learner typed ("--n-kv-heads 3 does not divide --n-heads 4").
enum class SpecNames { keys, flags };

// RoPE's base, as any source may give it: 10000 (Llama 2) and 500000 (Llama 3) are inside.
inline constexpr double kMinRopeTheta = 1e-3, kMaxRopeTheta = 1e9;

// A rule of the spec broken: one line naming the key (or flag), its value and what is expected.
class SpecError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The model, resolved: what lm_init, lm_forward, the backward, save_lm, load_lm, the KV cache and
// the fast kernels read. Made by resolve_spec (or the default constructor: the default model);
// read its fields, never write them: to change a model, change its choices() and resolve again.
struct ModelSpec {
  ModelSpec();  // the default model: resolve_spec(ModelChoices{})

  std::size_t vocab_size;             // V
  std::size_t block_size;             // T_max
  std::size_t n_embd;                 // C
  std::size_t n_heads;                // H
  std::size_t n_layers;               // L
  std::size_t head_size;              // hs = C / H
  std::size_t n_kv_heads;             // KV, divides H (H: multi-head attention, 1: multi-query)
  std::size_t ffn_hidden;             // F
  std::optional<std::size_t> window;  // W in [1, T_max], or none: every earlier key
  Ablations ablations;
  Activation activation;
  float dropout;
  Positions positions;
  double rope_theta;
  Normalization normalization;
  FfnKind ffn;
  bool bias;
  bool attn_bias;  // b_q, b_k, b_v, b_o in every block's attention

  bool rope() const { return positions == Positions::rope; }
  bool alibi() const { return positions == Positions::alibi; }
  // A position table (wpe): T_max is then a hard limit of the model, not just its training length.
  bool learned_positions() const { return positions == Positions::learned; }
  // Only chapter 06's parts (the default model's attention, norm, FFN and biases): the fast
  // kernels of chapters 06-10 compute it.
  bool default_parts() const;
  // Attention other than chapter 05's multi-head attention: grouped K/V heads, RoPE, ALiBi or a
  // window.
  bool grouped_attention() const;
  // What it was resolved from: change a field and resolve_spec again.
  const ModelChoices& choices() const { return choices_; }

  // The same model: every resolved field equal (n_kv_heads unset and n_kv_heads = H are one).
  bool operator==(const ModelSpec& other) const;

 private:
  struct Unresolved {};
  explicit ModelSpec(Unresolved) {}
  friend ModelSpec resolve_spec(const ModelChoices&, SpecNames, std::size_t);
  ModelChoices choices_;
};

// The attention every path of the model runs, described once: the block's forward and backward
// (fast and reference), both caches' steps and the reference's step pass these options to the
// reference attention or the fast kernels, so none of them names a part. causal; the window; the
// position of the first query (`offset`: a cache step's position); the score-level parts
// (ALiBi's positions). K/V head groups come from n_kv_heads, in the shapes the paths pass.
AttentionOptions attention_options(const ModelSpec& spec, std::size_t offset = 0,
                                   bool causal = true);

// Every default applied and every rule checked:
//   sizes >= 1; n_heads divides n_embd; n_kv_heads divides n_heads; ffn_hidden >= 1;
//   rope_theta in [kMinRopeTheta, kMaxRopeTheta]; rope: an even head size;
//   1 <= window <= block_size; dropout in [0, 1); attn_proj = false only with chapter 05's
//   attention (no GQA, RoPE, ALiBi or window); at most limits::kMaxModelParameters parameters
//   and a KV cache of at most limits::kMaxElements floats (2 L T_max KV hs).
// Throws SpecError naming the first broken rule in `names`' vocabulary. `max_parameters`: a
// model drawn from flags is bounded by limits::kMaxModelParameters; one read from a checkpoint
// (chapter 14) passes limits::kMaxLoadedParameters.
ModelSpec resolve_spec(const ModelChoices& choices, SpecNames names = SpecNames::keys,
                       std::size_t max_parameters = limits::kMaxModelParameters);

// The spec with some of its choices changed, resolved again:
//   with_choices(spec, [](ModelChoices& c) { c.dropout = 0.0f; })
template <class Change>
ModelSpec with_choices(const ModelSpec& spec, Change&& change) {
  ModelChoices choices = spec.choices();
  change(choices);
  return resolve_spec(choices);
}

}  // namespace attn
