// params.cpp: the parameter table's sizes and names (attn/model/params.hpp).
#include "attn/model/params.hpp"

#include <fmt/format.h>

namespace attn {

ParamDims param_dims(const LmConfig& config) {
  check_parts(config, "attn::param_dims");
  ParamDims d;
  d.V = config.vocab_size;
  d.T_max = config.block_size;
  d.C = config.n_embd;
  d.F = lm_ffn_width(config);
  d.kv_cols = config.n_heads == 0 ? 0 : lm_kv_heads(config) * (config.n_embd / config.n_heads);
  d.learned_positions = config.positions == Positions::learned;
  d.attn_proj = config.attn_proj;
  d.norms = config.use_layer_norm;
  d.norm_betas = d.norms && config.normalization == Normalization::layernorm && config.bias;
  d.mlp = config.use_ffn && config.ffn == FfnKind::mlp;
  d.mlp_biases = d.mlp && config.bias;
  d.swiglu = config.use_ffn && config.ffn == FfnKind::swiglu;
  d.untied_head = !config.tied_head;
  d.head_bias = d.untied_head && config.bias;
  return d;
}

std::string param_name(const ParamRow& row) {
  return row.block < 0 ? std::string(row.field) : fmt::format("h{}.{}", row.block, row.field);
}

}  // namespace attn
