// chapters/12_fast_attention/show.cpp: the narration of chapter 12. Each function prints what
// one section of main.cpp computed, and checks the sentences its numbers could contradict
// (attn::claim).
#include "show.hpp"

#include <fmt/core.h>

#include <cstddef>
#include <string>
#include <vector>

#include "attn/term/narrate.hpp"
#include "long_context.hpp"

namespace ch12 {

using attn::num;

void show_header(std::uint64_t seed, bool mine) {
  fmt::print("Chapter 12: making attention fast and long\n");
  fmt::print("seed {}, functions: {}\n", seed,
             mine ? "yours (ex12::, --mine)"
                  : "the library's (attn::online_softmax_update, attn::attention_tile)");
}

// ---- 1. The online softmax, by hand.
void show_online_scores(const OnlineByHand& h) {
  attn::section(1, "The online softmax, by hand");
  fmt::print(
      "One query's 8 scores, arriving in two tiles of 4, and their values v (8, 2){}:\n",
      h.swapped ? "\n(drawn, then the two tiles swapped so that the second raises the max)" : "");
  fmt::print("  s = [");
  for (std::size_t j = 0; j < h.s.shape()[1]; ++j) {
    fmt::print("{}{}", j ? ", " : "", num(h.s(0, j), 3));
  }
  fmt::print("]\n");
}

void show_online_tile(const TileStep& step) {
  const attn::OnlineRow& row = step.row;
  fmt::print("after tile {}: m = {}, l = {}, acc = ({}, {})", step.number, num(row.m, 4),
             num(row.l, 4), num(row.acc(0), 4), num(row.acc(1), 4));
  if (step.number > 1) {
    const std::string a = num(step.rescale, 4);
    if (row.m > step.m_before) {
      fmt::print(
          "\n  the max grew from {} to {}: the old l and acc were rescaled by\n"
          "  a = exp({} - {}) = {} before this tile's terms were added\n",
          num(step.m_before, 4), num(row.m, 4), num(step.m_before, 4), num(row.m, 4), a);
    } else {
      fmt::print("  (the max stayed: a = exp(0) = {}, nothing rescaled)\n", a);
    }
    // The example is chosen so that tile 2 raises the max (main.cpp, draw_online_row).
    attn::claim(row.m > step.m_before && step.rescale < 1.0,
                "the worked online softmax rescales at its second tile");
  } else {
    fmt::print("\n");
  }
}

void show_online_result(const OnlineResult& r) {
  fmt::print("out = acc / l = (");
  for (std::size_t d = 0; d < r.out.size(); ++d)
    fmt::print("{}{}", d ? ", " : "", num(r.out[d], 4));
  fmt::print("); the two-pass softmax of all 8 scores gives the same to {}.\n",
             r.same ? "float rounding" : "NOT the rounding: " + num(r.diff, 6));
  attn::claim(r.same, "the online softmax equals the two-pass softmax to float rounding");
}

// ---- 2. The ladder.

namespace {

// "same bits", "max |diff| 3.1e-07", or with " TOO FAR" beyond the tolerance.
std::string check_text(const RungResult& r) {
  std::string text = r.same_bits ? "same bits" : fmt::format("max |diff| {:.1e}", r.max_diff);
  if (!r.ok) text += " TOO FAR";
  return text;
}

}  // namespace

void show_ladder(const Ladder& ladder, const Options& o) {
  const std::vector<RungResult>& rows = ladder.rows;
  const bool timing = ladder.timing;
  attn::section(2, "The ladder");
  fmt::print(
      "One causal head, q, k, v of shape (T, hs) = ({}, {}), tile {}. Each kernel sums in\n"
      "float and is checked against the reference attn::scaled_dot_product_attention, which\n"
      "sums in double: within the golden tolerance 1e-5 + 1e-4 |ref| (\"same bits\" if equal).\n"
      "FLOPs: the multiply-adds of the two products it performs (x2). Memory: what it holds\n"
      "beyond q, k, v and out (* per thread).\n\n",
      o.block_size, o.head_size, o.tile);
  fmt::print("{} {} {} {}", attn::align_left("kernel", 26), attn::align_left("check", 20),
             attn::align_right("MFLOP", 9), attn::align_right("memory", 11));
  if (timing) {
    fmt::print("  {} {} {}", attn::align_right("time", 11), attn::align_right("GFLOP/s", 8),
               attn::align_right("of peak", 8));
  }
  fmt::print("\n");
  bool all_ok = true;
  for (const RungResult& r : rows) {
    all_ok = all_ok && r.ok;
    fmt::print("{} {} {} {}", attn::align_left(r.name, 26), attn::align_left(check_text(r), 20),
               attn::align_right(r.measured && !r.flops_measured ? "-" : num(r.flops / 1e6, 1), 9),
               attn::align_right(bytes_text(r.floats * 4.0), 11) +
                   (r.threaded ? "*" : (timing ? " " : "")));
    if (timing && r.seconds > 0.0) {
      const double gflops = r.flops / r.seconds / 1e9;
      const double peak = r.threaded ? ladder.peak_n : ladder.peak1;
      fmt::print(" {} {} {}", attn::align_right(num(r.seconds * 1e3, 3) + " ms", 11),
                 attn::align_right(num(gflops, 1), 8),
                 attn::align_right(num(100.0 * gflops / peak, 1) + "%", 8));
    }
    fmt::print("\n");
  }
  fmt::print("{}\n", all_ok ? "Every kernel computes the reference's attention."
                            : "A kernel does NOT compute the reference's attention (TOO FAR).");
  attn::claim(all_ok, "every kernel of the ladder equals the reference within the tolerance");
  for (const RungResult& r : rows) {
    if (r.measured) {
      fmt::print(
          "{}: memory measured while it ran, the most it held at once beyond the rows it\n"
          "returned (every operator new counted).\n",
          r.name);
      if (r.flops_measured) {
        fmt::print(
            "Its MFLOP are measured too: it read {} (query tile, key tile) pairs, a causal kernel\n"
            "needs {} (a key tile counts as read when setting its keys and values to NaN\n"
            "changes your rows); each pair read counts its two products in full.\n",
            r.tiles_read, r.tile_pairs);
      } else {
        fmt::print(
            "Its MFLOP are not measured at {} tiles a side: the probe (each key tile set to NaN\n"
            "once per query tile) is run up to 16.\n",
            (o.block_size + o.tile - 1) / o.tile);
      }
    }
  }
  if (timing && ladder.threads == 1) {
    fmt::print(
        "GEMM peak ((1024, 1024) @ (1024, 1024)), measured after each row in this run, the\n"
        "best kept: {} GFLOP/s; every row ran on 1 thread.\n",
        num(ladder.peak1, 1));
    print_blas_core();
  } else if (timing) {
    fmt::print(
        "GEMM peak ((1024, 1024) @ (1024, 1024)), measured after each row in this run, the\n"
        "best kept: {} GFLOP/s on 1 thread, {} GFLOP/s on {} (rows 7 and the library kernel,\n"
        "which run on those threads, are measured against the second).\n",
        num(ladder.peak1, 1), num(ladder.peak_n, 1), ladder.threads);
    print_blas_core();
  }
  // Where the gains come from, in the numbers of this run.
  const double full = rows[2].flops, blocks = rows[3].flops;
  fmt::print("\nRung 4 performs {}% of rung 3's FLOPs: {}\n", num(100.0 * blocks / full, 1),
             blocks < full ? "its blocks skip the masked upper triangle."
                           : "with one block (T <= tile) there is nothing to skip.");
  attn::claim(blocks < full || o.block_size <= o.tile,
              "skipping causal blocks performs fewer FLOPs than the full product");
  const bool smaller = rows[4].floats < rows[3].floats;
  fmt::print("Rung 5 holds {} instead of {}: {}\n", bytes_text(rows[4].floats * 4.0),
             bytes_text(rows[3].floats * 4.0),
             smaller ? "no (T, T) matrix, and its tiles do not grow with T."
                     : "at a T this small the tiles outweigh the (T, T) matrix, but they do not "
                       "grow with T.");
}

void show_backward_mine(const BackwardCheck& b) {
  fmt::print(
      "\nyours (ex12.4): a head of the same shape, its backward from your tiles ({} pairs\n"
      "summed) against attn::fast::flash_attention_backward from the same out and lse:\n"
      "max |diff| {:.1e} over dq, dk, dv, {}.\n",
      b.pairs, b.max_diff,
      b.ok ? "within the golden tolerance" : "TOO FAR (beyond 1e-5 + 1e-4 |ref|)");
}

// ---- 3. Long contexts: the memory the reference would need.
void show_long_preview(const LongPreview& p) {
  attn::section(3, "Long contexts");
  fmt::print(
      "Multi-head attention with C = {}, H = {} at T = 16,384: the reference keeps the (B, H, T, "
      "T)\n"
      "weights, {}; the flash kernel keeps x, q|k|v and the output, {} in all.\n"
      "Run it: 12_fast_attention --long 16384 --timing (T up to {}).\n",
      kLongC, kLongH, bytes_text(p.reference_bytes), bytes_text(p.flash_bytes), kMaxLong);
}

}  // namespace ch12
