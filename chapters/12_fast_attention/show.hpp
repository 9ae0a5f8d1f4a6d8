// chapters/12_fast_attention/show.hpp: what chapter 12's sections compute (main.cpp fills these
// structs, in the page's order) and the functions of show.cpp that print them. The --long and
// --sweep runs compute and print in long_context.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/xt.hpp"
#include "attn/ops/online_softmax.hpp"
#include "long_context.hpp"

namespace ch12 {

using attn::Matrix;

// 1. The online softmax by hand: one query's 8 scores, arriving in two tiles of 4.
struct OnlineByHand {
  Matrix s;  // (1, 8): the query's scores
  Matrix v;  // (8, 2): their values
  // The tiles in the order that makes the second raise the running max (so it rescales): drawn,
  // then swapped when the first held the larger max.
  bool swapped = false;
};

// The running state of the row after one tile.
struct TileStep {
  std::size_t number = 0;  // 1 for the first tile
  attn::OnlineRow row;     // m, l and acc (2) after this tile
  float m_before = 0.0f;   // the running max before this tile
  double rescale = 1.0;    // a = exp(m_before - m): what the old l and acc were multiplied by
};

// The row's result, acc / l, against the two-pass softmax of all 8 scores in double.
struct OnlineResult {
  std::vector<double> out;  // (2): acc / l
  double diff = 0.0;        // max |acc / l - two-pass|
  bool same = false;        // diff below float rounding (1e-5)
};

// 2. The ladder: one row of the table per kernel.
struct RungResult {
  std::string name;        // "1. naive loops"
  bool same_bits = false;  // equal to the reference bit for bit
  double max_diff = 0.0;   // max |out - reference|
  bool ok = false;         // same bits, or within the golden tolerance 1e-5 + 1e-4 |ref|
  double flops = 0.0, floats = 0.0, seconds = 0.0;
  bool threaded = false;  // memory per thread, timed against the threaded GEMM peak
  bool measured = false;  // memory measured while it ran (--mine), not worked out from T and tile
  // --mine: FLOPs from the key tiles it was seen to read (main.cpp, probe_key_tiles), when
  // flops_measured; tile_pairs is the number of (query tile, key tile) pairs on or below the
  // diagonal, the ones a causal kernel must read.
  bool flops_measured = false;
  std::size_t tiles_read = 0, tile_pairs = 0;
};

// --mine: the learner's ex12.4 over every pair of tiles of a head of the ladder's shape, summed,
// against attn::fast::flash_attention_backward.
struct BackwardCheck {
  std::size_t pairs = 0;  // tile pairs the learner's function was called on
  double max_diff = 0.0;  // max |yours - library| over dq, dk, dv
  bool ok = false;        // within the golden tolerance 1e-5 + 1e-4 |ref|
};

struct Ladder {
  std::vector<RungResult> rows;      // rungs 1-7, the library's flash kernel, with --mine yours
  bool timing = false;               // --timing: the rows' seconds and the GEMM peaks were measured
  double peak1 = 0.0, peak_n = 0.0;  // GEMM GFLOP/s on 1 thread and on `threads`
  std::size_t threads = 0;
};

// 3. Long contexts: the memory of one multi-head forward at T = 16,384.
struct LongPreview {
  double reference_bytes = 0.0;  // the reference's (B, H, T, T) weights
  double flash_bytes = 0.0;      // the flash kernel's x, q|k|v and output
};

// ---- show.cpp: one function per section, in teaching order.
void show_header(std::uint64_t seed, bool mine);
void show_online_scores(const OnlineByHand& h);            // 1: the scores
void show_online_tile(const TileStep& step);               // 1: after each tile
void show_online_result(const OnlineResult& r);            // 1: against two passes
void show_ladder(const Ladder& ladder, const Options& o);  // 2
void show_backward_mine(const BackwardCheck& b);           // 2, --mine: ex12.4
void show_long_preview(const LongPreview& p);              // 3

}  // namespace ch12
