// chapters/05_multi_head/walkthrough.hpp: what chapter 05's sections compute (main.cpp) and
// how they are shown (show.cpp): one struct of results per section, one show_ function each.
#pragma once

#include <cstddef>
#include <cstdint>
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

// 2. What the shapes of the trace do not show (the trace itself prints as it goes).
// (B, H, T, T) weights: the largest |row sum - 1|, whether every weight is in [0, 1], and the
// masked (query, key) pairs.
struct WeightFacts {
  double max_row_error = 0.0;
  bool in_unit_interval = true;
  std::size_t future = 0;       // masked (query, key) pairs
  std::size_t future_zero = 0;  // of which exactly 0
};
struct TraceFacts {
  std::size_t head = 0;            // the head shown: 1 (0 when H = 1)
  std::vector<float> from_q;       // q[0, 0, head * hs : head * hs + 4] (fewer when hs < 4)
  std::vector<float> from_head;    // q_heads[0, head, 0, 0:4]: the same numbers
  double score_std = 0.0;          // standard deviation of the visible scores
  std::size_t visible_scores = 0;  // how many scores a query may use, over all (b, h, t)
  WeightFacts weights;             // of the (B, H, T, T) weights
  double by_hand_diff = 0.0;       // max |(masked_)softmax(scores) - weights|
  bool y_finite = true;            // y has no NaN, no inf
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

// --timing: one forward, in microseconds per call.
struct Timing {
  double looped = 0.0;   // attn::mha_forward_per_head
  double batched = 0.0;  // the chapter's mha_forward (yours with --mine)
  double fused = 0.0;    // attn::mha_forward_fused
};

// 1.19e-07, or "0 (bitwise identical)" (show.cpp).
std::string scientific_difference(double d);

// ---- show.cpp: one function per section, in teaching order.
// The title lines: the sizes, the seed, whose functions run, the initialisation.
void show_header(const Sizes& n, std::uint64_t seed, bool mine, const std::string& corpus_origin,
                 float init_std);
void show_why(const Sizes& n);  // 1
// 2. The shape trace is the procedure itself and prints as it goes: its heading and the table's
// header, one row per step (main.cpp checks the shape after printing it), what the shapes do not
// show, and the steps against one mha_forward call (max |difference|).
void show_trace_start(const Sizes& n);
void show_trace_step(const std::string& step, const std::string& letters, const std::string& shape);
void show_trace_facts(const Sizes& n, const TraceFacts& f);
void show_one_call(double diff);
void show_loop_vs_batched(const Sizes& n, const LoopVsBatched& d);                 // 3
void show_fused(const Sizes& n, const FusedQkv& f);                                // 4
void show_heads(const Sizes& n, const Tensor<4>& weights, const InitContrast& c);  // 5
void show_parameters(const MhaWeights& w, const Sizes& n);                         // 6
void show_head_counts(const Sizes& n, const HeadCounts& hc);                       // 7
// --svg: one heatmap per head, batch 0.
void save_figures(const std::filesystem::path& dir, const Tensor<4>& weights, const Sizes& n);
void show_timing(const Sizes& n, const Timing& t);

}  // namespace ch05
