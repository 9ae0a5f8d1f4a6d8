// params.cpp: the parameter table's sizes and names (attn/model/params.hpp).
#include "attn/model/params.hpp"

#include <fmt/format.h>

#include <vector>

namespace attn {

ParamDims param_dims(const ModelSpec& s) {
  ParamDims d;
  d.V = s.vocab_size;
  d.T_max = s.block_size;
  d.C = s.n_embd;
  d.F = s.ffn_hidden;
  d.kv_cols = s.n_kv_heads * s.head_size;
  d.learned_positions = s.positions == Positions::learned;
  d.attn_proj = s.ablations.attn_proj;
  d.attn_biases = s.attn_bias;
  d.norms = s.ablations.layer_norm;
  d.norm_betas = d.norms && s.normalization == Normalization::layernorm && s.bias;
  d.mlp = s.ablations.ffn && s.ffn == FfnKind::mlp;
  d.mlp_biases = d.mlp && s.bias;
  d.swiglu = s.ablations.ffn && s.ffn == FfnKind::swiglu;
  d.untied_head = !s.ablations.tied_head;
  d.head_bias = d.untied_head && s.bias;
  d.F_drawn = s.ffn == FfnKind::swiglu ? 4 * s.n_embd : s.ffn_hidden;
  d.F_gated_drawn = s.ffn == FfnKind::swiglu ? s.ffn_hidden : 0;
  return d;
}

std::size_t param_count(const ParamDims& d, std::size_t n_layers) {
  // The table's rows, counted without weights to walk: one empty block stands for each of L.
  struct Block {
    struct {
      int w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o;
    } attn;
    int ln1_gamma, ln1_beta, ln2_gamma, ln2_beta;
    struct {
      int w1, b1, w2, b2;
    } ffn;
    struct {
      int w_gate, w_up, w_down;
    } swiglu;
  };
  struct Model {
    int wte, wpe;
    std::vector<Block> blocks;
    int ln_f_gamma, ln_f_beta, lm_head, lm_head_bias;
  } m{};
  m.blocks.resize(1);
  std::size_t outside = 0, block = 0;
  visit_params(m, m, &d, [&](const ParamRow& row, const int&, const int&) {
    if (!row.present) return;
    const std::size_t n = row.rank == 2 ? row.shape[0] * row.shape[1] : row.shape[0];
    (row.block < 0 ? outside : block) += n;
  });
  return outside + n_layers * block;
}

std::string param_name(const ParamRow& row) {
  return row.block < 0 ? std::string(row.field) : fmt::format("h{}.{}", row.block, row.field);
}

std::string param_shape_text(const ParamRow& row) {
  if (!row.present) return fmt::format("empty (this model has no {})", row.field);
  return row.rank == 1 ? fmt::format("({},)", row.shape[0])
                       : fmt::format("({}, {})", row.shape[0], row.shape[1]);
}

}  // namespace attn
