// chapters/05_multi_head/walkthrough.hpp: what chapter 05's sections compute (main.cpp) and
// how they are shown (show.cpp): one struct of results per section, one show_ function each.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "attn/core/xt.hpp"
#include "attn/model/block.hpp"

namespace ch05 {

using attn::Matrix;
using attn::MhaWeights;
using attn::Tensor;

inline constexpr float kGpt2Std = 0.02f;  // GPT-2's initialisation, attn::mha_init's default

struct Sizes {
  std::size_t B;  // batch (--batch-size)
  std::size_t T;  // time steps (--block-size)
  std::size_t C;  // channels, the model width (--n-embd)
  std::size_t H;  // heads (--n-heads)
  bool causal;
};

// 3. The loop over heads vs the batched forward, and the batched forward vs the fast kernel.
struct LoopVsBatched {
  double loop_diff = 0.0;  // max |mha_forward_per_head - mha_forward|
  double fast_diff = 0.0;  // max |attn::fast::mha_forward - mha_forward|
};

// 4. Separate vs fused QKV.
struct FusedQkv {
  Matrix w_qkv;              // (C, 3C): [w_q | w_k | w_v]
  double block_diff = 0.0;   // max |column block - w_q, w_k, w_v|
  double output_diff = 0.0;  // max |mha_forward_fused - mha_forward|
};

// 5. The heads' contrast: the largest |weight - uniform| over the visible keys.
struct InitContrast {
  float init_std;  // 1 / sqrt(C), this chapter's init
  double far;      // with init_std
  double near;     // with GPT-2's kGpt2Std
};

// 7. 1, 4 and 8 heads.
struct HeadCountRow {
  std::size_t H;
  bool divides;    // H divides C (otherwise the row is skipped)
  double differ;   // mean |w_h - w_h'| over pairs of heads, -1 for one head
  double flops;    // attn::mha_forward_flops
  double entropy;  // mean row entropy in nats
};
struct HeadCounts {
  double uniform_entropy;  // the mean row entropy of a plain average over the visible keys
  std::vector<HeadCountRow> rows;
};

// 1.19e-07, or "0 (bitwise identical)" (show.cpp).
std::string scientific_difference(double d);

// ---- show.cpp: one function per section, in teaching order (section 2, the shape trace, is
// the procedure itself and prints as it goes: main.cpp).
void show_why(const Sizes& n);                                                     // 1
void show_loop_vs_batched(const Sizes& n, const LoopVsBatched& d);                 // 3
void show_fused(const Sizes& n, const FusedQkv& f);                                // 4
void show_heads(const Sizes& n, const Tensor<4>& weights, const InitContrast& c);  // 5
void show_parameters(const MhaWeights& w, const Sizes& n);                         // 6
void show_head_counts(const Sizes& n, const HeadCounts& hc);                       // 7
// --svg: one heatmap per head, batch 0.
void save_figures(const std::filesystem::path& dir, const Tensor<4>& weights, const Sizes& n);

}  // namespace ch05
