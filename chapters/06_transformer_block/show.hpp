// chapters/06_transformer_block/show.hpp: what each section of chapter 06 computes (the structs
// that main.cpp fills, in the page's order) and the functions of show.cpp that print them.
#pragma once

#include <cmath>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "attn/model/block.hpp"
#include "attn/ops/ffn.hpp"

namespace ch06 {

using attn::Activation;
using attn::BlockWeights;
using attn::Matrix;
using attn::NormPlacement;
using attn::Tensor;

using SvgDir = std::optional<std::filesystem::path>;

constexpr std::size_t kPositionRows = 32;  // T_max of the sinusoidal table that is drawn

// The sizes and choices of this run, from the command line.
struct Setup {
  std::size_t B = 1;    // batch
  std::size_t T = 10;   // time steps
  std::size_t C = 64;   // channels (model width)
  std::size_t H = 4;    // heads
  std::size_t F = 256;  // FFN hidden width, ffn_mult * C
  std::size_t passes = 10;
  Activation activation = Activation::gelu;
  NormPlacement norm = NormPlacement::pre;
  attn::BlockConfig block() const;  // causal, with the run's heads, activation and norm
};

// Mean and standard deviation (divide by N) of all the numbers of a tensor (or a token), in
// double.
struct Stats {
  double mean = 0.0;
  double std = 0.0;
};
template <class Numbers>
Stats stats_of(const Numbers& x) {
  Stats s;
  if (x.size() == 0) return s;
  double sum = 0.0;
  for (const float v : x) sum += static_cast<double>(v);
  s.mean = sum / static_cast<double>(x.size());
  double sq = 0.0;
  for (const float v : x)
    sq += (static_cast<double>(v) - s.mean) * (static_cast<double>(v) - s.mean);
  s.std = std::sqrt(sq / static_cast<double>(x.size()));
  return s;
}

// 1. LayerNorm on one token, (1, 1, C) each.
struct LayerNormDemo {
  Tensor<3> token;   // 3 * randn + 2
  Tensor<3> normed;  // gamma = 1, beta = 0
  Tensor<3> scaled;  // gamma = 2, beta = 0.5
};
void show_layer_norm(const Setup& s, const LayerNormDemo& r);

// 2. The FFN and its activations.
struct FfnDemo {
  std::vector<float> xs;                      // nine points of the table
  Tensor<3> relu, gelu, gelu_tanh;            // (1, 1, 9)
  std::vector<float> grid;                    // [-6, 6] in steps of 0.001
  Tensor<3> grid_relu, grid_gelu, grid_tanh;  // (1, 1, 12001)
  double worst = 0.0;                         // max |gelu - gelu_tanh| over the grid ...
  float worst_at = 0.0f;                      // ... and where
  Tensor<3> x, hidden, out;  // the block's FFN: (B, T, C) -> (B, T, F) -> (B, T, C)
  std::vector<std::size_t> w1_shape, w2_shape;
};
void show_ffn(const Setup& s, const FfnDemo& r, const SvgDir& svg_dir);

// 3. Residual connections: the same input through a pre-norm and a post-norm block.
struct Residuals {
  Tensor<3> x, pre, post;  // (B, T, C)
};
void show_residuals(const Setup& s, const Residuals& r);

// 4. Positional encodings.
struct Positions {
  double shuffled = 0.0;    // encoder block: block(reversed x) vs reversed(block(x))
  bool swap_shown = false;  // T >= 3: tokens 0 and 1 swapped, causal blocks
  double one = 0.0;         // one block, positions 2..T-1
  double last_one = 0.0;    // one block, the last position
  double last_two = 0.0;    // two blocks, the last position
  Matrix pe;                // (max(32, T), C) sinusoidal table
  double with_pe = 0.0;     // the encoder test again on x + PE
};
void show_positions(const Setup& s, const Positions& r);

// 5. One block, step by step: every step's name, shape and statistics.
struct TraceRow {
  std::string step;
  std::vector<std::size_t> shape;
  Stats stats;
};
struct Trace {
  std::vector<TraceRow> rows;              // the input first
  std::vector<std::size_t> weights_shape;  // (B, H, T, T)
};
void show_trace(const Setup& s, const Trace& r);

// 6. Remove LayerNorm: the block's output fed back in, with and without LayerNorm.
struct NoLayerNorm {
  float weight_std = 0.0f;                      // 1 / sqrt(C)
  std::vector<Stats> with, without;             // per pass, pass 0 is the input
  std::vector<double> peak_with, peak_without;  // per pass from 1: mean largest attention weight
  std::size_t overflow_pass = 0;  // the first pass without LayerNorm that is not finite
};
void show_no_layer_norm(const Setup& s, const NoLayerNorm& r, const SvgDir& svg_dir);

// 7. Causality: the tokens at positions >= t0 replaced.
struct Causality {
  std::size_t t0 = 0;
  std::vector<double> change;  // (T,): max |change| of the output at each position
};
void show_causality(const Setup& s, const Causality& r);

// 8. Parameters and FLOPs.
struct CostRow {
  std::size_t T = 0;
  double flops = 0.0, quadratic = 0.0;  // block_forward_flops, and its 4 B H T^2 hs term
};
struct Cost {
  std::size_t attn_params = 0, ffn_params = 0, ln_params = 0;  // by the formulas
  std::size_t formula = 0;                                     // block_param_count(C, F)
  std::size_t counted = 0;                            // floats held by block_init's tensors
  double total = 0.0, attention = 0.0, mixing = 0.0;  // FLOPs of one forward
  std::vector<CostRow> by_length;
};
void show_cost(const Setup& s, const Cost& r);

// The pictures of --svg that belong to no section, and --timing.
void write_block_svgs(const Setup& s, const std::filesystem::path& dir);
void show_timing(const Setup& s, const Tensor<3>& x, const BlockWeights& w);

}  // namespace ch06
