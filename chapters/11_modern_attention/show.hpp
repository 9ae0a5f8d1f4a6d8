// chapters/11_modern_attention/show.hpp: what sections 1-5 of chapter 11 compute (main.cpp fills
// these structs, in the page's order) and the functions of show.cpp that print them. The table
// that follows them is table.cpp's (modern.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attn/model/model.hpp"
#include "attn/ops/swa.hpp"

namespace ch11 {

// An exercise's output against the library's on the same input (--mine).
struct MineCheck {
  double max_diff = 0.0;  // max |yours - library|
  double scale = 0.0;     // max |library|
};

// 1. RoPE: the score of a rotated query and key depends only on their offset.
struct RopeDemo {
  std::size_t hs = 0, gap = 3;
  double theta = 0.0;
  std::vector<double> freqs;                       // theta^(-2i/hs), i < hs/2
  std::vector<std::array<std::size_t, 2>> places;  // (m, n), m - n = gap
  std::vector<double> scores;                      // rope(q, m) . rope(k, n)
  double spread = 0.0;                             // max - min of scores
  double other_gap = 0.0;                          // rope(q, gap + 1) . rope(k, 0)
  double plain = 0.0;                              // q . k, no rotation
  double norm_change = 0.0;                        // | |rope(q, m)| - |q| |, largest
  double half_diff = 0.0;                          // rope(P x, half) against P rope(x)
  MineCheck half_vs_library;                       // the same rope(P x, half) against attn::rope
  std::vector<std::size_t> perm;
};

// 2. RMSNorm: LayerNorm without the mean.
struct NormDemo {
  std::vector<float> x, ln, rms, rms_centred;
  double mean = 0.0;
  double centred_diff = 0.0;  // rms_norm(x - mean) against layer_norm(x)
  double shifted_diff = 0.0;  // rms_norm(x) against layer_norm(x)
  double dx_along_x = 0.0;    // the backward's dx . x, for a random dy (eps 0)
  double dx_norm = 0.0;       // |dx|
};

// 4. Grouped-query attention: K/V heads shared by groups of query heads.
struct GqaDemo {
  std::size_t H = 0, KV = 0;
  std::vector<std::size_t> head_of;  // the K/V head each query head read, from repeat_kv
};

// 5. The sliding window: what it forgets, and the rolling cache that is exact for it.
struct WindowDemo {
  std::size_t W = 0, L = 0, n = 0;
  attn::WindowAttention<float> small;  // T 6 attention weights with the demo's window
  std::size_t small_W = 3;
  double small_diff = 0.0;   // against attn::windowed_attention
  std::size_t reach = 0;     // the last position whose logits token 0 changes
  double cache_diff = 0.0;   // rolling cache against the full forward, every position
  std::size_t capacity = 0;  // positions the rolling cache holds per layer
};

// ---- show.cpp: one function per section, in teaching order.
void show_header(std::uint64_t seed, const std::string& corpus_origin, bool mine);
void show_rope(const RopeDemo& r);                              // 1
void show_norm(const NormDemo& d, const attn::ModelSpec& cpu);  // 2
void show_swiglu(const attn::ModelSpec& cpu);                   // 3
// With --mine: the learner's ex11.9 (section 1) and ex11.10 (section 3) against the library.
void show_rope_half_mine(const RopeDemo& r);
void show_swiglu_mine(const MineCheck& c);
void show_gqa(const GqaDemo& d, const attn::ModelSpec& cpu, std::size_t W);  // 4
void show_window(const WindowDemo& d);                                       // 5
void show_next();  // after the table: what chapter 12 does

}  // namespace ch11
