// chapters/08_backprop/show.hpp: what each section of chapter 08 computes (the structs that
// main.cpp fills, in the page's order) and the functions of show.cpp that print them.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/model/block.hpp"
#include "attn/ops/attention.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/linear.hpp"
#include "attn/ops/loss.hpp"
#include "attn/train/gradcheck.hpp"
#include "exercises.hpp"

namespace ch08 {

using attn::Matrix;
using attn::Tensor;
using attn::Vector;

// A tensor's numbers as a span (float or double), for the gradient checks and the narration.
template <class E>
std::span<typename E::value_type> values_of(E& t) {
  return {t.data(), t.size()};
}
template <class E>
std::span<const typename E::value_type> values_of(const E& t) {
  return {t.data(), t.size()};
}

// Sizes of the op sections and of the gradient check: small, odd where it matters.
constexpr std::size_t kB = 2, kT = 5, kC = 8, kH = 2, kF = 32;

// ---- 1. The chain rule on L = (a * b + c) * a.
struct ChainRule {
  double a = 2.0, b = -3.0, c = 10.0;
  double u = 0, v = 0, L = 0;  // the forward, one op per line
  double dv = 0, da_from_L = 0, du = 0, dc = 0, da_from_u = 0, db = 0, da = 0;  // the backward
  double h = 1e-4;  // central differences, in double
  double numeric_da = 0, numeric_db = 0, numeric_dc = 0;
};
void show_chain_rule(const ChainRule& r);

// ---- 2. The backward of every op, with its shapes.
void show_op_sizes();

struct SoftmaxBackward {
  Matrix y, dy;      // (1, S): one row and its upstream gradient
  Matrix jt_dy;      // (1, S): J^T dy with the full (S, S) Jacobian
  Matrix dx;         // (1, S): y * (dy - dy . y), the kernel's O(S) form
  Matrix causal_dx;  // (T, T): the backward of a causal softmax
};
void show_softmax(const SoftmaxBackward& r);

struct CrossEntropyBackward {
  Matrix logits;               // (N, V)
  attn::LossGrad lg;           // the loss and dlogits (N, V)
  double worst_row_sum = 0.0;  // max over rows of |sum of dlogits|
  double worst_entry = 0.0;    // max |dlogits - (softmax - onehot) / N|, the softmax in double
};
void show_cross_entropy(const CrossEntropyBackward& r);

struct LinearBackward {
  Tensor<3> x, dy;  // (B, T, C), (B, T, F)
  Matrix w;         // (C, F)
  attn::LinearGrads g;
};
void show_linear(const LinearBackward& r);

struct ActivationBackward {
  std::vector<float> x;                       // six points
  std::vector<attn::Activation> activations;  // relu, gelu, gelu_tanh
  std::vector<Tensor<1>> derivative;          // act'(x) at the six points, per activation
};
void show_activations(const ActivationBackward& r);

struct LayerNormTerms {
  double eps = 1e-5;  // LayerNorm's epsilon, as the blocks use it
  double rstd = 0.0;
  double mean_gx = 0.0;  // mean(g xhat): dx . xhat = C rstd mean(g xhat) eps rstd^2
  std::vector<float> xhat, direct, through_mean, through_var, sum;  // (C,) each
  attn::LayerNormGrads<3> lg;  // the kernel's dx (1, 1, C), dgamma, dbeta
};
void show_layer_norm(const LayerNormTerms& r);

struct AttentionBackward {
  attn::AttentionResult f;    // out (B, H, T, hs), weights (B, H, T, T)
  attn::AttentionGrads g;     // dq, dk, dv (B, H, T, hs)
  ex08::AttentionGrads one;   // head (0, 0) alone, (T, hs) each
  double one_vs_batch = 0.0;  // max |difference| between the two
};
void show_attention(const AttentionBackward& r);

struct ModelGradients {
  Tensor<3> dout, dx;        // the block's (B, T, C)
  attn::BlockWeights grads;  // block_backward's gradients, shaped like the weights
  std::size_t V = 0, C = 0, N = 0;
  double loss = 0.0;
  double out_part_norm = 0.0, embed_part_norm = 0.0, dwte_norm = 0.0;  // the two parts of dwte
  std::size_t rows_with_out = 0, rows_with_embed = 0, distinct_inputs = 0;
};
void show_model_gradients(const ModelGradients& r);

// ---- 3. The gradient check of every op.
struct CheckRow {
  std::string op;
  attn::GradCheckResult r;
};
// Central differences against forward differences, on f(x) = sum_i exp(x_i / 2) x_(i+1)^2.
struct CentralDifferenceDemo {
  std::size_t n = 0;         // coordinates
  double h = 0.0;            // the step
  double central_err = 0.0;  // max |central - exact|
  double forward_err = 0.0;  // max |forward difference - exact|
};

struct GradientChecks {
  std::vector<CheckRow> correct;  // every backward of the course, in float64
  std::vector<CheckRow> wrong;    // wrong gradients on purpose, one of them only 0.1% off
  // The model's check through a float32 forward (attn::grad_check): why float64.
  attn::GradCheckResult float_right, float_wrong;  // its float gradients, and them x 1.001
  double float_rounding = 0.0;   // |L in float - L in double| at the checked point
  double float_h = 0.0;          // the float check's step
  std::size_t grad_count = 0;    // the model's gradient elements
  std::size_t grad_drowned = 0;  // how many are so small that rounding / 2h exceeds 0.1%
  double float_model = 0.0;      // the model's float gradients vs float64: the largest
                                 // difference relative to each tensor's largest gradient
};
// The learner's float gradients (--mine) against the double forward: near-zero elements are
// judged against 1% of the tensor's largest gradient.
attn::GradCheckOptions64 float_options();
void show_gradient_checks(const GradientChecks& r, const CentralDifferenceDemo& cd, bool mine);

// ---- 4. Depth: how much gradient reaches the bottom of a stack of blocks?
struct Variant {
  const char* name;
  bool residual;
  bool layer_norm;
};
constexpr Variant kVariants[] = {{"residual + LayerNorm", true, true},
                                 {"residual only", true, false},
                                 {"LayerNorm only", false, true},
                                 {"neither", false, false}};

struct DepthSetup {
  std::size_t max_depth = 32;
  std::size_t T = 16;
  std::size_t C = 32;
  std::size_t H = 4;
  float std = 0.0f;  // weight std; 0: 1 / sqrt(fan-in), i.e. 1 / sqrt(C), and 1 / sqrt(4C) for w2
  float weight_std() const { return std > 0.0f ? std : 1.0f / std::sqrt(static_cast<float>(C)); }
  float w2_std() const {  // w2 (F, C) has F = 4C inputs
    return std > 0.0f ? std : 1.0f / std::sqrt(static_cast<float>(4 * C));
  }
};

struct DepthResult {
  std::vector<std::size_t> depths;
  std::vector<std::vector<double>> norm;  // [variant][depth index]: |dL/dx| at the stack's input
  std::vector<std::vector<double>> top;   // [variant][depth index]: rms of the stack's output
  // The first entry of the table checked by finite differences: one block with residual and
  // LayerNorm, L(x + h u) - L(x - h u) / 2h along u = dL/dx / |dL/dx| is |dL/dx|.
  double one_block_numeric = 0.0;
};
void show_depth(const DepthSetup& s, const DepthResult& r);
void write_depth_svg(const std::filesystem::path& path, const DepthSetup& s, const DepthResult& r,
                     std::uint64_t seed);

// ---- 5. What the backward must keep.
struct Shapes {
  std::size_t B, T, C, H, L;
  const char* name;
};
struct KeptTensor {
  std::string name;
  std::vector<std::size_t> shape;
  std::size_t floats = 0;
};
struct StackMemory {
  Shapes z;
  std::size_t per_block = 0;  // activation floats of one block
  std::size_t weights = 0;    // weight floats of one block
};
struct BackwardMemory {
  Shapes model;
  std::size_t F = 0;
  std::vector<KeptTensor> kept;   // the BlockCache's tensors, in order
  std::size_t held = 0;           // activation_floats(cache)
  std::size_t formula = 0;        // block_activation_floats(B, T, C, F, H)
  double weights_share = 0.0;     // B H T^2 / formula
  double weights_share_2T = 0.0;  // the same block at 2T
  std::vector<std::size_t> out_shape;
  std::vector<StackMemory> stacks;  // by formula, for whole stacks
};
void show_memory(const BackwardMemory& r);

// --timing: one block's forward and backward at chapter 09's size.
void show_timing(attn::Rng& rng);

}  // namespace ch08
