// Chapter 02, the mathematical trick in attention: the mean of the past computed three ways
// (a loop, a lower-triangular matmul, a softmax of masked zeros) that agree to float precision.
// The math lives in common/src/ops/averaging.cpp; each section computes here and is printed by
// its show_ function in show.cpp. Page: docs/02-averaging.md
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "attn/ops/averaging.hpp"
#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/ops/mask.hpp"
#include "attn/ops/matmul.hpp"
#include "attn/term/narrate.hpp"
#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"
#include "exercises.hpp"
#include "show.hpp"

namespace {

using namespace ch02;  // the sections' results and their show functions (show.hpp)

// The functions the walkthrough runs: the reference from attn::, or the learner's under --mine.
constexpr Averaging kReference{attn::running_mean_loop, attn::averaging_weights_tril,
                               attn::averaging_weights_softmax};
constexpr Averaging kMine{ex02::running_mean_loop, ex02::averaging_weights_tril,
                          ex02::averaging_weights_softmax};

constexpr std::size_t kMaxT = 2048;  // the cost table at T = C = max: seconds, not minutes
constexpr std::size_t kMaxChannels = 256;

// ---- The lesson: the mean of the past, three ways (sections 1 to 4).
ThreeWays three_ways(const Averaging& ops, std::uint64_t seed, std::size_t T, std::size_t C) {
  ThreeWays w;
  attn::Rng rng(seed);
  w.x = attn::randn(rng, T, C);  // (T, C)
  // Way 1: for each t, add rows 0..t of x and divide by t + 1.
  w.xbar = ops.running_mean_loop(w.x);  // (T, C) -> (T, C)
  // Way 2: the weights of step t in row t of a (T, T) matrix; all the steps are one product.
  w.ones_tril = xt::tril(xt::ones<float>({T, T}));  // (T, T)
  w.w_tril = ops.weights_tril(T);                   // (T, T)
  w.xbar2 = attn::matmul(w.w_tril, w.x);            // (T, T) @ (T, C) -> (T, C)
  // Way 3: the same weights as the softmax of masked zeros.
  w.scores = attn::causal_mask_additive(T);  // (T, T): zeros, -inf above
  w.w_softmax = ops.weights_softmax(T);      // (T, T)
  w.xbar3 = attn::matmul(w.w_softmax, w.x);  // (T, T) @ (T, C) -> (T, C)
  return w;
}

// 5. The three ways agree, to float rounding.
Agreement compare(const ThreeWays& w) {
  Agreement a;
  a.loop_vs_matmul = attn::max_abs_diff(w.xbar, w.xbar2);
  a.loop_vs_softmax = attn::max_abs_diff(w.xbar, w.xbar3);
  a.weights = attn::max_abs_diff(w.w_tril, w.w_softmax);
  // How many float steps the largest difference is, relative to the size of the means.
  const float scale = std::max(xt::amax(xt::abs(w.xbar))(), std::numeric_limits<float>::min());
  a.epsilons = static_cast<float>(std::max(a.loop_vs_matmul, a.loop_vs_softmax)) /
               (scale * std::numeric_limits<float>::epsilon());
  return a;
}

// 6. What each way costs as T grows: counted from the formulas (and measured with --timing).
Cost cost_of(std::uint64_t T, std::uint64_t C) {
  return Cost{C * T * (T + 1) / 2, T * C, T * T * C, C * T * (T - 1) / 2, T * T, T * T * C};
}

// The sizes of the cost table: 8, 64, 256, 1024 up to --max-t, then --max-t itself.
std::vector<std::size_t> table_sizes(std::size_t max_t) {
  std::vector<std::size_t> sizes;
  for (std::size_t T : {8, 64, 256, 1024}) {
    if (T < max_t) sizes.push_back(T);
  }
  sizes.push_back(max_t);
  return sizes;
}

CostTable count_costs(std::size_t C, std::size_t max_t) {
  CostTable table;
  table.C = C;
  table.sizes = table_sizes(max_t);
  for (std::size_t T : table.sizes) table.costs.push_back(cost_of(T, C));
  const Cost& big = table.costs.back();
  table.matmul_vs_loop =
      static_cast<double>(big.matmul_madds) / static_cast<double>(big.loop_adds + big.loop_divides);
  table.zero_share = static_cast<double>(big.matmul_zeros) / static_cast<double>(big.matmul_madds);
  return table;
}

void walkthrough(const attn::CommonOptions& opts, std::size_t T, std::size_t C, std::size_t max_t) {
  if (max_t < T) {
    throw attn::UsageError(
        fmt::format("--max-t ({}) must be at least --block-size ({})", max_t, T));
  }
  const Averaging& ops = opts.mine ? kMine : kReference;
  // The tokens here are random vectors, so no text is needed; a bad --data is still an error.
  const std::string corpus_origin = opts.data ? attn::load_corpus(opts.data).origin : "";
  show_header(opts.seed, T, C, opts.mine, corpus_origin);

  const ThreeWays w = three_ways(ops, opts.seed, T, C);
  show_why(w, opts.seed);                         // 1
  show_loop(w, opts.mine);                        // 2
  show_matmul(w);                                 // 3
  show_softmax(w);                                // 4
  show_agreement(w, compare(w), opts.mine);       // 5
  const CostTable costs = count_costs(C, max_t);  // 6
  show_costs(costs);
  if (opts.timing) show_timing(ops, opts.seed, costs);
  show_picture(w.w_softmax, opts.svg_dir);  // 7
}

}  // namespace

int main(int argc, char** argv) {
  attn::Cli cli("02_averaging",
                "Chapter 02, the mathematical trick in attention: the mean of the past three\n"
                "ways (a loop, a lower-triangular matmul, a softmax of masked zeros).");
  std::size_t T = 8;
  std::size_t C = 2;
  std::size_t max_t = 1024;
  cli.add_size("--block-size", T, "sequence length T of the example (default 8)", 1, kMaxT);
  cli.add_size("--n-embd", C, "channels C of each token vector (default 2)", 1, kMaxChannels);
  cli.add_size("--max-t", max_t, "largest T in the cost table (default 1024)", 1, kMaxT);
  cli.add_alias("time-steps", "block-size");  // the names before the lecture's vocabulary
  cli.add_alias("channels", "n-embd");
  return cli.run(argc, argv,
                 [&](const attn::CommonOptions& opts) { walkthrough(opts, T, C, max_t); });
}
