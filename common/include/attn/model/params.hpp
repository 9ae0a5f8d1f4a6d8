// attn/model/params.hpp: the parameter table, the one list of a language model's tensors (chapters
// 07-11). Each row: the tensor's name, where it lives in the weights, its shape from the config,
// how it starts and whether AdamW decays it.
//   name                        shape         starts as    decayed   the model has it
//   wte                         (V, C)        N(0, 0.02)   yes       always
//   wpe                         (T_max, C)    N(0, 0.02)   yes       learned positions
//   h{l}.w_q                    (C, C)        N(0, 0.02)   yes       always
//   h{l}.w_k, h{l}.w_v          (C, KV hs)    N(0, 0.02)   yes       always (KV = H: (C, C))
//   h{l}.w_o                    (C, C)        N(0, 0.02)   yes       with the output projection
//   h{l}.b_q (C,), b_k, b_v (KV hs,)          0            no        attention biases (GPT-2)
//   h{l}.b_o (C,)                             0            no        attention biases, with w_o
//   h{l}.ln1_gamma, ln2_gamma   (C,)          1            no        with norms
//   h{l}.ln1_beta, ln2_beta     (C,)          0            no        LayerNorm with biases
//   h{l}.w1 (C, F), h{l}.w2 (F, C)            N(0, 0.02)   yes       the MLP FFN
//   h{l}.b1 (F,), h{l}.b2 (C,)                0            no        the MLP FFN with biases
//   h{l}.w_gate, w_up (C, F), w_down (F, C)   N(0, 0.02)   yes       the SwiGLU FFN
//   ln_f_gamma, ln_f_beta       (C,)          1, 0         no        as ln1 (beta: as ln1_beta)
//   lm_head (C, V)                            N(0, 0.02)   yes       an untied head
//   lm_head_bias (V,)                         0            no        an untied head with biases
// A tensor the model does not have is empty (size 0) in the weights and absent from the folder.
//
// Everything that goes over a model's tensors walks this list, in this order (the order of
// lm_parameters and of the files): saving and loading (lm_files.cpp), the shape checks (of the
// gradients, and of the weights a block or a KV cache runs: fits_row, param_misfit), zeros-like,
// the reference's casts to float64 and its gradient checks (model/reference.cpp), the training
// step's views (train.cpp). A new tensor is one new row here. Initialisation draws the default
// model's numbers in this order too, then drops or narrows what a variant does not use (lm_init),
// so that variants start from the same draws.
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "attn/core/check.hpp"  // shape_str
#include "attn/model/model.hpp"

namespace attn {

enum class ParamInit { normal, ones, zeros };

// The sizes and choices of a config that the table reads: param_dims(config).
struct ParamDims {
  std::size_t V = 0, T_max = 0, C = 0, F = 0;
  std::size_t kv_cols = 0;         // the columns of w_k and w_v: KV heads of hs = C / H
  bool learned_positions = false;  // wpe
  bool attn_proj = false;          // w_o
  bool attn_biases = false;        // b_q, b_k, b_v (and b_o with w_o)
  bool norms = false;              // ln1, ln2, ln_f gammas
  bool norm_betas = false;         // their betas (LayerNorm with biases)
  bool mlp = false;                // w1, w2
  bool mlp_biases = false;         // b1, b2
  bool swiglu = false;             // w_gate, w_up, w_down
  bool untied_head = false;        // lm_head
  bool head_bias = false;          // lm_head_bias
  std::size_t F_drawn = 0;         // the MLP's width as lm_init draws it: F, or 4 C with SwiGLU
  std::size_t F_gated_drawn = 0;   // SwiGLU's F when the model chose it (even ablated), else 0
};
// The spec's dims (a view of it: nothing is checked again).
ParamDims param_dims(const ModelSpec& spec);
// The parameters a model of these dims and L blocks holds: the sum of the present rows' sizes.
std::size_t param_count(const ParamDims& dims, std::size_t n_layers);

// One row of the table, as one model has it.
struct ParamRow {
  int block;                         // l of "h{l}.", or -1 outside the blocks
  const char* field;                 // "w_q", "wte", ...
  bool known;                        // whether the walk was given dims (the fields below)
  bool present;                      // the model has this tensor (else it is empty)
  std::array<std::size_t, 2> shape;  // its shape: (shape[0], shape[1]), or (shape[0],) at rank 1
  std::size_t rank;                  // 1 or 2
  ParamInit init;                    // how lm_init starts it
  bool decay;                        // AdamW decays it (matrices and embeddings)
  // What lm_init draws for a normal row, present or not: the default model's tensor, so that
  // every variant draws the same numbers in the same order (a part or an ablation then narrows
  // or drops it: w_k of KV heads keeps the first KV hs columns of a (C, C) draw). {0, 0}: none.
  std::array<std::size_t, 2> drawn;
};
// "wte", "h0.w_q", ...: the tensor's name, its file's name without ".npy".
std::string param_name(const ParamRow& row);

// Calls f(row, a's tensor, b's tensor) for every row of one block's part of the table: a and b
// are two blocks (attn::BlockWeights or attn::ref::BlockWeights<S>; the same one for a walk over
// one), `block` its index. With dims null, rows are not `known` (shapes unread): a walk over
// tensors that only pairs them up.
template <class A, class B, class Visit>
void visit_block_params(A& a, B& b, const ParamDims* dims, int block, Visit&& f) {
  const ParamDims none;
  const ParamDims& d = dims ? *dims : none;
  const bool k = dims != nullptr;
  using I = ParamInit;
  const std::size_t C = d.C, F = d.F, KV = d.kv_cols, Fd = d.F_drawn;
  const std::size_t Fs = d.F_gated_drawn;  // SwiGLU's matrices: drawn only when chosen
  f(ParamRow{block, "w_q", k, true, {C, C}, 2, I::normal, true, {C, C}}, a.attn.w_q, b.attn.w_q);
  f(ParamRow{block, "w_k", k, true, {C, KV}, 2, I::normal, true, {C, C}}, a.attn.w_k, b.attn.w_k);
  f(ParamRow{block, "w_v", k, true, {C, KV}, 2, I::normal, true, {C, C}}, a.attn.w_v, b.attn.w_v);
  f(ParamRow{block, "w_o", k, d.attn_proj, {C, C}, 2, I::normal, true, {C, C}}, a.attn.w_o,
    b.attn.w_o);
  const bool ab = d.attn_biases;
  f(ParamRow{block, "b_q", k, ab, {C, 0}, 1, I::zeros, false, {}}, a.attn.b_q, b.attn.b_q);
  f(ParamRow{block, "b_k", k, ab, {KV, 0}, 1, I::zeros, false, {}}, a.attn.b_k, b.attn.b_k);
  f(ParamRow{block, "b_v", k, ab, {KV, 0}, 1, I::zeros, false, {}}, a.attn.b_v, b.attn.b_v);
  f(ParamRow{block, "b_o", k, ab && d.attn_proj, {C, 0}, 1, I::zeros, false, {}}, a.attn.b_o,
    b.attn.b_o);
  f(ParamRow{block, "ln1_gamma", k, d.norms, {C, 0}, 1, I::ones, false, {}}, a.ln1_gamma,
    b.ln1_gamma);
  f(ParamRow{block, "ln1_beta", k, d.norm_betas, {C, 0}, 1, I::zeros, false, {}}, a.ln1_beta,
    b.ln1_beta);
  f(ParamRow{block, "ln2_gamma", k, d.norms, {C, 0}, 1, I::ones, false, {}}, a.ln2_gamma,
    b.ln2_gamma);
  f(ParamRow{block, "ln2_beta", k, d.norm_betas, {C, 0}, 1, I::zeros, false, {}}, a.ln2_beta,
    b.ln2_beta);
  f(ParamRow{block, "w1", k, d.mlp, {C, F}, 2, I::normal, true, {C, Fd}}, a.ffn.w1, b.ffn.w1);
  f(ParamRow{block, "b1", k, d.mlp_biases, {F, 0}, 1, I::zeros, false, {}}, a.ffn.b1, b.ffn.b1);
  f(ParamRow{block, "w2", k, d.mlp, {F, C}, 2, I::normal, true, {Fd, C}}, a.ffn.w2, b.ffn.w2);
  f(ParamRow{block, "b2", k, d.mlp_biases, {C, 0}, 1, I::zeros, false, {}}, a.ffn.b2, b.ffn.b2);
  f(ParamRow{block, "w_gate", k, d.swiglu, {C, F}, 2, I::normal, true, {C, Fs}}, a.swiglu.w_gate,
    b.swiglu.w_gate);
  f(ParamRow{block, "w_up", k, d.swiglu, {C, F}, 2, I::normal, true, {C, Fs}}, a.swiglu.w_up,
    b.swiglu.w_up);
  f(ParamRow{block, "w_down", k, d.swiglu, {F, C}, 2, I::normal, true, {Fs, C}}, a.swiglu.w_down,
    b.swiglu.w_down);
}

// The same for a whole model (attn::LmWeights or attn::ref::LmWeights<S>): wte, wpe, every
// block of a (b must have as many), ln_f, the untied head.
template <class A, class B, class Visit>
void visit_params(A& a, B& b, const ParamDims* dims, Visit&& f) {
  const ParamDims none;
  const ParamDims& d = dims ? *dims : none;
  const bool k = dims != nullptr;
  using I = ParamInit;
  const std::size_t V = d.V, C = d.C;
  const std::size_t head = d.untied_head ? V : 0;  // an untied head is drawn last, when present
  f(ParamRow{-1, "wte", k, true, {V, C}, 2, I::normal, true, {V, C}}, a.wte, b.wte);
  f(ParamRow{-1, "wpe", k, d.learned_positions, {d.T_max, C}, 2, I::normal, true, {d.T_max, C}},
    a.wpe, b.wpe);
  for (std::size_t l = 0; l < a.blocks.size(); ++l)
    visit_block_params(a.blocks[l], b.blocks[l], dims, static_cast<int>(l), f);
  f(ParamRow{-1, "ln_f_gamma", k, d.norms, {C, 0}, 1, I::ones, false, {}}, a.ln_f_gamma,
    b.ln_f_gamma);
  f(ParamRow{-1, "ln_f_beta", k, d.norm_betas, {C, 0}, 1, I::zeros, false, {}}, a.ln_f_beta,
    b.ln_f_beta);
  f(ParamRow{-1, "lm_head", k, d.untied_head, {C, V}, 2, I::normal, true, {C, head}}, a.lm_head,
    b.lm_head);
  f(ParamRow{-1, "lm_head_bias", k, d.head_bias, {V, 0}, 1, I::zeros, false, {}}, a.lm_head_bias,
    b.lm_head_bias);
}

// Whether two blocks hold tensors of the same shapes, tensor for tensor (gradients added into
// must be shaped like the weights).
template <class A, class B>
bool same_block_shapes(const A& a, const B& b) {
  bool same = true;
  visit_block_params(a, b, nullptr, -1, [&](const ParamRow&, const auto& x, const auto& y) {
    same = same && x.shape() == y.shape();
  });
  return same;
}
// The same for two models: as many blocks, every tensor of the same shape.
template <class A, class B>
bool same_param_shapes(const A& a, const B& b) {
  if (a.blocks.size() != b.blocks.size()) return false;
  bool same = true;
  visit_params(a, b, nullptr, [&](const ParamRow&, const auto& x, const auto& y) {
    same = same && x.shape() == y.shape();
  });
  return same;
}

// Whether a tensor has the shape its row gives (present), or is empty (absent).
template <class Tensor>
bool fits_row(const ParamRow& row, const Tensor& t) {
  if (!row.present) return t.size() == 0;
  if (t.shape().size() != row.rank) return false;
  for (std::size_t i = 0; i < row.rank; ++i)
    if (t.shape()[i] != row.shape[i]) return false;
  return true;
}

// What a row expects, as a message says it: "(64, 16)", "(64,)", or "empty (this model has no
// w_o)" for a tensor the model does not have.
std::string param_shape_text(const ParamRow& row);
// The one line for a tensor that does not fit its row (fits_row false), the shape checks' one
// wording: "h0.w_k is (64, 64), expected (64, 16)".
template <class Tensor>
std::string param_misfit(const ParamRow& row, const Tensor& t) {
  return param_name(row) + " is " + shape_str(t.shape()) + ", expected " + param_shape_text(row);
}

}  // namespace attn
